"""A trial depthwise backward-weights kernel that bench/depthwise_wrw_taps.py times against the
shipped one (`conv_triton_depthwise.depthwise_conv_wrw`); no solver runs it.

The shipped kernel gives each filter row its programs (program axis 1), so a program reads
its positions' dy once per row and R programs read it in all. Here a program takes every tap
at once: it reads a block of BLOCK_M output positions' dy [BLOCK_M, BLOCK_N channels] once and
x at every tap [BLOCK_M, TAPS, BLOCK_N] (TAPS a power of two at least R * S), and keeps the
products in a [BLOCK_M, TAPS, BLOCK_N] FP32 accumulator summed over the positions at the end.
Program axis 0 is the channel block, axis 1 the part of the N * P * Q positions; with several
parts each writes its FP32 partial to ws as [part][c][r * S + s], the shipped kernel's order,
so `conv2d_bwd_weight_reduce` finishes it with the same arguments.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def depthwise_wrw_taps(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, H, W, P, Q, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, sxn, sxc, sxh, sxw, syn, syc, syh, syw, swc, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAPS: tl.constexpr,
):
    """dw[c, r, s] = sum over n, p, q of dy[n, c, p, q] * x[n, c, p * stride_h - pad_h +
    r * dil_h, q * stride_w - pad_w + s * dil_w], every tap (r, s) of the program's channels."""
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = c < C
    part = tl.program_id(1)
    parts = tl.num_programs(1)
    t = tl.arange(0, TAPS)
    r = t // S
    s = t - r * S
    t_ok = t < R * S
    pq = P * Q
    npq = N * pq
    blocks = tl.cdiv(npq, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    acc = tl.zeros((BLOCK_M, TAPS, BLOCK_N), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        idx = b * BLOCK_M + tl.arange(0, BLOCK_M)
        ok = idx < npq
        n = idx // pq
        pix = idx - n * pq
        i = pix // Q
        j = pix - i * Q
        g = tl.load(y_ptr + (n * syn + i * syh + j * syw)[:, None] + (c * syc)[None, :],
                    mask=ok[:, None] & c_ok[None, :], other=0.0)
        u = (i * stride_h - pad_h)[:, None] + (r * dil_h)[None, :]
        v = (j * stride_w - pad_w)[:, None] + (s * dil_w)[None, :]
        tap_ok = ok[:, None] & t_ok[None, :] & (u >= 0) & (u < H) & (v >= 0) & (v < W)
        a = tl.load(x_ptr + (n * sxn)[:, None, None] + (u * sxh + v * sxw)[:, :, None]
                    + (c * sxc)[None, None, :],
                    mask=tap_ok[:, :, None] & c_ok[None, None, :], other=0.0)
        acc += a.to(tl.float32) * g.to(tl.float32)[:, None, :]
    total = tl.sum(acc, axis=0)  # [TAPS, BLOCK_N]
    mask = t_ok[:, None] & c_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + (c * swc)[None, :] + (r * swr + s * sws)[:, None],
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + ((part * C + c) * (R * S))[None, :] + t[:, None], total, mask=mask)


def taps_for(r: int, s: int) -> int:
    """TAPS for an R x S filter: the least power of two at least R * S."""
    return int(triton.next_power_of_2(r * s))
