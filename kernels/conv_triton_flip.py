"""Filters flipped and transposed: a layer's backward data at stride 1 as a forward
convolution.

At stride 1, dx[n, c, h, w] = sum over (k, r, s) of dy[n, k, h + pad_h - r*dil_h,
w + pad_w - s*dil_w] * w[k, c, r, s]: the forward convolution of dy with the filters
w'[c, k, r, s] = w[k, c, R-1-r, S-1-s] (C filters over K channels), padded
dil*(R-1) - pad. The few-filter backward data (solvers/triton_fma_bwd.py) runs this kernel
first, into its workspace, then the few-filter forward kernel (kernels/conv_triton_fewk.py).

- `flip_filters`: src [k, c, r, s] of any strides into dst[c, k, r, s] of the strides given
  (dst's k stride 1 for the channels-last forward objects).

Importing this module needs Triton but no GPU; launch data is in `conv_triton_fewk_bwd_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def flip_filters(
    src_ptr, dst_ptr, K, C, R, S, ssk, ssc, ssr, sss, sdc, sdk, sdr, sds,
    BLOCK: tl.constexpr,
):
    """dst[c, k, R-1-r, S-1-s] = src[k, c, r, s] for the K*C*R*S weights, a block a program
    (in the source's (k, c, r, s) order)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < K * C * R * S
    s = i % S
    t = i // S
    r = t % R
    t = t // R
    c = t % C
    k = t // C
    v = tl.load(src_ptr + k * ssk + c * ssc + r * ssr + s * sss, mask=ok)
    tl.store(dst_ptr + c * sdc + k * sdk + (R - 1 - r) * sdr + (S - 1 - s) * sds, v, mask=ok)
