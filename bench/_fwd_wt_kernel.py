"""A trial forward kernel that bench/conv_ceiling.py times against the shipped `conv2d_fwd`;
no solver runs it: the shipped kernel with the filter tile read as [K, C] (channels, the
contiguous index in KRSC, last) and transposed in the kernel, where the shipped one reads it as
[C, K] (the contiguous index first), as backward weights gained from reading dy's tile
(bench/_wrw_rows_kernel.py's `conv2d_bwd_weight_t`)."""

from __future__ import annotations

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton import _output_tile
from miopenkernels.kernels.conv_triton_common import (
    carry,
    channel_strides,
    mma,
    part_range,
    within,
)
from miopenkernels.kernels.conv_triton_spec import CONV_TUPLES

TUPLE_ARGS = CONV_TUPLES


@triton.jit
def conv2d_fwd(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
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
    t0, t1 = part_range(R * S * c_blocks, SPLIT_K, tl.program_id(2), tl.num_programs(2))
    rs = t0 // c_blocks
    cb = t0 - rs * c_blocks
    r = rs // S
    s = rs - r * S
    for _ in range(t0, t1):
        dh = r * dil_h
        dw = s * dil_w
        a_ok = m_ok & within(ih0 + dh, H) & within(iw0 + dw, W)
        cs = cb * BLOCK_K + offs_k
        c_ok = cs < C
        a = tl.load(x_ptr + (a_row + (dh * sxh + dw * sxw))[:, None] + (cs * sxc)[None, :],
                    mask=a_ok[:, None] & c_ok[None, :], other=0.0)
        bt = tl.load(w_ptr + (w_col + (r * swr + s * sws))[:, None] + (cs * swc)[None, :],
                     mask=n_ok[:, None] & c_ok[None, :], other=0.0)
        acc = mma(a, tl.trans(bt), acc, PRECISION)
        cb, s = carry(cb + 1, s, c_blocks)
        s, r = carry(s, r, S)
    mask = m_ok[:, None] & n_ok[None, :]
    y_off = (img * syn + op * syh + oq * syw)[:, None] + ((g * K + offs_n) * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
