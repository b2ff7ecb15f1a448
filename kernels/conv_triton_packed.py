"""Grouped convolutions of few channels and filters a group (ResNeXt's 4, RegNet's 8) as
implicit GEMM on tensor cores, several groups to a tile: the "packed" kernels of the implicit
GEMM family (conv_triton.py re-exports them; their launch data is in conv_triton_spec).

A group of 8 channels and 8 filters is a GEMM 8 wide and 8 deep per tap, too narrow for a
matrix instruction (16 deep at least) and a waste of the group-axis tiles, which run one group
each. Here a tile holds GB = BLOCK_N // K consecutive groups (backward data: BLOCK_N // C;
backward weights: the groups that fit both BLOCK_M filters and BLOCK_N channels): its columns
are their filters, its reduction their channels, and the weight tile it multiplies is
block-diagonal, the weights of a filter's own group and zeros elsewhere (masked loads, no
memory read). The tensor cores do GB times the useful multiply-adds, but a layer of 8 a group
is memory-bound there, and the activations' loads run along GB * C contiguous channels in
channels-last layouts (vectors where the object assumes multiples of 8).

The programs' axis 0 walks (row tiles) x (group tiles) in grouped order; forward and backward
data take no split (axis 2 is backward data's stride phase), backward weights split its pixel
reduction as conv2d_bwd_weight does (axis 1 the filter tap, axis 2 the split), writing the
diagonal blocks' FP32 partials in that kernel's [SPLIT_K][R*S][G*K][C] order for its reduce.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import channel_strides, part_range, phase_tap, tile_ids
from .conv_triton_common import first_taps as _first_taps
from .conv_triton_common import load_tile as _load_tile
from .conv_triton_common import mma as _mma
from .conv_triton_spec import CONV_TUPLES

__all__ = ["conv2d_fwd_packed", "conv2d_bwd_data_packed", "conv2d_bwd_weight_packed",
           "TUPLE_ARGS"]

#: The tuple arguments of these kernels (the implicit GEMM's: see conv_triton_common).
TUPLE_ARGS = CONV_TUPLES


@triton.jit
def _dense(C, K, GB, sxw, syw, G, SPAN: tl.constexpr, CHANNELS_LAST: tl.constexpr):
    """Whether a tile's groups span exactly SPAN channels and SPAN filters of channels-last x
    and y whose pixels hold exactly the G groups' channels and filters (C == K, GB * C ==
    SPAN, sxw == G * C, syw == G * K). Then a tile's first channel is a multiple of SPAN and
    its bounds are sxw and syw, which an aligned object assumes multiples of 8: its loads and
    stores along channels are vectors, as a group of 4 channels alone would not allow."""
    dense = False
    if CHANNELS_LAST:
        dense = (C == K) & (GB * C == SPAN) & (sxw == G * C) & (syw == G * K)
    return dense


@triton.jit
def _fwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              PRECISION: tl.constexpr, DENSE: tl.constexpr):
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    M = N * P * Q
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    j = tl.arange(0, BLOCK_N)
    if DENSE:  # the tile's first channel and filter: pid_g * BLOCK_N (see _dense)
        f = pid_g * BLOCK_N + j
        n_ok = f < syw
        CB = BLOCK_N
    else:
        f = pid_g * GB * K + j  # the tile's filters
        n_ok = (j < GB * K) & (f < G * K)
        CB = GB * C  # the channels of the tile's groups
    fg = f // K
    m_ok = offs_m < M
    img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    op = pq // Q
    oq = pq % Q
    ih0 = op * stride_h - pad_h
    iw0 = oq * stride_w - pad_w
    i = tl.arange(0, BLOCK_K)
    c_blocks = tl.cdiv(CB, BLOCK_K)
    RS = R * S
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, c_blocks * RS):
        cb = t // RS
        rs = t - cb * RS
        r = rs // S
        s = rs - r * S
        ih = ih0 + r * dil_h
        iw = iw0 + s * dil_w
        a_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        ci = cb * BLOCK_K + i
        if DENSE:
            cs = pid_g * BLOCK_N + ci
            c_ok = (ci < BLOCK_N) & (cs < sxw)
        else:
            cs = pid_g * CB + ci
            c_ok = (ci < CB) & (cs < G * C)
        cg = cs // C
        a = tl.load(x_ptr + (img * sxn + ih * sxh + iw * sxw)[:, None] + (cs * sxc)[None, :],
                    mask=a_ok[:, None] & c_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (f * swk + r * swr + s * sws)[None, :] + ((cs - cg * C) * swc)[:, None],
                    mask=(c_ok[:, None] & n_ok[None, :]) & (cg[:, None] == fg[None, :]),
                    other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    y_off = (img * syn + op * syh + oq * syw)[:, None] + (f * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def conv2d_fwd_packed(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """y[n, f, p, q] = sum over taps, then the channels of f's group, of x * w; a tile's
    columns are the filters of GB = BLOCK_N // K groups, its reduction their GB * C channels."""
    N, C, H, W, K, P, Q, R, S, G = dims
    strides = channel_strides(strides, CHANNELS_LAST)
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    GB = BLOCK_N // K
    pid_m, pid_g = tile_ids(tl.program_id(0), tl.cdiv(N * P * Q, BLOCK_M), tl.cdiv(G, GB),
                            GROUP_M)
    if _dense(C, K, GB, sxw, syw, G, BLOCK_N, CHANNELS_LAST):
        _fwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB, BLOCK_M,
                  BLOCK_N, BLOCK_K, PRECISION, True)
    else:
        _fwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB, BLOCK_M,
                  BLOCK_N, BLOCK_K, PRECISION, False)


@triton.jit
def _bwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB, ph, pw,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              PRECISION: tl.constexpr, DENSE: tl.constexpr):
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    Hs = tl.cdiv(H, stride_h)
    Ws = tl.cdiv(W, stride_w)
    M = N * Hs * Ws
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    img = offs_m // (Hs * Ws)
    hw = offs_m % (Hs * Ws)
    hh = hw // Ws
    ww = hw % Ws
    ih = ph + hh * stride_h
    iw = pw + ww * stride_w
    m_ok = (offs_m < M) & (ih < H) & (iw < W)
    j = tl.arange(0, BLOCK_N)
    if DENSE:  # the tile's first channel and filter: pid_g * BLOCK_N (see _dense)
        c = pid_g * BLOCK_N + j
        n_ok = c < sxw
        KB = BLOCK_N
    else:
        c = pid_g * GB * C + j  # the tile's channels
        n_ok = (j < GB * C) & (c < G * C)
        KB = GB * K  # the filters of the tile's groups
    cg = c // C
    i = tl.arange(0, BLOCK_K)
    r0, r_step, n_r = _first_taps(ph, pad_h, dil_h, stride_h, R)
    s0, s_step, n_s = _first_taps(pw, pad_w, dil_w, stride_w, S)
    k_blocks = tl.cdiv(KB, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, n_r * n_s * k_blocks):
        kb, r, s, op, oq, a_ok = phase_tap(t, k_blocks, n_s, r0, r_step, s0, s_step, hh, ww, ph,
                                           pw, pad_h, pad_w, dil_h, dil_w, stride_h, stride_w,
                                           P, Q, m_ok)
        ki = kb * BLOCK_K + i
        if DENSE:
            kf = pid_g * BLOCK_N + ki
            k_ok = (ki < BLOCK_N) & (kf < syw)
        else:
            kf = pid_g * KB + ki
            k_ok = (ki < KB) & (kf < G * K)
        kg = kf // K
        a = tl.load(y_ptr + (img * syn + op * syh + oq * syw)[:, None] + (kf * syk)[None, :],
                    mask=a_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (kf * swk)[:, None] + ((c - cg * C) * swc + r * swr + s * sws)[None, :],
                    mask=(k_ok[:, None] & n_ok[None, :]) & (kg[:, None] == cg[None, :]),
                    other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    x_off = (img * sxn + ih * sxh + iw * sxw)[:, None] + (c * sxc)[None, :]
    tl.store(x_ptr + x_off, acc.to(x_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def conv2d_bwd_data_packed(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """dx[n, c, h, w] = sum over the taps reaching (h, w), then the filters of c's group, of
    dy * w, one stride phase per program axis 2 (as conv2d_bwd_data); a tile's columns are the
    channels of GB = BLOCK_N // C groups, its reduction their GB * K filters."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    strides = channel_strides(strides, CHANNELS_LAST)
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    GB = BLOCK_N // C
    phase = tl.program_id(2)
    ph = phase // stride_w
    pw = phase % stride_w
    M = N * tl.cdiv(H, stride_h) * tl.cdiv(W, stride_w)
    pid_m, pid_g = tile_ids(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(G, GB), GROUP_M)
    if _dense(C, K, GB, sxw, syw, G, BLOCK_N, CHANNELS_LAST):
        _bwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB, ph, pw,
                  BLOCK_M, BLOCK_N, BLOCK_K, PRECISION, True)
    else:
        _bwd_body(x_ptr, w_ptr, y_ptr, dims, conv, strides, pid_m, pid_g, GB, ph, pw,
                  BLOCK_M, BLOCK_N, BLOCK_K, PRECISION, False)


@triton.jit
def _wrw_body(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, pid_g, GB, SPLIT_K: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr):
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    rs = tl.program_id(1)
    r = rs // S
    s = rs - r * S
    split = tl.program_id(2)
    ii = tl.arange(0, BLOCK_M)
    j = tl.arange(0, BLOCK_N)
    f = pid_g * GB * K + ii
    m_ok = (ii < GB * K) & (f < G * K)
    c = pid_g * GB * C + j
    n_ok = (j < GB * C) & (c < G * C)
    fg = f // K
    cg = c // C
    offs_k = tl.arange(0, BLOCK_K)
    PQ = P * Q
    NPQ = N * PQ
    kb0, kb1 = part_range(tl.cdiv(NPQ, BLOCK_K), SPLIT_K, split, tl.num_programs(2))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        jj = kb * BLOCK_K + offs_k
        j_ok = jj < NPQ
        img = jj // PQ
        pq = jj - img * PQ
        op = pq // Q
        oq = pq - op * Q
        ih = op * stride_h - pad_h + r * dil_h
        iw = oq * stride_w - pad_w + s * dil_w
        x_ok = j_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = _load_tile(y_ptr, f * syk, img * syn + op * syh + oq * syw, m_ok, j_ok,
                       True)  # [pixels, filters], transposed, as in conv2d_bwd_weight
        b = tl.load(x_ptr + (img * sxn + ih * sxh + iw * sxw)[:, None] + (c * sxc)[None, :],
                    mask=x_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    mask = (m_ok[:, None] & n_ok[None, :]) & (fg[:, None] == cg[None, :])
    cl = c - cg * C  # the channel within its group
    if SPLIT_K == 1:
        w_off = (f * swk)[:, None] + (cl * swc)[None, :] + r * swr + s * sws
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        ws_off = ((split * (R * S) + rs) * (G * K) + f)[:, None] * C + cl[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


@triton.jit
def conv2d_bwd_weight_packed(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """dw[f, c, r, s] = sum over pixels of dy[f] * x[c of f's group], one tap per program
    axis 1, the pixels split over axis 2; a tile holds GB groups' filters (rows) and channels
    (columns), GB the most that fit both, and keeps its diagonal blocks."""
    N, C, H, W, K, P, Q, R, S, G = dims
    strides = channel_strides(strides, CHANNELS_LAST)
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = strides
    GB = tl.minimum(BLOCK_M // K, BLOCK_N // C)
    # One path only: a second (the forward's `_dense` one) doubled the shared memory of the
    # pipelined loads (393,216 bytes at 256x256x64 and three stages, over sm90's 232,448).
    _wrw_body(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, tl.program_id(0), GB, SPLIT_K,
              BLOCK_M, BLOCK_N, BLOCK_K, CHANNELS_LAST, PRECISION)
