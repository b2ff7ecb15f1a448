"""Trial kernels for bench/ws_conv.py (no solver runs them): a Hopper GEMM and a stride-1 NHWC
convolution whose main loop Triton's warp specialisation can split into a producer warp group
(tensor memory accelerator copies) and two consumer warp groups (wgmma), as cuBLAS and cuDNN
run on sm90.

Triton 3.6 specialises a loop (`tl.range(warp_specialize=True)`) whose operands come from 2-D
tensor descriptors; it fails on pointer loads and on boxes of more than two dimensions reshaped
for the dot (bench/results/README.md: the 4-D box trial kernel, bench/_tma_kernel.py). So the
convolution here reads its input as a 2-D matrix of pixels by channels:

- `pad_nhwc` copies x (or dy) into a zero-bordered NHWC tensor xp of Hp x Wp pixels an image
  (forward: the layer's padding on each side; backward data: dil*(R-1) - pad). In xp, flattened
  to rows m = (n*Hp + h)*Wp + w, the input filter tap (r, s) reads for the output pixel of row m
  is row m + (r*Wp + s)*dil: every tap's operand is one [BLOCK_M, BLOCK_K] box of xp shifted by
  a constant (`shift`), so a step is two TMA copies and a wgmma, no address arithmetic.
- The GEMM runs over all Hp x Wp positions of xp; those past the output's Ho x Wo (the border
  rows and columns) are computed and not stored: (Hp*Wp) / (Ho*Wo) of the work, 1.07 at 56x56,
  1.31 at 14x14, 1.65 at 7x7 for a 3x3 filter.
- Channels past C (forward) or K (backward data) in a box read zeros from the copy engine, so
  the filter's box may run into the next tap's columns: the product there is zero.

Backward data is the forward loop on dy padded by dil*(R-1) - pad with the taps reflected and
the filter read as [K, R*S*C] boxes of BLOCK_K filters by BLOCK_N channels (not transposed).
TMA needs 16-byte aligned strides: C and K multiples of 8 (16-bit types). Descriptors are made
on the device (Triton's global scratch, `triton.set_allocator`).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _tile(pid, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a program, GROUP_M row tiles side by side (L2 reuse of the filter)."""
    width = GROUP_M * tiles_n
    first = (pid // width) * GROUP_M
    rows = tl.minimum(tiles_m - first, GROUP_M)
    return first + (pid % width) % rows, (pid % width) // rows


@triton.jit
def _gemm_tile(a_desc, b_desc, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, WS: tl.constexpr):
    """One tile of `gemm_ws`: its reduction (the loop specialised when WS) and its store."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=WS):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    om = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    on = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + om.to(tl.int64)[:, None] * N + on[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(om < M)[:, None] & (on < N)[None, :])


@triton.jit
def gemm_ws(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, WS: tl.constexpr,
            PROGRAMS: tl.constexpr = 0):
    """c[M, N] = a[M, K] b[N, K]^T (16-bit, K contiguous), operands by TMA: the Triton GEMM
    ceiling of a convolution that had im2col for free. PROGRAMS 0: a program a tile, its
    reduction loop specialised when WS; else persistent, PROGRAMS programs (the SM count)
    walking the tiles, the loop over tiles specialised when WS (the producer group runs ahead
    into the next tile while the consumers store this one)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                       block_shape=[BLOCK_N, BLOCK_K])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    if PROGRAMS == 0:
        pid_m, pid_n = _tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)
        _gemm_tile(a_desc, b_desc, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, WS)
    else:
        for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, warp_specialize=WS):
            pid_m, pid_n = _tile(tile, tiles_m, tiles_n, GROUP_M)
            _gemm_tile(a_desc, b_desc, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K,
                       False)


@triton.jit
def pad_nhwc(src_ptr, dst_ptr, H, W, C, Hp, Wp, top, left, ROWS, BLOCK_R: tl.constexpr,
             BLOCK_C: tl.constexpr):
    """dst[n, h, w, c] = src[n, h - top, w - left, c] inside, 0 on the border (NHWC, rows
    ROWS = N * Hp * Wp of dst)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    img = rows // (Hp * Wp)
    rem = rows - img * (Hp * Wp)
    h = rem // Wp - top
    w = rem - (rem // Wp) * Wp - left
    inside = (rows < ROWS) & (h >= 0) & (h < H) & (w >= 0) & (w < W)
    src = ((img.to(tl.int64) * H + h) * W + w) * C
    t = tl.load(src_ptr + src[:, None] + cols[None, :],
                mask=inside[:, None] & (cols < C)[None, :], other=0.0)
    tl.store(dst_ptr + rows.to(tl.int64)[:, None] * C + cols[None, :], t,
             mask=(rows < ROWS)[:, None] & (cols < C)[None, :])


@triton.jit
def _shift_tile(xp, wd, y_ptr, rows, C_in, Wp, Hp, C_out, Ho, Wo, R, S, dil_h, dil_w, pid_m,
                pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                BACKWARD_DATA: tl.constexpr, WS: tl.constexpr):
    """One tile of `conv2d_shift`: its reduction over taps and channel blocks (the loop
    specialised when WS) and the store of its rows inside the output."""
    m0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    k_blocks = tl.cdiv(C_in, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in tl.range(0, R * S * k_blocks, warp_specialize=WS):
        rs = t // k_blocks
        k0 = (t - rs * k_blocks) * BLOCK_K
        r = rs // S
        s = rs - r * S
        if BACKWARD_DATA:  # reflected taps: dx(h, w) reads dyp(h + dil*(R-1-r), ...)
            a = xp.load([m0 + ((R - 1 - r) * dil_h * Wp + (S - 1 - s) * dil_w), k0])
            b = wd.load([k0, rs * C_out + n0])
            acc = tl.dot(a, b, acc)
        else:
            a = xp.load([m0 + (r * dil_h * Wp + s * dil_w), k0])
            b = wd.load([n0, rs * C_in + k0])
            acc = tl.dot(a, b.T, acc)
    om = m0 + tl.arange(0, BLOCK_M)
    on = n0 + tl.arange(0, BLOCK_N)
    img = om // (Hp * Wp)
    rem = om - img * (Hp * Wp)
    h = rem // Wp
    w = rem - h * Wp
    keep = (om < rows) & (h < Ho) & (w < Wo)
    dst = ((img.to(tl.int64) * Ho + h) * Wo + w) * C_out
    tl.store(y_ptr + dst[:, None] + on[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=keep[:, None] & (on < C_out)[None, :])


@triton.jit
def conv2d_shift(xp_ptr, w_ptr, y_ptr, N, C_in, Hp, Wp, C_out, Ho, Wo, R, S, dil_h, dil_w,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr, BACKWARD_DATA: tl.constexpr, WS: tl.constexpr,
                 PROGRAMS: tl.constexpr = 0):
    """y[n, h, w, :] = sum over taps and channels of xp * w, NHWC, stride 1, xp the
    zero-bordered input (`pad_nhwc`), rows over xp's N * Hp * Wp positions. PROGRAMS 0: a
    program a tile; else persistent, as `gemm_ws`.

    Forward: xp = padded x (C_in = C), w is [K][R][S][C], y (C_out = K).
    Backward data: xp = padded dy (C_in = K), w is [K][R][S][C], y = dx (C_out = C)."""
    rows = N * Hp * Wp
    xp = tl.make_tensor_descriptor(xp_ptr, shape=[rows, C_in], strides=[C_in, 1],
                                   block_shape=[BLOCK_M, BLOCK_K])
    if BACKWARD_DATA:  # w as [K][R*S*C]: boxes of BLOCK_K filters by BLOCK_N channels
        wd = tl.make_tensor_descriptor(w_ptr, shape=[C_in, R * S * C_out],
                                       strides=[R * S * C_out, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    else:  # w as [K][R*S*C]: boxes of BLOCK_N filters by BLOCK_K channels
        wd = tl.make_tensor_descriptor(w_ptr, shape=[C_out, R * S * C_in],
                                       strides=[R * S * C_in, 1],
                                       block_shape=[BLOCK_N, BLOCK_K])
    tiles_m = tl.cdiv(rows, BLOCK_M)
    tiles_n = tl.cdiv(C_out, BLOCK_N)
    if PROGRAMS == 0:
        pid_m, pid_n = _tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)
        _shift_tile(xp, wd, y_ptr, rows, C_in, Wp, Hp, C_out, Ho, Wo, R, S, dil_h, dil_w,
                    pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, BACKWARD_DATA, WS)
    else:
        for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, warp_specialize=WS):
            pid_m, pid_n = _tile(tile, tiles_m, tiles_n, GROUP_M)
            _shift_tile(xp, wd, y_ptr, rows, C_in, Wp, Hp, C_out, Ho, Wo, R, S, dil_h, dil_w,
                        pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, BACKWARD_DATA, False)


@triton.jit
def conv2d_shift_wrw(xp_ptr, dyp_ptr, ws_ptr, rows, C, K, Wp, R, S, dil_h, dil_w, per_part,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, WS: tl.constexpr):
    """Backward weights: ws[part, k, (r, s, c)] (FP32) = sum over the part's rows m of
    dyp[m, k] * xp[m + (r*Wp + s)*dil, c], xp the zero-bordered x and dyp dy on the same grid
    (`pad_nhwc` with no top or left border: zeros past the output's Ho x Wo). Program axes:
    0 the (K, C) tile, 1 the tap, 2 the part of the rows (per_part rows each, a multiple of
    BLOCK_K); the parts' sum is dw as [K][R][S][C]."""
    dyp = tl.make_tensor_descriptor(dyp_ptr, shape=[rows, K], strides=[K, 1],
                                    block_shape=[BLOCK_K, BLOCK_M])
    xp = tl.make_tensor_descriptor(xp_ptr, shape=[rows, C], strides=[C, 1],
                                   block_shape=[BLOCK_K, BLOCK_N])
    pid_m, pid_n = _tile(tl.program_id(0), tl.cdiv(K, BLOCK_M), tl.cdiv(C, BLOCK_N), GROUP_M)
    rs = tl.program_id(1)
    part = tl.program_id(2)
    r = rs // S
    s = rs - r * S
    shift = r * dil_h * Wp + s * dil_w
    m_lo = part * per_part
    m_hi = tl.minimum(m_lo + per_part, rows)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m in tl.range(m_lo, m_hi, BLOCK_K, warp_specialize=WS):
        a = dyp.load([m, pid_m * BLOCK_M])
        b = xp.load([m + shift, pid_n * BLOCK_N])
        acc = tl.dot(a.T, b, acc)
    ok = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    oc = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    dst = (part * K + ok.to(tl.int64))[:, None] * (R * S * C) + (rs * C + oc)[None, :]
    tl.store(ws_ptr + dst, acc, mask=(ok < K)[:, None] & (oc < C)[None, :])
