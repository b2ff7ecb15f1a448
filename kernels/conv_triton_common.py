"""Index and pointer arithmetic that the Triton convolution kernels share, as `@triton.jit`
helpers: which output tile a program computes, the strides with NHWC's and NDHWC's unit
channel strides, which part of a split reduction it runs, and which source position a filter
tap reads in the direct (depthwise and grouped) kernels; and the implicit GEMM families' tile
loads, their dot and the taps of a backward-data stride phase (the 2-D, 3-D and packed
kernels').

Tuple arguments: a kernel takes a group of run-time arguments that kernels share (sizes,
geometry, strides) as one tuple parameter, e.g. `conv2d_fwd(x_ptr, w_ptr, y_ptr, ws_ptr, dims,
conv, strides, BLOCK_M: tl.constexpr, ...)`, and unpacks it in a line (`N, C, ... = dims`) or
through a helper here (`channel_strides(strides, CHANNELS_LAST)`). Triton passes the members
as separate parameters in order, so the launch ABI is the flat list of the family's spec table
(`CONV_ARGS`), which launches, kdb options and assumptions keep naming flat. The kernel file
says which flat names each tuple holds in a module-level `TUPLE_ARGS` dict (`conv_triton.py`:
the spec's `CONV_TUPLES`, from which `CONV_ARGS` is built; `conv_triton_3d.py`: its spec's
`TUPLES`, from which `ARGS` is built); `compiler.triton.source_arguments`
turns the flat names into tuple signatures, constexpr and divisibility paths when it compiles,
and `compiler.triton.launch_arguments` groups flat values for a launch through Triton itself.
Constexprs stay separate parameters: a plain assignment in a kernel turns a constexpr into a
run-time value, so a tuple of them cannot be unpacked.

Triton inlines every helper into the kernel that calls it, so a kernel compiles to the same
code as with the lines written out in its body (bench/triton_ptx_compare.py checks the PTX).
The kernel files import this module relatively; `kernel_sources.source_digest` covers the
modules a kernel file imports, so a change here recompiles the kernels that use it.
Importing this module needs Triton but no GPU.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["tile_ids", "tile_offsets", "channel_strides", "split_range", "part_range",
           "tap_source", "load_tile", "mma", "first_taps", "phase_tap", "carry",
           "within"]


@triton.jit
def tile_ids(pid, num_m, num_n, GROUP_M: tl.constexpr):
    """Grouped tile order: GROUP_M row tiles share their column tiles while in L2."""
    in_group = GROUP_M * num_n
    group = pid // in_group
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    return pid_m, pid_n


@triton.jit
def tile_offsets(rows, cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 GROUP_M: tl.constexpr):
    """The row and column indices of this program's BLOCK_M x BLOCK_N tile of a rows x cols
    GEMM output, program axis 0 walking the tiles in grouped order (tile_ids)."""
    pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(rows, BLOCK_M), tl.cdiv(cols, BLOCK_N),
                            GROUP_M)
    return pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N)


@triton.jit
def channel_strides(strides, CHANNELS_LAST: tl.constexpr):
    """The strides of x, w and y from a `strides` tuple argument of any rank: three equal
    parts, x's (n, c, spatial...), w's (k, c, spatial...) and y's (n, k, spatial...), twelve
    in 2-D, fifteen in 3-D. CHANNELS_LAST 1, channels-last layouts (NHWC, NDHWC): the channel
    strides are 1, known to the compiler, so that loads along channels are vectorised;
    CHANNELS_LAST 2, packed channel-planar layouts (NCHW, NCDHW): the innermost spatial
    strides are 1, so that accesses along a row of positions are."""
    rank: tl.constexpr = len(strides) // 3
    if CHANNELS_LAST == 1:
        strides = strides[:1] + (1,) + strides[2:rank + 1] + (1,) + \
            strides[rank + 2:2 * rank + 1] + (1,) + strides[2 * rank + 2:]
    elif CHANNELS_LAST == 2:
        strides = strides[:rank - 1] + (1,) + strides[rank:2 * rank - 1] + (1,) + \
            strides[2 * rank:3 * rank - 1] + (1,)
    return strides


@triton.jit
def carry(inner, outer, inners):
    """(inner, outer) with `inner` wrapped at `inners` into `outer`: the counters of nested
    loops flattened into one, moved on by a step without dividing (`inner += 1` first, then
    a carry per level). A kernel divides once, before its loop, to start them at its part."""
    wrap = inner == inners
    return tl.where(wrap, 0, inner), tl.where(wrap, outer + 1, outer)


@triton.jit
def within(u, size):
    """Whether indices u are in [0, size): one unsigned compare, a negative u wrapping past
    any size."""
    return u.to(tl.uint32) < size.to(tl.uint32)


@triton.jit
def split_range(total, SPLIT_K: tl.constexpr, split):
    """[first, last) of the steps 0..total that part `split` of SPLIT_K runs: cdiv(total,
    SPLIT_K) each, the last part what is left."""
    per_split = tl.cdiv(total, SPLIT_K)
    first = split * per_split
    return first, tl.minimum(first + per_split, total)


@triton.jit
def part_range(total, SPLIT_K: tl.constexpr, part, parts):
    """[first, last) of the steps 0..total that part `part` runs. An object compiled with
    SPLIT_K == 1 runs them all (as `split_range` has it); one compiled with SPLIT_K > 1 serves
    every split, the launch's `parts` (its grid's) each taking cdiv(total, parts)."""
    if SPLIT_K == 1:
        first, last = split_range(total, SPLIT_K, part)
    else:
        per_part = tl.cdiv(total, parts)
        first = part * per_part
        last = tl.minimum(first + per_part, total)
    return first, last


@triton.jit
def tap_source(dst, tap, stride, pad, dil, size, BACKWARD: tl.constexpr):
    """(source index, whether it exists) that tap `tap` of destination index `dst` reads along
    one axis: forward reads u = dst * stride - pad + tap * dil; backward data the u with
    u * stride = dst + pad - tap * dil (none where that is off the stride's lattice)."""
    if BACKWARD:
        t = dst + pad - tap * dil
        u = t // stride
        ok = (t >= 0) & (u * stride == t) & (u < size)
    else:
        u = dst * stride - pad + tap * dil
        ok = (u >= 0) & (u < size)
    return u, ok


@triton.jit
def load_tile(ptr, row_off, col_off, row_ok, col_ok, TRANSPOSED: tl.constexpr):
    """The [rows, cols] tile at ptr + row_off[:, None] + col_off[None, :]. TRANSPOSED reads it
    as [cols, rows] and transposes it in the kernel: Triton lays the threads of a warp along
    the first dimension of a load whose strides it cannot see, so the near index (pixels, in
    NCHW) must come first to be read coalesced."""
    if TRANSPOSED:
        t = tl.load(ptr + col_off[:, None] + row_off[None, :],
                    mask=col_ok[:, None] & row_ok[None, :], other=0.0)
        tile = tl.trans(t)
    else:
        tile = tl.load(ptr + row_off[:, None] + col_off[None, :],
                       mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    return tile


@triton.jit
def mma(a, b, acc, PRECISION: tl.constexpr):
    """acc + a @ b on the matrix cores; FP32 operands at PRECISION ("ieee", "tf32",
    "tf32x3")."""
    if a.dtype == tl.float32:
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def first_taps(phase, pad, dil, stride, R):
    """The taps r of a stride phase that land on whole output positions: r0, r0+step, ...
    Returns (r0, step, count); count 0 where none does."""
    r0 = -1
    r1 = -1
    for r in range(0, R):
        hit = (phase + pad - r * dil) % stride == 0
        r1 = tl.where(hit & (r0 >= 0) & (r1 < 0), r, r1)
        r0 = tl.where(hit & (r0 < 0), r, r0)
    step = tl.where(r1 > r0, r1 - r0, 1)
    count = tl.where(r0 < 0, 0, tl.where(r1 < 0, 1, (R - 1 - r0) // step + 1))
    r0 = tl.maximum(r0, 0)
    return r0, step, count


@triton.jit
def phase_tap(t, k_blocks, n_s, r0, r_step, s0, s_step, hh, ww, ph, pw, pad_h, pad_w, dil_h,
              dil_w, stride_h, stride_w, P, Q, m_ok):
    """Step t of a backward-data stride phase's loop over its taps (first_taps: r0, r_step;
    s0, s_step, n_s of them along S) and k_blocks reduction blocks each: (the block, the tap
    (r, s), the output row and column its rows (hh, ww) read, and which of them exist)."""
    tap = t // k_blocks
    kb = t - tap * k_blocks
    ri = tap // n_s
    r = r0 + ri * r_step
    s = s0 + (tap - ri * n_s) * s_step
    op = hh + (ph + pad_h - r * dil_h) // stride_h
    oq = ww + (pw + pad_w - s * dil_w) // stride_w
    a_ok = m_ok & (op >= 0) & (op < P) & (oq >= 0) & (oq < Q)
    return kb, r, s, op, oq, a_ok
