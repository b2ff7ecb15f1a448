"""3-D convolution (NCDHW and NDHWC) as implicit GEMM on tensor cores (`tl.dot`).

Forward, backward data and backward weights over the three filter axes (t, r, s); FP16, BF16
and FP32 (IEEE, TF32 or three TF32 products, by the PRECISION constexpr, as the 2-D
kernels); stride, dilation, padding, groups (program axis 1). The three kernels take one
argument list (`conv_triton_3d_spec.ARGS`), its sizes, geometry and strides as three tuple
arguments (`dims`, `conv`, `strides`: `TUPLE_ARGS`, the convention of `conv_triton_common`), and
share their index helpers:

- forward: rows are the output positions (n, o, p, q), columns the filters, the reduction the
  taps (outside) by BLOCK_K channels (inside);
- backward data: one stride phase (d % stride_d, h % stride_h, w % stride_w) per program
  (axis 2, phase-major), so that only the taps that reach the phase are visited, as in the
  2-D kernel;
- forward and backward data on a small grid: the reduction's steps cut into as many parts as
  the grid's axis 2 has (backward data: its programs over the phases), each part's FP32 sums
  to ws as [parts][N][G*K][Z][P][Q] (dx's [parts][N][G*C][D][H][W]) in every object, summed
  by the 2-D family's reduce kernel. The SPLIT constexpr makes the split object, one for
  every split above one; an unsplit object keeps the plain loop and store (the split path in
  the same object had cost the unsplit launches registers and time);
- backward weights: one tap per program row (axis 1 is g*T*R*S + tap), the reduction over
  every output position cut into as many parts as the grid's axis 2 has (the split is the
  grid's, not the object's): with several parts, FP32 partials go to ws and the 2-D family's
  reduce kernel sums them into dw (T and R merged into one axis: packed weights have
  stride_t = R * stride_r in either layout).

The tile order, the unit channel strides, the precision-aware product, the stride phases' taps
and the pixel stepping come from the 2-D kernels (`conv_triton_common`, `conv_triton`):
imported, so that a fix there reaches these.
Importing this module needs Triton but no GPU; how to launch the kernels is plain data in
`conv_triton_3d_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton import _advance, _pixels
from .conv_triton_3d_spec import TUPLES
from .conv_triton_common import carry as _carry
from .conv_triton_common import channel_strides, tile_offsets
from .conv_triton_common import first_taps as _first_taps
from .conv_triton_common import load_tile as _load_tile
from .conv_triton_common import mma as _mma
from .conv_triton_common import part_range as _part_range
from .conv_triton_common import within as _within

#: The tuple arguments of the kernels by the flat names of their members (compiler.triton).
TUPLE_ARGS = TUPLES


@triton.jit
def _positions(idx, A, B, C):
    """(n, a, b, c) of flat indices over N x A x B x C."""
    c = idx % C
    rest = idx // C
    b = rest % B
    rest = rest // B
    a = rest % A
    return rest // A, a, b, c


@triton.jit
def _tap(tap, R, S):
    """(t, r, s) of a flat tap index over T x R x S."""
    t = tap // (R * S)
    rs = tap - t * (R * S)
    r = rs // S
    return t, r, rs - r * S


@triton.jit
def _inside(d, h, w, D, H, W):
    return (d >= 0) & (d < D) & (h >= 0) & (h < H) & (w >= 0) & (w < W)


@triton.jit
def _inside_shifted(d, h, w, D, H, W):
    """Whether positions are inside D x H x W: one unsigned compare per axis."""
    return _within(d, D) & _within(h, H) & _within(w, W)


@triton.jit
def _step_at(step, inner, middle, outer):
    """The loop counters (block, then three tap indices, innermost first) at a flat step of
    a loop over outer x middle x `inner` blocks."""
    rest = step // inner
    block = step - rest * inner
    second = rest // middle
    first = rest - second * middle
    third = second // outer
    return block, first, second - third * outer, third


@triton.jit
def _partial_offsets(part, img, pos, chan, N, CH, SPATIAL):
    """Offsets in ws of a tile's FP32 partial sums: rows (image `img`, flat position `pos`
    of SPATIAL), columns the channels `chan` of CH, as [parts][N][CH][SPATIAL] in every object
    (the generic and the aligned one of a launch write the same order). Neither axis is
    contiguous to the compiler, so the sums are stored from the accumulator's own layout: an
    order contiguous along the channels had an FP32 256x256 tile's accumulator converted
    through 262,144 bytes of shared memory, over sm90's 232,448 (the GPU grid refused the
    16-bit 256x256 objects at launch)."""
    return ((part * N + img) * (CH * SPATIAL) + pos)[:, None] + (chan * SPATIAL)[None, :]


@triton.jit
def conv3d_fwd(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, SPLIT: tl.constexpr,
):
    """y[n, g*K+k, o, p, q] = sum over (t, r, s) taps, then C channels, of x * w."""
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w = conv
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    M = N * Z * P * Q
    offs_m, offs_n = tile_offsets(M, K, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < K
    img, od, op, oq = _positions(offs_m, Z, P, Q)
    id0 = od * stride_d - pad_d
    ih0 = op * stride_h - pad_h
    iw0 = oq * stride_w - pad_w
    a_row = img * sxn + g * C * sxc + id0 * sxd + ih0 * sxh + iw0 * sxw
    w_col = (g * K + offs_n) * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    c_blocks = tl.cdiv(C, BLOCK_K)
    # The step's block and tap move on by counting (conv_triton_common.carry), not dividing:
    # in a split object one division before the loop.
    part = tl.program_id(2)
    if SPLIT:
        first, last = _part_range(T * R * S * c_blocks, 2, part, tl.num_programs(2))
        cb, s, r, t = _step_at(first, c_blocks, S, R)
    else:
        # Literal zeros, declared in this order: the unsplit objects then compile to the
        # registers of the kernel before the split (bench/conv3d_regs.py shows a drift; another
        # order, or a helper returning run-time values, cost the 16-bit backward-data object
        # 186 -> 242 registers).
        first = 0
        last = T * R * S * c_blocks
        cb = 0
        t = 0
        r = 0
        s = 0
    for _ in range(first, last):
        dd = t * dil_d
        dh = r * dil_h
        dw = s * dil_w
        a_ok = m_ok & _inside_shifted(id0 + dd, ih0 + dh, iw0 + dw, D, H, W)
        cs = cb * BLOCK_K + offs_k
        c_ok = cs < C
        a = tl.load(x_ptr + (a_row + (dd * sxd + dh * sxh + dw * sxw))[:, None]
                    + (cs * sxc)[None, :], mask=a_ok[:, None] & c_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (w_col + (t * swt + r * swr + s * sws))[None, :]
                    + (cs * swc)[:, None], mask=c_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        cb, s = _carry(cb + 1, s, c_blocks)
        s, r = _carry(s, r, S)
        r, t = _carry(r, t, R)
    if SPLIT:
        zpq = Z * P * Q
        ws_off = _partial_offsets(part, img, offs_m - img * zpq, g * K + offs_n, N, G * K, zpq)
        tl.store(ws_ptr + ws_off, acc, mask=m_ok[:, None] & n_ok[None, :])
    else:
        y_off = (img * syn + od * syd + op * syh + oq * syw)[:, None] + \
            ((g * K + offs_n) * syk)[None, :]
        tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def conv3d_bwd_data(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, SPLIT: tl.constexpr,
):
    """dx[n, g*C+c, d, h, w] = sum over the taps reaching (d, h, w), then K, of dy * w.

    Program axis 2 is the stride phase (phase-major over the split's parts); within a phase
    every tap that contributes does so at every position, so the loop visits only those (a
    phase no tap reaches is written 0)."""
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w = conv
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    if SPLIT:
        phases = stride_d * stride_h * stride_w
        phase = tl.program_id(2) % phases
        part = tl.program_id(2) // phases
        parts = tl.cdiv(tl.num_programs(2), phases)
    else:
        phase = tl.program_id(2)
    plane = stride_h * stride_w
    pd = phase // plane
    ph = (phase - pd * plane) // stride_w
    pw = phase - pd * plane - ph * stride_w
    Ds = tl.cdiv(D, stride_d)
    Hs = tl.cdiv(H, stride_h)
    Ws = tl.cdiv(W, stride_w)
    M = N * Ds * Hs * Ws
    offs_m, offs_n = tile_offsets(M, C, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    img, dd, hh, ww = _positions(offs_m, Ds, Hs, Ws)
    idd = pd + dd * stride_d
    ih = ph + hh * stride_h
    iw = pw + ww * stride_w
    m_ok = (offs_m < M) & (idd < D) & (ih < H) & (iw < W)
    n_ok = offs_n < C
    t0, t_step, n_t = _first_taps(pd, pad_d, dil_d, stride_d, T)
    r0, r_step, n_r = _first_taps(ph, pad_h, dil_h, stride_h, R)
    s0, s_step, n_s = _first_taps(pw, pad_w, dil_w, stride_w, S)
    a_row = img * syn + g * K * syk + dd * syd + hh * syh + ww * syw
    w_col = offs_n * swc  # w is (G*K, C, T, R, S): the group selects filters, not channels
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_blocks = tl.cdiv(K, BLOCK_K)
    # The phase's taps are a lattice: tap (t0 + i*t_step, ...) reads dy at (dd, hh, ww) plus
    # (e0 - i*e_step, ...), each division exact (the taps land on whole output positions).
    # The step's block and tap move on by counting, not dividing.
    e0 = (pd + pad_d - t0 * dil_d) // stride_d
    f0 = (ph + pad_h - r0 * dil_h) // stride_h
    g0 = (pw + pad_w - s0 * dil_w) // stride_w
    e_step = t_step * dil_d // stride_d
    f_step = r_step * dil_h // stride_h
    g_step = s_step * dil_w // stride_w
    if SPLIT:
        first, last = _part_range(n_t * n_r * n_s * k_blocks, 2, part, parts)
        kb, si, ri, ti = _step_at(first, k_blocks, tl.maximum(n_s, 1), tl.maximum(n_r, 1))
    else:
        first = 0
        last = n_t * n_r * n_s * k_blocks
        kb = 0
        ti = 0
        ri = 0
        si = 0
    for _ in range(first, last):
        de = e0 - ti * e_step
        df = f0 - ri * f_step
        dg = g0 - si * g_step
        a_ok = m_ok & _inside_shifted(dd + de, hh + df, ww + dg, Z, P, Q)
        ks = kb * BLOCK_K + offs_k
        k_ok = ks < K
        a = tl.load(y_ptr + (a_row + (de * syd + df * syh + dg * syw))[:, None]
                    + (ks * syk)[None, :], mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        tap_off = (t0 + ti * t_step) * swt + (r0 + ri * r_step) * swr + \
            (s0 + si * s_step) * sws
        b = tl.load(w_ptr + (w_col + tap_off)[None, :]
                    + ((g * K + ks) * swk)[:, None], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        kb, si = _carry(kb + 1, si, k_blocks)
        si, ri = _carry(si, ri, n_s)
        ri, ti = _carry(ri, ti, n_r)
    if SPLIT:
        ws_off = _partial_offsets(part, img, (idd * H + ih) * W + iw, g * C + offs_n, N, G * C,
                                  D * H * W)
        tl.store(ws_ptr + ws_off, acc, mask=m_ok[:, None] & n_ok[None, :])
    else:
        x_off = (img * sxn + idd * sxd + ih * sxh + iw * sxw)[:, None] + \
            ((g * C + offs_n) * sxc)[None, :]
        tl.store(x_ptr + x_off, acc.to(x_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def _x_rows(x_ptr, img, idd, ih, iw, x_col, j_ok, n_ok, D, H, W, sxn, sxd, sxh, sxw):
    """x at the positions (img, idd, ih, iw) (zero outside) by the columns x_col."""
    ok = j_ok & _inside(idd, ih, iw, D, H, W)
    return tl.load(x_ptr + (img * sxn + idd * sxd + ih * sxh + iw * sxw)[:, None]
                   + x_col[None, :], mask=ok[:, None] & n_ok[None, :], other=0.0)


@triton.jit
def _store_tap(w_ptr, ws_ptr, acc, g, tap, part, parts, offs_m, offs_n, mask, G, K, C, TRS,
               swk, swc, swt, swr, sws, R, S):
    """One tap's sums: into dw, or its FP32 partial into ws ([parts][T*R*S][G*K][C], a
    program's tile contiguous along C: vector stores)."""
    if parts == 1:
        t, r, s = _tap(tap, R, S)
        w_off = ((g * K + offs_m) * swk)[:, None] + (offs_n * swc)[None, :] + \
            t * swt + r * swr + s * sws
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        ws_off = ((part * TRS + tap) * (G * K) + g * K + offs_m)[:, None] * C + \
            offs_n[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def conv3d_bwd_weight(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, TAPS: tl.constexpr = 1,
    TAP_AXIS: tl.constexpr = 2,
):
    """dw[g*K+k, c, t, r, s] = sum over positions (n, o, p, q) of dy * x, TAPS taps per program
    row (axis 1: g*T*R*S/TAPS + row): one, or every tap along the filter axis TAP_AXIS (0: t,
    2: s) whose extent TAPS is (2 or 3), each dy tile then serving TAPS products; axis 2 cuts
    the positions into parts, each writing its FP32 partial to ws ([parts][T*R*S][G*K][C])
    where there are several. dy's tile is read as [positions, K] and transposed in the kernel
    in both layouts (as conv2d_bwd_weight does)."""
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w = conv
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    TRS = T * R * S
    rows = TRS // TAPS
    gt = tl.program_id(1)
    g = gt // rows
    row = gt - g * rows
    if TAPS == 1:
        tap = row
        tap_step = 0
    elif TAP_AXIS == 2:  # rows over T x R, s = 0 .. S-1 here
        tap = row * S
        tap_step = 1
    else:  # rows over R x S, t = 0 .. T-1 here
        tap = row
        tap_step = R * S
    t, r, s = _tap(tap, R, S)
    part = tl.program_id(2)
    parts = tl.num_programs(2)
    offs_m, offs_n = tile_offsets(K, C, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < K
    n_ok = offs_n < C
    PQ = P * Q
    M = N * Z * PQ
    blocks = tl.cdiv(M, BLOCK_K)
    per_part = tl.cdiv(blocks, parts)
    kb0 = part * per_part
    kb1 = tl.minimum(kb0 + per_part, blocks)
    y_col = (g * K + offs_m) * syk
    x_col = (g * C + offs_n) * sxc
    # (n*Z + o, p, q) of the step's positions, moved on without a division per step.
    plane, op, oq, d_plane, d_p, d_q = _pixels(kb0 * BLOCK_K + offs_k, PQ, Q, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        j_ok = kb * BLOCK_K + offs_k < M
        img = plane // Z
        od = plane - img * Z
        idd = od * stride_d - pad_d + t * dil_d
        ih = op * stride_h - pad_h + r * dil_h
        iw = oq * stride_w - pad_w + s * dil_w
        a = _load_tile(y_ptr, y_col, img * syn + od * syd + op * syh + oq * syw, m_ok, j_ok,
                       True)
        b = _x_rows(x_ptr, img, idd, ih, iw, x_col, j_ok, n_ok, D, H, W, sxn, sxd, sxh, sxw)
        acc = _mma(a, b, acc, PRECISION)
        if TAPS > 1:
            if TAP_AXIS == 2:
                b = _x_rows(x_ptr, img, idd, ih, iw + dil_w, x_col, j_ok, n_ok, D, H, W, sxn,
                            sxd, sxh, sxw)
            else:
                b = _x_rows(x_ptr, img, idd + dil_d, ih, iw, x_col, j_ok, n_ok, D, H, W, sxn,
                            sxd, sxh, sxw)
            acc1 = _mma(a, b, acc1, PRECISION)
        if TAPS > 2:
            if TAP_AXIS == 2:
                b = _x_rows(x_ptr, img, idd, ih, iw + 2 * dil_w, x_col, j_ok, n_ok, D, H, W,
                            sxn, sxd, sxh, sxw)
            else:
                b = _x_rows(x_ptr, img, idd + 2 * dil_d, ih, iw, x_col, j_ok, n_ok, D, H, W,
                            sxn, sxd, sxh, sxw)
            acc2 = _mma(a, b, acc2, PRECISION)
        plane, op, oq = _advance(plane, op, oq, d_plane, d_p, d_q, P, Q)
    mask = m_ok[:, None] & n_ok[None, :]
    _store_tap(w_ptr, ws_ptr, acc, g, tap, part, parts, offs_m, offs_n, mask, G, K, C, TRS,
               swk, swc, swt, swr, sws, R, S)
    if TAPS > 1:
        _store_tap(w_ptr, ws_ptr, acc1, g, tap + tap_step, part, parts, offs_m, offs_n, mask,
                   G, K, C, TRS, swk, swc, swt, swr, sws, R, S)
    if TAPS > 2:
        _store_tap(w_ptr, ws_ptr, acc2, g, tap + 2 * tap_step, part, parts, offs_m, offs_n,
                   mask, G, K, C, TRS, swk, swc, swt, swr, sws, R, S)


#: The jit functions by the names the spec uses.
JIT = {"conv3d_fwd": conv3d_fwd, "conv3d_bwd_data": conv3d_bwd_data,
       "conv3d_bwd_weight": conv3d_bwd_weight}
