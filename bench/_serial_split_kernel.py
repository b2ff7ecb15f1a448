"""The forward implicit GEMM with its split reduction finished in the same launch: the kernel
bench/serial_split.py measures against the two-launch split (conv2d_fwd, then
conv2d_bwd_weight_reduce) and against no split.

Each of the SPLIT_K programs of an output tile writes its FP32 partial tile, contiguous, to
ws[tile][split]; then one thread takes a ticket from the tile's counter (sem[tile], an atomic
add with release and acquire order after a block barrier). The program that draws the last
ticket adds the other parts to its own accumulator, stores the output and sets the counter back
to 0, so the counters are zero again after every launch (a graph replays it as it is).
"""

from __future__ import annotations

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton import _mma, _output_tile
from miopenkernels.kernels.conv_triton_common import channel_strides, split_range
from miopenkernels.kernels.conv_triton_spec import CONV_TUPLES

TUPLE_ARGS = CONV_TUPLES


@triton.jit
def conv2d_fwd_serial(
    x_ptr, w_ptr, y_ptr, ws_ptr, sem_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
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
    x_row = img * sxn + g * C * sxc
    w_col = (g * K + offs_n) * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    c_blocks = tl.cdiv(C, BLOCK_K)
    split = tl.program_id(2)
    t0, t1 = split_range(R * S * c_blocks, SPLIT_K, split)
    for t in range(t0, t1):
        rs = t // c_blocks
        cb = t - rs * c_blocks
        r = rs // S
        s = rs - r * S
        ih = ih0 + r * dil_h
        iw = iw0 + s * dil_w
        a_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        cs = cb * BLOCK_K + offs_k
        c_ok = cs < C
        a = tl.load(x_ptr + (x_row + ih * sxh + iw * sxw)[:, None] + (cs * sxc)[None, :],
                    mask=a_ok[:, None] & c_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (w_col + r * swr + s * sws)[None, :] + (cs * swc)[:, None],
                    mask=c_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    mask = m_ok[:, None] & n_ok[None, :]
    y_off = (img * syn + op * syh + oq * syw)[:, None] + ((g * K + offs_n) * syk)[None, :]
    if SPLIT_K == 1:
        tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        tile = g * tl.num_programs(0) + tl.program_id(0)
        here = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        part = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)
        tl.store(part + split * (BLOCK_M * BLOCK_N) + here, acc, cache_modifier=".cg")
        tl.debug_barrier()
        ticket = tl.atomic_add(sem_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if ticket == SPLIT_K - 1:
            for other in range(0, SPLIT_K):
                if other != split:
                    acc += tl.load(part + other * (BLOCK_M * BLOCK_N) + here,
                                   cache_modifier=".cg")
            tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
            tl.atomic_xchg(sem_ptr + tile, 0, sem="relaxed", scope="gpu")
