"""3-D convolution of few input channels (a volume's 1-channel or a video's 3-channel stem) as
implicit GEMM on tensor cores (`tl.dot`), its reduction over taps and channels flattened.

The 3-D implicit GEMM (conv_triton_3d.py) runs its reduction as taps outside and channels
inside, BLOCK_K channels a step: with one input channel, 3D U-Net's first layer, each of its 27
steps fills 1 of 16 reduction columns, and the layer took 5-11x cuDNN's time on the H200 on
the copies that pad its channel to 16 (bench/results/zoo_h200-fbw-50040be). Here the reduction
index is j = tap * C + c over T*R*S*C (27 for 3x3x3 on one channel: one 32-wide block):

- forward: rows the output positions (n, o, p, q), columns the filters, BLOCK_K of j a step;
  the column offsets and per-axis shifts of a block are worked out once for every row;
- backward weights: rows the filters, columns j (a whole filter's taps in one tile), the
  reduction every output position cut into as many parts as the grid's axis 2 has; with
  several parts each writes its FP32 partial to ws as [parts][G*K][T*R*S*C], which the 2-D
  family's reduce kernel sums into dw (`conv_triton_3d_smallc_spec.reduce_values`). (The
  taps as rows and the filters as columns, dy read as it lies, took 1.2-2x this one's time on
  the H200: bench/results/README.md.)
Where the filters are few (3D U-Net's 32), forward's narrow tile (BLOCK_N = NARROW_N) keeps
NDHWC's stores along the filters (contiguous there) free of masked lanes.

Sizes, geometry and strides are the 3-D kernels' tuple arguments (`conv_triton_3d_spec.TUPLES`);
importing this module needs Triton but no GPU. How to launch the kernels is plain data in
`conv_triton_3d_smallc_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton import _advance, _pixels
from .conv_triton_3d import _positions, _tap
from .conv_triton_3d_spec import TUPLES
from .conv_triton_common import channel_strides, tile_offsets
from .conv_triton_common import load_tile as _load_tile
from .conv_triton_common import mma as _mma
from .conv_triton_common import within as _within

#: The tuple arguments of the kernels by the flat names of their members (compiler.triton).
TUPLE_ARGS = TUPLES


@triton.jit
def _columns(j, C, R, S, dil_d, dil_h, dil_w):
    """(channel, t, r, s, depth, row and column shifts) of flattened reduction indices j =
    tap * C + c."""
    tap = j // C
    t, r, s = _tap(tap, R, S)
    return j - tap * C, t, r, s, t * dil_d, r * dil_h, s * dil_w


@triton.jit
def _inside(d0, h0, w0, dd, dh, dw, D, H, W):
    """[rows, columns] whether (d0 + dd, h0 + dh, w0 + dw) lies inside D x H x W."""
    return _within(d0[:, None] + dd[None, :], D) & _within(h0[:, None] + dh[None, :], H) & \
        _within(w0[:, None] + dw[None, :], W)


@triton.jit
def conv3d_fwd_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """y[n, g*K+k, o, p, q] = sum over j = (t, r, s, c) flattened of x * w."""
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
    J = T * R * S * C
    for j0 in range(0, J, BLOCK_K):
        j = j0 + offs_k
        j_ok = j < J
        c, t, r, s, dd, dh, dw = _columns(j, C, R, S, dil_d, dil_h, dil_w)
        ok = m_ok[:, None] & j_ok[None, :] & _inside(id0, ih0, iw0, dd, dh, dw, D, H, W)
        a = tl.load(x_ptr + a_row[:, None] + (dd * sxd + dh * sxh + dw * sxw + c * sxc)[None, :],
                    mask=ok, other=0.0)
        b = tl.load(w_ptr + w_col[None, :] + (c * swc + t * swt + r * swr + s * sws)[:, None],
                    mask=j_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    y_off = (img * syn + od * syd + op * syh + oq * syw)[:, None] + \
        ((g * K + offs_n) * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def conv3d_bwd_weight_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    """dw[g*K+k, c, t, r, s] = sum over output positions of dy * x, the columns j = (t, r, s,
    c) flattened; axis 2 cuts the positions into parts, each writing its FP32 partial to ws
    ([parts][G*K][T*R*S*C]) where there are several. dy's tile is read as [positions, K] and
    transposed in the kernel (as conv3d_bwd_weight does)."""
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w = conv
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    part = tl.program_id(2)
    parts = tl.num_programs(2)
    J = T * R * S * C
    offs_m, offs_n = tile_offsets(K, J, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < K
    n_ok = offs_n < J
    c, t, r, s, dd, dh, dw = _columns(offs_n, C, R, S, dil_d, dil_h, dil_w)
    x_col = (g * C + c) * sxc + dd * sxd + dh * sxh + dw * sxw
    y_col = (g * K + offs_m) * syk
    PQ = P * Q
    M = N * Z * PQ
    blocks = tl.cdiv(M, BLOCK_K)
    per_part = tl.cdiv(blocks, parts)
    kb0 = part * per_part
    kb1 = tl.minimum(kb0 + per_part, blocks)
    # (n*Z + o, p, q) of the step's positions, moved on without a division per step.
    plane, op, oq, d_plane, d_p, d_q = _pixels(kb0 * BLOCK_K + offs_k, PQ, Q, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        j_ok = kb * BLOCK_K + offs_k < M
        img = plane // Z
        od = plane - img * Z
        id0 = od * stride_d - pad_d
        ih0 = op * stride_h - pad_h
        iw0 = oq * stride_w - pad_w
        a = _load_tile(y_ptr, y_col, img * syn + od * syd + op * syh + oq * syw, m_ok, j_ok,
                       True)
        ok = j_ok[:, None] & n_ok[None, :] & _inside(id0, ih0, iw0, dd, dh, dw, D, H, W)
        b = tl.load(x_ptr + (img * sxn + id0 * sxd + ih0 * sxh + iw0 * sxw)[:, None]
                    + x_col[None, :], mask=ok, other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        plane, op, oq = _advance(plane, op, oq, d_plane, d_p, d_q, P, Q)
    mask = m_ok[:, None] & n_ok[None, :]
    if parts == 1:
        w_off = ((g * K + offs_m) * swk)[:, None] + \
            (c * swc + t * swt + r * swr + s * sws)[None, :]
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        ws_off = ((part * G + g) * K + offs_m)[:, None] * J + offs_n[None, :]
        tl.store(ws_ptr + ws_off, acc, mask=mask)


#: The jit functions by the names the spec uses.
JIT = {"conv3d_fwd_smallc": conv3d_fwd_smallc,
       "conv3d_bwd_weight_smallc": conv3d_bwd_weight_smallc}
