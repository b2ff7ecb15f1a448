"""Two forward kernels of few input channels beside the one kernels/conv_triton_3d_smallc.py
ships (`conv3d_fwd_smallc`, its column index split by a multiply and a shift), for
bench/smallc_fwd_variants.py:

- `conv3d_fwd_smallc_divide`: the same kernel splitting its columns by signed divisions
  (what the package shipped before);
- `conv3d_fwd_smallc_taps`: the depth taps as a loop, the columns (r, s, c) flattened: a
  block's column offsets and in-plane bounds worked out once for every depth tap.

Same arguments as the shipped kernel (and its helpers); needs Triton.
"""

from __future__ import annotations

import types
from typing import Any

import triton
import triton.language as tl
from miopenkernels.kernels import conv_triton_3d_smallc as _shipped
from miopenkernels.kernels.conv_triton_3d import _positions, _tap
from miopenkernels.kernels.conv_triton_3d_smallc import TUPLE_ARGS as TUPLE_ARGS
from miopenkernels.kernels.conv_triton_3d_smallc import _columns, _fixed
from miopenkernels.kernels.conv_triton_common import channel_strides, tile_offsets
from miopenkernels.kernels.conv_triton_common import mma as _mma
from miopenkernels.kernels.conv_triton_common import within as _within


@triton.jit
def _columns_divide(j, C, R, S, dil_d, dil_h, dil_w):
    """`_columns` by signed divisions."""
    tap = j // C
    t, r, s = _tap(tap, R, S)
    return j - tap * C, t, r, s, t * dil_d, r * dil_h, s * dil_w


def _rebound(kernel: Any, name: str, **helpers: Any) -> Any:
    """`kernel` (a JITFunction) under another name with some of the helpers it calls replaced:
    the same source, compiled against `helpers` in place of its module's."""
    fn = kernel.fn
    scope = {**fn.__globals__, **helpers}
    return triton.jit(types.FunctionType(fn.__code__, scope, name, fn.__defaults__))


#: The shipped forward kernel with its columns split by signed divisions.
conv3d_fwd_smallc_divide = _rebound(_shipped.conv3d_fwd_smallc, "conv3d_fwd_smallc_divide",
                                    _columns=_columns_divide)


@triton.jit
def conv3d_fwd_smallc_taps(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, FIX: tl.constexpr = 0,
):
    """y[n, g*K+k, o, p, q] = sum over the depth taps t, then over j = (r, s, c) flattened,
    of x * w. A block's column offsets and in-plane bounds are worked out once for all T
    depth taps; a tap then costs an add per element for the address and an AND for the
    mask (as conv_triton.conv2d_fwd_smallc's filter rows)."""
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
    a_row = img * sxn + g * C * sxc + ih0 * sxh + iw0 * sxw
    w_col = (g * K + offs_n) * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    J = R * S * C
    for j0 in range(0, J, BLOCK_K):
        j = j0 + offs_k
        j_ok = j < J
        c, _, r, s, _, dh, dw = _columns(j, C, R, S, dil_d, dil_h, dil_w)
        plane_ok = m_ok[:, None] & j_ok[None, :] & \
            _within(ih0[:, None] + dh[None, :], H) & _within(iw0[:, None] + dw[None, :], W)
        col = dh * sxh + dw * sxw + c * sxc
        w_tap = c * swc + r * swr + s * sws
        for t in range(0, T):
            idd = id0 + t * dil_d
            a = tl.load(x_ptr + (a_row + idd * sxd)[:, None] + col[None, :],
                        mask=plane_ok & _within(idd, D)[:, None], other=0.0)
            b = tl.load(w_ptr + w_col[None, :] + (t * swt + w_tap)[:, None],
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0)
            acc = _mma(a, b, acc, PRECISION)
    y_off = (img * syn + od * syd + op * syh + oq * syw)[:, None] + \
        ((g * K + offs_n) * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])
