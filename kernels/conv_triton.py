"""Convolution as implicit GEMM on tensor cores (`tl.dot`): one Triton source for every target.

Forward, backward data and backward weights; NCHW and NHWC through run-time strides; FP16, BF16
and FP32 (IEEE unless PRECISION asks for TF32); stride, dilation, padding, groups. The loops run
over filter taps outside and channels inside, so the gather costs a few scalar operations per
tap instead of a div/mod per element; forward and backward data move their tap and channel
block on by counting (`conv_triton_common.carry`), divide once before the loop, and work their
rows' base offsets out once, a tap adding a scalar; channels are the contiguous, vectorised
dimension in NHWC.
Programs walk the output in groups of GROUP_M row tiles (L2 reuse). Backward data works one
stride phase at a time, so it never multiplies by the zeros that a strided forward leaves out;
backward weights splits its long pixel reduction over SPLIT_K programs (forward and backward
data may too, where few output tiles would leave the GPU idle); few input channels (the first
layer, C=3) have kernels of their own in every direction: forward and backward weights one
filter row at a time over (s, c) flattened, backward data over all stride phases at once;
grouped problems of few channels and filters a group take the packed kernels
(conv_triton_packed.py: several groups to a tile, its weight tile block-diagonal).
`transpose_021` turns NCHW operands into NHWC ones and back, for the solvers that run NCHW
problems on the NHWC kernels.

Importing this module needs Triton but no GPU. How to launch each kernel (arguments, grid,
tunables, legal spaces per target, workspace and the assumptions a compiled object may carry)
is plain data in `conv_triton_spec`, re-exported here; the runtime reads that module alone.
The tile order, tile offsets, NHWC channel strides and split-K ranges that these kernels share
with the 1x1 and Winograd ones, and the tile loads, dot and stride-phase taps they share with
the 3-D and packed ones, are `@triton.jit` helpers in `conv_triton_common`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import carry as _carry
from .conv_triton_common import channel_strides, part_range, tile_offsets
from .conv_triton_common import first_taps as _first_taps
from .conv_triton_common import load_tile as _load_tile
from .conv_triton_common import mma as _mma
from .conv_triton_common import within as _within
from .conv_triton_packed import (
    conv2d_bwd_data_packed,
    conv2d_bwd_weight_packed,
    conv2d_fwd_packed,
)
from .conv_triton_spec import (  # noqa: F401  (re-exported for the builder and the solvers)
    ALIGN16_ARGS,
    CONV_ARGS,
    CONV_TUPLES,
    ELEMENT_BYTES,
    ELEMENT_TYPES,
    FEW_ALIGN_ARGS,
    KERNELS,
    OUTPUT_OF,
    REDUCE_ARGS,
    REDUCE_BLOCK,
    REDUCE_WARPS,
    TARGET_KINDS,
    TUNED_FILES,
    align16_args,
    align16_variants,
    arg_list,
    cdiv,
    conv_args,
    default_config,
    fits_int32,
    grid,
    is_legal,
    kernel_for,
    legal_space,
    meets_align16,
    reduce_args,
    shape_key,
    shared_bytes,
    split_applies,
    target_kind,
    triton_signature,
    tuned_config,
    workspace_bytes,
)


@triton.jit
def _output_tile(N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """A forward program's tile over rows (n, p, q) and filters k: the filter indices, the
    reduction's BLOCK_K offsets, the row and column masks, the rows' image, pixel, output row
    and column, and the input row and column of their (0, 0) tap."""
    M = N * P * Q
    offs_m, offs_n = tile_offsets(M, K, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < K
    img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    op = pq // Q
    oq = pq % Q
    return (offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, op * stride_h - pad_h,
            oq * stride_w - pad_w)


@triton.jit
def _fwd_tile(x_ptr, w_ptr, dims, conv, strides, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
              CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr):
    """A forward program's work: (the FP32 sums of its output tile over its part of the
    reduction, the tile's mask, its offsets in y, and in a SPLIT_K > 1 launch's FP32 partials:
    [SPLIT_K][N][P][Q][G*K], y's memory order, in channels-last objects, else
    [SPLIT_K][N][G*K][P][Q])."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    a_row = img * sxn + g * C * sxc + ih0 * sxh + iw0 * sxw
    w_col = (g * K + offs_n) * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    c_blocks = tl.cdiv(C, BLOCK_K)
    split = tl.program_id(2)
    t0, t1 = part_range(R * S * c_blocks, SPLIT_K, split, tl.num_programs(2))
    # The step's block and tap move on by counting, not dividing: one division before the loop.
    rs = t0 // c_blocks
    cb = t0 - rs * c_blocks
    r = rs // S
    s = rs - r * S
    for _ in range(t0, t1):
        dh = r * dil_h
        dw = s * dil_w
        a_ok = m_ok & _within(ih0 + dh, H) & _within(iw0 + dw, W)
        cs = cb * BLOCK_K + offs_k
        c_ok = cs < C
        a = tl.load(x_ptr + (a_row + (dh * sxh + dw * sxw))[:, None] + (cs * sxc)[None, :],
                    mask=a_ok[:, None] & c_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (w_col + (r * swr + s * sws))[None, :] + (cs * swc)[:, None],
                    mask=c_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        cb, s = _carry(cb + 1, s, c_blocks)
        s, r = _carry(s, r, S)
    mask = m_ok[:, None] & n_ok[None, :]
    y_off = (img * syn + op * syh + oq * syw)[:, None] + ((g * K + offs_n) * syk)[None, :]
    if CHANNELS_LAST:  # partials in y's memory order, (n, p, q, G*K): coalesced both ways
        ws_off = (((split * N + img) * (P * Q) + pq) * (G * K))[:, None] + \
            (g * K + offs_n)[None, :]
    else:
        ws_off = ((split * N + img) * (G * K * P * Q) + pq)[:, None] + \
            ((g * K + offs_n) * (P * Q))[None, :]
    return acc, mask, y_off, ws_off


@triton.jit
def conv2d_fwd(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """y[n, g*K+k, p, q] = sum over (r, s) taps, then C channels, of x * w."""
    acc, mask, y_off, ws_off = _fwd_tile(x_ptr, w_ptr, dims, conv, strides, BLOCK_M, BLOCK_N,
                                         BLOCK_K, GROUP_M, SPLIT_K, CHANNELS_LAST, PRECISION)
    if SPLIT_K == 1:
        tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:  # partial sums for conv2d_bwd_weight_reduce
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def conv2d_fwd_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """Forward for few input channels: per filter row r, the reduction runs over (s, c)
    flattened, so a block of BLOCK_K spans a whole row of taps (7 x 3 = 21 of 32 for the
    first layer) instead of padding 3 channels to BLOCK_K. The column offsets and the
    horizontal bounds of a block are worked out once for all R rows; a row then costs one
    add per element for the address and one AND for the mask."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    x_row = img * sxn + g * C * sxc + iw0 * sxw
    w_col = (g * K + offs_n) * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    SC = S * C
    for k0 in range(0, SC, BLOCK_K):
        j = k0 + offs_k
        j_ok = j < SC
        s = j // C
        c = j - s * C
        col = s * dil_w * sxw + c * sxc
        iw = iw0[:, None] + (s * dil_w)[None, :]
        w_ok = (m_ok[:, None] & j_ok[None, :]) & (iw >= 0) & (iw < W)
        w_tap = s * sws + c * swc
        for r in range(0, R):
            ih = ih0 + r * dil_h
            h_ok = (ih >= 0) & (ih < H)
            a = tl.load(x_ptr + (x_row + ih * sxh)[:, None] + col[None, :],
                        mask=w_ok & h_ok[:, None], other=0.0)
            b = tl.load(w_ptr + w_col[None, :] + (r * swr + w_tap)[:, None],
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0)
            acc = _mma(a, b, acc, PRECISION)
    y_off = (img * syn + op * syh + oq * syw)[:, None] + ((g * K + offs_n) * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def _phase_tile(N, H, W, stride_h, stride_w, cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                GROUP_M: tl.constexpr):
    """A backward-data program's tile over rows (n, i, j), i < cdiv(H, stride_h), j <
    cdiv(W, stride_w), and `cols` columns: (M, row and column indices, n, i, j)."""
    Hs = tl.cdiv(H, stride_h)
    Ws = tl.cdiv(W, stride_w)
    M = N * Hs * Ws
    offs_m, offs_n = tile_offsets(M, cols, BLOCK_M, BLOCK_N, GROUP_M)
    img = offs_m // (Hs * Ws)
    hw = offs_m % (Hs * Ws)
    return M, offs_m, offs_n, img, hw // Ws, hw % Ws


@triton.jit
def conv2d_bwd_data(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """dx[n, g*C+c, h, w] = sum over the taps reaching (h, w), then K, of dy * w.

    Program axis 2 is the stride phase (h % stride_h, w % stride_w) (times the split, with
    SPLIT_K > 1); within a phase every tap that contributes does so at every pixel, so the loop
    visits only those taps. SPLIT_K > 1 is for problems where every phase has a tap
    (conv_triton_spec.split_applies)."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    if SPLIT_K == 1:
        phase = tl.program_id(2)
        split = 0
    else:
        phase = tl.program_id(2) % (stride_h * stride_w)
        split = tl.program_id(2) // (stride_h * stride_w)
    ph = phase // stride_w
    pw = phase % stride_w
    M, offs_m, offs_n, img, hh, ww = _phase_tile(N, H, W, stride_h, stride_w, C, BLOCK_M,
                                                 BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    ih = ph + hh * stride_h
    iw = pw + ww * stride_w
    m_ok = (offs_m < M) & (ih < H) & (iw < W)
    n_ok = offs_n < C
    r0, r_step, n_r = _first_taps(ph, pad_h, dil_h, stride_h, R)
    s0, s_step, n_s = _first_taps(pw, pad_w, dil_w, stride_w, S)
    a_row = img * syn + g * K * syk + hh * syh + ww * syw
    w_col = offs_n * swc  # w is (G*K, C, R, S): the group selects filters, not channels
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_blocks = tl.cdiv(K, BLOCK_K)
    steps = n_r * n_s * k_blocks
    if SPLIT_K == 1:
        t0 = 0
        t1 = steps
    else:
        t0, t1 = part_range(steps, SPLIT_K, split,
                            tl.num_programs(2) // (stride_h * stride_w))
    # The phase's taps are a lattice: tap (r0 + i*r_step, s0 + j*s_step) reads dy at (hh, ww)
    # plus (dp0 - i*dp_step, dq0 - j*dq_step), each division exact. The step's block and tap
    # move on by counting, not dividing.
    dp0 = (ph + pad_h - r0 * dil_h) // stride_h
    dq0 = (pw + pad_w - s0 * dil_w) // stride_w
    dp_step = r_step * dil_h // stride_h
    dq_step = s_step * dil_w // stride_w
    tap = t0 // k_blocks
    kb = t0 - tap * k_blocks
    ri = tap // tl.maximum(n_s, 1)  # a phase no tap reaches (n_s = 0) runs no step
    si = tap - ri * n_s
    for _ in range(t0, t1):
        dp = dp0 - ri * dp_step
        dq = dq0 - si * dq_step
        a_ok = m_ok & _within(hh + dp, P) & _within(ww + dq, Q)
        ks = kb * BLOCK_K + offs_k
        k_ok = ks < K
        a = tl.load(y_ptr + (a_row + (dp * syh + dq * syw))[:, None] + (ks * syk)[None, :],
                    mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        tap_off = (r0 + ri * r_step) * swr + (s0 + si * s_step) * sws
        b = tl.load(w_ptr + (w_col + tap_off)[None, :] + ((g * K + ks) * swk)[:, None],
                    mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        kb, si = _carry(kb + 1, si, k_blocks)
        si, ri = _carry(si, ri, n_s)
    mask = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        x_off = (img * sxn + ih * sxh + iw * sxw)[:, None] + ((g * C + offs_n) * sxc)[None, :]
        tl.store(x_ptr + x_off, acc.to(x_ptr.dtype.element_ty), mask=mask)
    else:
        # Partial sums, FP32, for conv2d_bwd_weight_reduce: [SPLIT_K][N][H][W][G*C] (x's
        # memory order) in channels-last objects, else [SPLIT_K][N][G*C][H][W].
        if CHANNELS_LAST:
            ws_off = (((split * N + img) * (H * W) + ih * W + iw) * (G * C))[:, None] + \
                (g * C + offs_n)[None, :]
        else:
            ws_off = ((split * N + img) * (G * C * H * W) + ih * W + iw)[:, None] + \
                ((g * C + offs_n) * (H * W))[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def _floor_div(a, b):
    """a // b rounded towards minus infinity (b > 0); Triton's // truncates."""
    return tl.where(a >= 0, a // b, -((b - 1 - a) // b))


@triton.jit
def conv2d_bwd_data_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """Backward data for few input channels and a stride (dilation 1): every stride phase at
    once. dx[n, c, i*stride_h + a, j*stride_w + b] for the phases (a, b) are the GEMM's
    columns (a, b, c), stride_h*stride_w*C of them (12 for the first layer, C=3 stride 2, in
    a 16-wide tile where one phase at a time would fill 3 of 16); rows are (n, i, j). The
    reduction runs over the offsets (dr, ds) of dy from (i, j) and over K: dy[n, k, i - dr,
    j - ds] is the same for every phase, and the tap it meets is r = a + pad_h + dr*stride_h
    (zero weight where that falls outside the filter)."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    NC = stride_h * stride_w * C
    M, offs_m, offs_n, img, ii, jj = _phase_tile(N, H, W, stride_h, stride_w, NC, BLOCK_M,
                                                 BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < NC
    c = offs_n % C
    ab = offs_n // C
    pa = ab // stride_w
    pb = ab - pa * stride_w
    dr0 = -((stride_h - 1 + pad_h) // stride_h)
    ds0 = -((stride_w - 1 + pad_w) // stride_w)
    n_dr = _floor_div(R - 1 - pad_h, stride_h) - dr0 + 1
    n_ds = _floor_div(S - 1 - pad_w, stride_w) - ds0 + 1
    y_row = img * syn + g * K * syk
    w_col = c * swc  # w is (G*K, C, R, S): the group selects filters, not channels
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_blocks = tl.cdiv(K, BLOCK_K)
    for t in range(0, n_dr * n_ds * k_blocks):
        tap = t // k_blocks
        kb = t - tap * k_blocks
        dri = tap // n_ds
        dr = dr0 + dri
        ds = ds0 + (tap - dri * n_ds)
        op = ii - dr
        oq = jj - ds
        a_ok = m_ok & (op >= 0) & (op < P) & (oq >= 0) & (oq < Q)
        ks = kb * BLOCK_K + offs_k
        k_ok = ks < K
        a = tl.load(y_ptr + (y_row + op * syh + oq * syw)[:, None] + (ks * syk)[None, :],
                    mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        r = pa + pad_h + dr * stride_h
        s = pb + pad_w + ds * stride_w
        tap_ok = n_ok & (r >= 0) & (r < R) & (s >= 0) & (s < S)
        b = tl.load(w_ptr + (w_col + r * swr + s * sws)[None, :] + ((g * K + ks) * swk)[:, None],
                    mask=k_ok[:, None] & tap_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    hh = ii * stride_h
    ww = jj * stride_w
    ok = (m_ok[:, None] & n_ok[None, :]) & (hh[:, None] + pa[None, :] < H) & (
        ww[:, None] + pb[None, :] < W)
    x_off = (img * sxn + hh * sxh + ww * sxw)[:, None] + (
        (g * C + c) * sxc + pa * sxh + pb * sxw)[None, :]
    tl.store(x_ptr + x_off, acc.to(x_ptr.dtype.element_ty), mask=ok)


@triton.jit
def _pixels(j, PQ, Q, STEP: tl.constexpr):
    """(image, row, column) of output pixel indices j, and the scalar (image, row, column)
    increments of a step of STEP pixels, for _advance."""
    img = j // PQ
    pq = j - img * PQ
    op = pq // Q
    d_img = STEP // PQ
    d_pq = STEP - d_img * PQ
    d_p = d_pq // Q
    return img, op, pq - op * Q, d_img, d_p, d_pq - d_p * Q


@triton.jit
def _advance(img, op, oq, d_img, d_p, d_q, P, Q):
    """Move pixel coordinates on by a step (see _pixels) with two carries, no division."""
    oq = oq + d_q
    cq = oq >= Q
    oq = tl.where(cq, oq - Q, oq)
    op = op + d_p + cq.to(tl.int32)
    cp = op >= P
    op = tl.where(cp, op - P, op)
    img = img + d_img + cp.to(tl.int32)
    return img, op, oq


@triton.jit
def conv2d_bwd_weight(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """dw[g*K+k, c, r, s] = sum over pixels (n, p, q) of dy * x, one tap per program row.

    Program axis 1 is g*R*S + tap, axis 2 the split of the pixel reduction; with SPLIT_K > 1
    each split writes its FP32 partial to ws as [SPLIT_K][R*S][G*K][C], a program's tile
    contiguous along C (vector stores), for conv2d_bwd_weight_reduce (reduce_args walks that
    order)."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    gt = tl.program_id(1)
    g = gt // (R * S)
    rs = gt - g * (R * S)
    r = rs // S
    s = rs - r * S
    split = tl.program_id(2)
    offs_m, offs_n = tile_offsets(K, C, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < K
    n_ok = offs_n < C
    PQ = P * Q
    NPQ = N * PQ
    kb0, kb1 = part_range(tl.cdiv(NPQ, BLOCK_K), SPLIT_K, split, tl.num_programs(2))
    y_col = (g * K + offs_m) * syk
    x_col = (g * C + offs_n) * sxc
    img, op, oq, d_img, d_p, d_q = _pixels(kb0 * BLOCK_K + offs_k, PQ, Q, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        j_ok = kb * BLOCK_K + offs_k < NPQ
        ih = op * stride_h - pad_h + r * dil_h
        iw = oq * stride_w - pad_w + s * dil_w
        x_ok = j_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        # dy's tile read as [pixels, K] and transposed in both layouts: in NHWC that reads K,
        # the contiguous index, last (4-8% less time than first over ten zoo layers,
        # bench/results/conv_ceiling_w_dyt_h200.json).
        a = _load_tile(y_ptr, y_col, img * syn + op * syh + oq * syw, m_ok, j_ok, True)
        b = tl.load(x_ptr + (img * sxn + ih * sxh + iw * sxw)[:, None] + x_col[None, :],
                    mask=x_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        img, op, oq = _advance(img, op, oq, d_img, d_p, d_q, P, Q)
    mask = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        w_off = ((g * K + offs_m) * swk)[:, None] + (offs_n * swc)[None, :] + r * swr + s * sws
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        ws_off = ((split * (R * S) + rs) * (G * K) + g * K + offs_m)[:, None] * C + \
            offs_n[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def conv2d_bwd_weight_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """Backward weights for few input channels: one filter row r per program (axis 1 is
    g*R + r) and the GEMM's N dimension (s, c) flattened, so a program covers a whole row of
    taps (7 x 3 = 21 of 32 for the first layer) instead of padding C to BLOCK_N. The row's
    vertical bound is one compare per pixel, the column offsets are worked out once. Axis 2 is
    the split; partials go to ws as [SPLIT_K][R][G*K][S*C], a program's tile contiguous along
    its (s, c) columns (reduce_args walks them so)."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    gr = tl.program_id(1)
    g = gr // R
    r = gr - g * R
    split = tl.program_id(2)
    SC = S * C
    offs_m, cols = tile_offsets(K, SC, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < K
    n_ok = cols < SC
    s = cols // C
    c = cols - s * C
    x_col = (g * C + c) * sxc + s * dil_w * sxw
    PQ = P * Q
    NPQ = N * PQ
    kb0, kb1 = part_range(tl.cdiv(NPQ, BLOCK_K), SPLIT_K, split, tl.num_programs(2))
    y_col = (g * K + offs_m) * syk
    img, op, oq, d_img, d_p, d_q = _pixels(kb0 * BLOCK_K + offs_k, PQ, Q, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        j_ok = kb * BLOCK_K + offs_k < NPQ
        ih = op * stride_h - pad_h + r * dil_h
        iw0 = oq * stride_w - pad_w
        iw = iw0[:, None] + (s * dil_w)[None, :]
        row_ok = j_ok & (ih >= 0) & (ih < H)
        x_ok = (row_ok[:, None] & n_ok[None, :]) & (iw >= 0) & (iw < W)
        a = _load_tile(y_ptr, y_col, img * syn + op * syh + oq * syw, m_ok, j_ok,
                       True)  # [pixels, K], transposed, as in conv2d_bwd_weight
        b = tl.load(x_ptr + (img * sxn + ih * sxh + iw0 * sxw)[:, None] + x_col[None, :],
                    mask=x_ok, other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        img, op, oq = _advance(img, op, oq, d_img, d_p, d_q, P, Q)
    mask = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        w_off = ((g * K + offs_m) * swk)[:, None] + (c * swc + r * swr + s * sws)[None, :]
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        ws_off = ((split * R + r) * (G * K) + g * K + offs_m)[:, None] * SC + cols[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def conv2d_bwd_weight_reduce(
    ws_ptr, w_ptr, TOTAL, C, R, S, swk, swc, swr, sws, SPLIT_K,
    BLOCK: tl.constexpr, PARTS: tl.constexpr = 1,
):
    """out[i0, i1, i2, i3] = sum of SPLIT_K FP32 partials ([SPLIT_K][TOTAL], TOTAL = I0*C*R*S
    in (i0, i1, i2, i3) order) into a 4-D tensor of any strides: w (k, c, r, s) after backward
    weights, y (n, k, p, q) after forward, x (n, c, h, w) after backward data; see
    conv_triton_spec.reduce_args. PARTS > 1 (the wide object, for small outputs split in
    many parts): a [PARTS, BLOCK] tile of partials a step, summed across its rows at the end,
    so a few programs still keep PARTS * BLOCK loads in flight."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < TOTAL
    if PARTS == 1:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        # SPLIT_K is a run-time value (one object serves every split); four parts' loads at
        # a time are in flight.
        for sp in tl.range(0, SPLIT_K, loop_unroll_factor=4):
            acc += tl.load(ws_ptr + sp * TOTAL + i, mask=ok, other=0.0)
    else:
        rows = tl.arange(0, PARTS)
        tile = tl.zeros((PARTS, BLOCK), dtype=tl.float32)
        for sp in range(0, SPLIT_K, PARTS):
            part = sp + rows
            tile += tl.load(ws_ptr + (part * TOTAL)[:, None] + i[None, :],
                            mask=(part < SPLIT_K)[:, None] & ok[None, :], other=0.0)
        acc = tl.sum(tile, axis=0)
    RS = R * S
    k = i // (C * RS)
    crs = i - k * (C * RS)
    c = crs // RS
    rs = crs - c * RS
    r = rs // S
    s = rs - r * S
    tl.store(w_ptr + k * swk + c * swc + r * swr + s * sws, acc.to(w_ptr.dtype.element_ty),
             mask=ok)


@triton.jit
def transpose_021(
    src_ptr, dst_ptr, B, R, S, SRC_S, DST_B, DST_R,
    BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """dst[b, s, r] = src[b, r, s] for [B][R][S] -> [B][S][R]: NCHW <-> NHWC (b = n, r =
    channels, s = pixels or the reverse) and KCRS <-> KRSC weights. The source's rows are
    SRC_S apart (S where packed; wider where it is a padded tensor read back without its extra
    channels); the destination is [DST_B][S][DST_R], its batches from B and rows from R on
    zero (channels and filters rounded up for the aligned objects). Loads run along s and
    stores along r, both coalesced; Triton turns the tile round in shared memory."""
    rs = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    ss = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    b = tl.program_id(2)
    inside = (ss < S)[None, :]
    ok = (rs < R)[:, None] & inside & (b < B)
    t = tl.load(src_ptr + b * R * SRC_S + rs[:, None] * SRC_S + ss[None, :], mask=ok, other=0.0)
    tl.store(dst_ptr + b * S * DST_R + ss[None, :] * DST_R + rs[:, None], t,
             mask=(rs < DST_R)[:, None] & inside)


#: The tuple arguments of this file's kernels and the flat arguments each holds, in order
#: (see conv_triton_common).
TUPLE_ARGS = CONV_TUPLES

#: The jit functions by the names KERNELS uses.
JIT = {
    "conv2d_fwd": conv2d_fwd,
    "conv2d_fwd_smallc": conv2d_fwd_smallc,
    "conv2d_bwd_data": conv2d_bwd_data,
    "conv2d_bwd_data_smallc": conv2d_bwd_data_smallc,
    "conv2d_bwd_weight": conv2d_bwd_weight,
    "conv2d_bwd_weight_smallc": conv2d_bwd_weight_smallc,
    "conv2d_fwd_packed": conv2d_fwd_packed,
    "conv2d_bwd_data_packed": conv2d_bwd_data_packed,
    "conv2d_bwd_weight_packed": conv2d_bwd_weight_packed,
    "conv2d_bwd_weight_reduce": conv2d_bwd_weight_reduce,
    "transpose_021": transpose_021,
}
