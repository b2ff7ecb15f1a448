"""2-D forward convolutions of few filters as direct convolutions on the FP32 units.

A layer of 1-8 filters over many channels (a UNet's or a VAE decoder's image or latent output,
320 -> 4 or 128 -> 3 at 3x3) is a GEMM 1-8 columns wide. On matrix cores those columns are
padded to a 16- or 32-wide block, and in FP32 at IEEE accuracy the three-TF32-product
emulation triples what is left: such layers took 5.3-5.4x IEEE cuDNN's GPU time channels-last
(bench/results/fma_h100-6172073/fma_zoo.json). Here a program owns BLOCK_M output positions
and every filter (a block of BLOCK_N >= K), and per filter tap (r, s) walks the channels
BLOCK_K at a time: one BLOCK_M x BLOCK_K tile of x (each position's channels), one BLOCK_N x
BLOCK_K tile of the filters, and BLOCK_M * BLOCK_N * BLOCK_K fused multiply-adds in FP32 into
a sum per (position, filter, channel lane); the lanes are added once, at the end. No product
is padded beyond the filter block, and the sums are IEEE FP32 whatever the inputs' type.

- `conv2d_direct_fma_fewk`: strides in elements in (n, c, h, w) / (k, c, r, s) / (n, k, h, w)
  order. CHANNELS_LAST 1 (NHWC objects): the channel strides are 1, known to the compiler,
  and the tiles run channels fastest (vector loads along each position's channels); 0: any
  strides, positions fastest (a warp's loads along a row of the image in NCHW).

Importing this module needs Triton but no GPU; launch data is in `conv_triton_fewk_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def conv2d_direct_fma_fewk(
    x_ptr, w_ptr, y_ptr, N, C, H, W, K, P, Q, R, S, stride_h, stride_w, pad_h, pad_w, dil_h,
    dil_w, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """y[n, k, p, q] = sum over (r, s, c) of x[n, c, p*stride_h - pad_h + r*dil_h,
    q*stride_w - pad_w + s*dil_w] * w[k, c, r, s], x outside the image zero; K <= BLOCK_N."""
    if CHANNELS_LAST:
        sxc = 1
        swc = 1
        syk = 1
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = offs_m < N * P * Q
    img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    op = pq // Q
    oq = pq % Q
    ih0 = op * stride_h - pad_h
    iw0 = oq * stride_w - pad_w
    x_row = img * sxn + ih0 * sxh + iw0 * sxw
    offs_n = tl.arange(0, BLOCK_N)
    n_ok = offs_n < K
    offs_c = tl.arange(0, BLOCK_K)
    if CHANNELS_LAST:
        # [positions, filters, channels]: channels fastest.
        acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    else:
        # [channels, filters, positions]: positions fastest.
        acc = tl.zeros((BLOCK_K, BLOCK_N, BLOCK_M), dtype=tl.float32)
    for r in range(0, R):
        ih = ih0 + r * dil_h
        h_ok = m_ok & (ih >= 0) & (ih < H)
        for s in range(0, S):
            iw = iw0 + s * dil_w
            ok = h_ok & (iw >= 0) & (iw < W)
            x_tap = x_row + r * dil_h * sxh + s * dil_w * sxw
            w_tap = offs_n * swk + r * swr + s * sws
            for c0 in range(0, C, BLOCK_K):
                cc = c0 + offs_c
                c_ok = cc < C
                if CHANNELS_LAST:
                    a = tl.load(x_ptr + x_tap[:, None] + cc[None, :],
                                mask=ok[:, None] & c_ok[None, :], other=0.0).to(tl.float32)
                    b = tl.load(w_ptr + w_tap[:, None] + cc[None, :],
                                mask=n_ok[:, None] & c_ok[None, :], other=0.0).to(tl.float32)
                    acc += a[:, None, :] * b[None, :, :]
                else:
                    a = tl.load(x_ptr + x_tap[None, :] + (cc * sxc)[:, None],
                                mask=ok[None, :] & c_ok[:, None], other=0.0).to(tl.float32)
                    b = tl.load(w_ptr + w_tap[None, :] + (cc * swc)[:, None],
                                mask=n_ok[None, :] & c_ok[:, None], other=0.0).to(tl.float32)
                    acc += a[:, None, :] * b[:, :, None]
    y_row = img * syn + op * syh + oq * syw
    if CHANNELS_LAST:
        out = tl.sum(acc, axis=2)
        tl.store(y_ptr + y_row[:, None] + offs_n[None, :], out.to(y_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & n_ok[None, :])
    else:
        out = tl.sum(acc, axis=0)
        tl.store(y_ptr + y_row[None, :] + (offs_n * syk)[:, None],
                 out.to(y_ptr.dtype.element_ty), mask=m_ok[None, :] & n_ok[:, None])
