"""Few-channel 2-D forward convolutions as direct convolutions on the FP32 units.

An image stem (3 or 4 input channels: RGB, RGBA, a latent's 4) reduces over R*S*C = 27-147
products per output. On matrix cores that reduction is padded to 16- or 32-wide blocks, and in
FP32 the three-TF32-product emulation triples it: the stems took 2.6-4.0x IEEE cuDNN's GPU
time on the H200 (bench/results/zoo_h200-fp32-every4-ef1efe1). Here a program owns a
BLOCK_M x BLOCK_N tile of outputs (rows: output positions n, p, q; columns: filters) and, per
filter tap (r, s) and channel c, adds one column of x (a position each row) times one row of
the filters: BLOCK_M * BLOCK_N fused multiply-adds in FP32, exact as IEEE FP32 sums are, no
step padded.

- `conv2d_direct_fma`: strides in elements in (n, c, h, w) / (k, c, r, s) / (n, k, h, w) order.
  CHANNELS_LAST 1 (NHWC objects): the channel strides are 1, known to the compiler, so that y's
  tile stores along filters; 0: any strides.

Importing this module needs Triton but no GPU; launch data is in `conv_triton_fma_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import tile_offsets


@triton.jit
def conv2d_direct_fma(
    x_ptr, w_ptr, y_ptr, N, C, H, W, K, P, Q, R, S, stride_h, stride_w, pad_h, pad_w, dil_h,
    dil_w, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """y[n, k, p, q] = sum over (r, s, c) of x[n, c, p*stride_h - pad_h + r*dil_h,
    q*stride_w - pad_w + s*dil_w] * w[k, c, r, s], x outside the image zero."""
    if CHANNELS_LAST:
        sxc = 1
        swc = 1
        syk = 1
    offs_m, offs_n = tile_offsets(N * P * Q, K, BLOCK_M, BLOCK_N, GROUP_M)
    m_ok = offs_m < N * P * Q
    n_ok = offs_n < K
    img = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    op = pq // Q
    oq = pq % Q
    ih0 = op * stride_h - pad_h
    iw0 = oq * stride_w - pad_w
    x_row = img * sxn + ih0 * sxh + iw0 * sxw
    w_col = offs_n * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(0, R):
        ih = ih0 + r * dil_h
        h_ok = m_ok & (ih >= 0) & (ih < H)
        for s in range(0, S):
            iw = iw0 + s * dil_w
            ok = h_ok & (iw >= 0) & (iw < W)
            base = x_row + r * dil_h * sxh + s * dil_w * sxw
            tap = w_col + r * swr + s * sws
            for c in range(0, C):
                a = tl.load(x_ptr + base + c * sxc, mask=ok, other=0.0).to(tl.float32)
                b = tl.load(w_ptr + tap + c * swc, mask=n_ok, other=0.0).to(tl.float32)
                acc += a[:, None] * b[None, :]
    y_off = (img * syn + op * syh + oq * syw)[:, None] + (offs_n * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])
