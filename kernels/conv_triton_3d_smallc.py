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
- backward data in two steps: the implicit GEMM reads dy once a tap (27 times for 3x3x3),
  each read filling 1 of 16 columns of dx's tile; here `..._taps` multiplies dy by the
  filters once, every tap's contribution at every output position ([n, g, j, o, p, q], FP32,
  in ws), and `..._gather` sums for each element of dx the taps that reach it.
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
def _reciprocal(d):
    """The multiplier of `_quotient` for a divisor 1 <= d <= 2**10: ceil(2**20 / d)."""
    return (1048576 + d - 1) // d


@triton.jit
def _quotient(j, d, m):
    """j // d by a multiply and a shift (m = `_reciprocal(d)`): exact where 0 <= j and
    j * d < 2**20 (then j * (m * d - 2**20) < 2**20), which MAX_COLUMNS keeps for every
    reduction index of a problem (j < T*R*S*C <= 2**10, d one of C, R*S, S). A signed
    division by a run-time value is a dozen instructions; columns are a thread's 32 in the
    channels-last objects' layout, three divisions each."""
    return (j * m) >> 20


@triton.jit
def _columns(j, C, R, S, dil_d, dil_h, dil_w):
    """(channel, t, r, s, depth, row and column shifts) of flattened reduction indices j =
    tap * C + c."""
    tap = _quotient(j, C, _reciprocal(C))
    t = _quotient(tap, R * S, _reciprocal(R * S))
    rs = tap - t * (R * S)
    r = _quotient(rs, S, _reciprocal(S))
    return j - tap * C, t, r, rs - r * S, t * dil_d, r * dil_h, (rs - r * S) * dil_w


@triton.jit
def _inside(d0, h0, w0, dd, dh, dw, D, H, W):
    """[rows, columns] whether (d0 + dd, h0 + dh, w0 + dw) lies inside D x H x W."""
    return _within(d0[:, None] + dd[None, :], D) & _within(h0[:, None] + dh[None, :], H) & \
        _within(w0[:, None] + dw[None, :], W)


@triton.jit
def _fixed(dims, conv, FIX: tl.constexpr):
    """`dims` and `conv` with what an object was specialised on made constants: FIX's bit 0
    unit strides, bit 1 unit dilations, bit 2 one group, FIX >> 4 (where not 0) the channel
    count. The package's objects take FIX 0; bench/smallc_specialise.py times the others."""
    if FIX & 1:
        conv = (1, 1, 1) + conv[3:]
    if FIX & 2:
        conv = conv[:6] + (1, 1, 1)
    if FIX & 4:
        dims = dims[:12] + (1,)
    if FIX >> 4:
        dims = dims[:1] + (FIX >> 4,) + dims[2:]
    return dims, conv


@triton.jit
def conv3d_fwd_smallc(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, FIX: tl.constexpr = 0,
):
    """y[n, g*K+k, o, p, q] = sum over j = (t, r, s, c) flattened of x * w."""
    dims, conv = _fixed(dims, conv, FIX)
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
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, FIX: tl.constexpr = 0,
):
    """dw[g*K+k, c, t, r, s] = sum over output positions of dy * x, the columns j = (t, r, s,
    c) flattened; axis 2 cuts the positions into parts, each writing its FP32 partial to ws
    ([parts][G*K][T*R*S*C]) where there are several. dy's tile is read as [positions, K] and
    transposed in the kernel (as conv3d_bwd_weight does)."""
    dims, conv = _fixed(dims, conv, FIX)
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


@triton.jit
def conv3d_bwd_data_smallc_taps(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, FIX: tl.constexpr = 0,
):
    """Backward data's first step: ws[n, g, j, o, p, q] (FP32) = sum over k of
    dy[n, g*K+k, o, p, q] * w[g*K+k, c, t, r, s], j = (t, r, s, c) flattened: every tap's
    contribution at every output position, dy read once (the implicit GEMM reads it once a
    tap). Rows the output positions, columns j, the reduction K; for a column the rows' sums
    are contiguous in ws. `conv3d_bwd_data_smallc_gather` sums them into dx."""
    dims, conv = _fixed(dims, conv, FIX)
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    g = tl.program_id(1)
    ZPQ = Z * P * Q
    M = N * ZPQ
    J = T * R * S * C
    offs_m, offs_n = tile_offsets(M, J, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < J
    img, od, op, oq = _positions(offs_m, Z, P, Q)
    a_row = img * syn + g * K * syk + od * syd + op * syh + oq * syw
    tap = offs_n // C
    t, r, s = _tap(tap, R, S)
    w_col = (offs_n - tap * C) * swc + t * swt + r * swr + s * sws
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        a = tl.load(y_ptr + a_row[:, None] + (ks * syk)[None, :],
                    mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + ((g * K + ks) * swk)[:, None] + w_col[None, :],
                    mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    ws_off = ((img * G + g) * J * ZPQ + (offs_m - img * ZPQ))[:, None] + (offs_n * ZPQ)[None, :]
    tl.store(ws_ptr + ws_off, acc, mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def _phase(e, stride):
    """(quotient, remainder) of non-negative e by stride."""
    q = e // stride
    return q, e - q * stride


@triton.jit
def _back(q, rem, dq, drem, stride):
    """(q, rem) of e - dil where (q, rem) are e's by stride and (dq, drem) dil's: the taps'
    output positions moved on without a division."""
    rem = rem - drem
    neg = rem < 0
    return tl.where(neg, q - dq - 1, q - dq), tl.where(neg, rem + stride, rem)


@triton.jit
def conv3d_bwd_data_smallc_gather(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, FIX: tl.constexpr = 0,
):
    """Backward data's second step: dx[n, g*C+c, d, h, w] = sum over the taps (t, r, s) that
    reach (d, h, w) of ws[n, g, (t, r, s, c), o, p, q], where d + pad_d = o*stride_d +
    t*dil_d (and so on). BLOCK_M elements of dx a program, in (n, g, c, d, h, w) order, so a
    tap's reads of ws are contiguous along w; each axis's output position and stride phase
    are moved on from tap to tap without dividing."""
    dims, conv = _fixed(dims, conv, FIX)
    N, C, D, H, W, K, Z, P, Q, T, R, S, G = dims
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w = conv
    sxn, sxc, sxd, sxh, sxw, swk, swc, swt, swr, sws, syn, syk, syd, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    idx = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    ok = idx < N * G * C * D * H * W
    iw = idx % W
    rest = idx // W
    ih = rest % H
    rest = rest // H
    idd = rest % D
    rest = rest // D
    cg = rest % (G * C)
    n = rest // (G * C)
    ZPQ = Z * P * Q
    # ws[n, g, j, ...] with j = tap * C + c: (n*G + g)*J + c = n*G*J + g*J + c and g*J = g*C*TRS.
    g = cg // C
    base = ((n * G + g) * (T * R * S * C) + (cg - g * C)) * ZPQ
    qd0, rd0 = _phase(idd + pad_d, stride_d)
    qh0, rh0 = _phase(ih + pad_h, stride_h)
    qw0, rw0 = _phase(iw + pad_w, stride_w)
    dq_d, dr_d = _phase(dil_d, stride_d)
    dq_h, dr_h = _phase(dil_h, stride_h)
    dq_w, dr_w = _phase(dil_w, stride_w)
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    qd = qd0
    rd = rd0
    tap_step = C * ZPQ
    tap_off = tap_step * 0
    for _t in range(0, T):
        ok_d = ok & (rd == 0) & _within(qd, Z)
        qh = qh0
        rh = rh0
        for _r in range(0, R):
            ok_h = ok_d & (rh == 0) & _within(qh, P)
            row = base + (qd * P + qh) * Q
            qw = qw0
            rw = rw0
            for _s in range(0, S):
                acc += tl.load(ws_ptr + row + qw + tap_off,
                               mask=ok_h & (rw == 0) & _within(qw, Q), other=0.0)
                tap_off += tap_step
                qw, rw = _back(qw, rw, dq_w, dr_w, stride_w)
            qh, rh = _back(qh, rh, dq_h, dr_h, stride_h)
        qd, rd = _back(qd, rd, dq_d, dr_d, stride_d)
    x_off = n * sxn + cg * sxc + idd * sxd + ih * sxh + iw * sxw
    tl.store(x_ptr + x_off, acc.to(x_ptr.dtype.element_ty), mask=ok)


#: The jit functions by the names the spec uses.
JIT = {"conv3d_fwd_smallc": conv3d_fwd_smallc,
       "conv3d_bwd_weight_smallc": conv3d_bwd_weight_smallc,
       "conv3d_bwd_data_smallc_taps": conv3d_bwd_data_smallc_taps,
       "conv3d_bwd_data_smallc_gather": conv3d_bwd_data_smallc_gather}
