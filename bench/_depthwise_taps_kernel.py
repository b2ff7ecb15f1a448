"""The depthwise forward with its filter's size fixed at compile time (TAPS_R x TAPS_S): the
variant bench/depthwise_tiles.py measures beside the package's `depthwise_conv`, whose R and S
are run-time loop bounds. With the taps unrolled, a program issues every tap's load at once
instead of one tap after the other."""

from __future__ import annotations

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton_depthwise import _direct_tile


@triton.jit
def depthwise_conv_taps(
    src_ptr, w_ptr, dst_ptr, C, SH, SW, DH, DW, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw, swc, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
):
    n, c, di, dj, pix_ok, c_ok = _direct_tile(C, DH, DW, BLOCK_M, BLOCK_N)
    if CHANNELS_LAST:
        src_c = c
        dst_c = c
    else:
        src_c = c * ssc
        dst_c = c * sdc
    src = src_ptr + n * ssn + src_c[None, :]
    w_c = w_ptr + c * swc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in tl.static_range(TAPS_R):
        u = di * stride_h - pad_h + r * dil_h
        u_ok = (u >= 0) & (u < SH)
        for s in tl.static_range(TAPS_S):
            v = dj * stride_w - pad_w + s * dil_w
            ok = pix_ok & u_ok & (v >= 0) & (v < SW)
            a = tl.load(src + (u * ssh + v * ssw)[:, None], mask=ok[:, None] & c_ok[None, :],
                        other=0.0)
            b = tl.load(w_c + r * swr + s * sws, mask=c_ok, other=0.0)
            acc += a.to(tl.float32) * b.to(tl.float32)[None, :]
    tl.store(dst_ptr + n * sdn + (di * sdh + dj * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & c_ok[None, :])
