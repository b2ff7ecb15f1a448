"""kn2row's second step: a layer's output as the sum of its filter taps' shifted planes.

The kn2row solvers (solvers/triton_kn2row.py) write Z, the 1x1 GEMM of the layer's input
against every tap's filters at once, into the workspace; this kernel sums, per output element,
the R*S values of Z that its taps read (launch data and the algebra in
`conv_triton_kn2row_spec`).

- `tap_sum`: out[n, o, a, b] = sum over (r, s) of Z[n, ((R-1-r)*S + (S-1-s))*KO + o, ih, iw],
  ih = (a*mul_h + off_h + r*step_h) / div_h where that is whole and inside Z (iw likewise);
  strides in elements in (n, o, h, w) order for both. CHANNELS_LAST 1: a program's elements
  run channels fastest (the output's and Z's contiguous axis in NHWC), else columns fastest.
  Sums in FP32.

Importing this module needs Triton but no GPU.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def tap_sum(
    z_ptr, y_ptr, N, KO, P, Q, HZ, WZ, R, S, mul_h, mul_w, off_h, off_w, step_h, step_w,
    div_h, div_w, szn, szc, szh, szw, syn, syk, syh, syw,
    BLOCK: tl.constexpr, CHANNELS_LAST: tl.constexpr,
):
    """A BLOCK of output elements a program, in the output's memory order."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < N * KO * P * Q
    if CHANNELS_LAST:
        o = i % KO
        t = i // KO
        b = t % Q
        t = t // Q
        a = t % P
        n = t // P
    else:
        b = i % Q
        t = i // Q
        a = t % P
        t = t // P
        o = t % KO
        n = t // KO
    z_img = z_ptr + n * szn
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(0, R):
        hn = a * mul_h + off_h + r * step_h
        ih = hn // div_h
        h_ok = ok & (hn >= 0) & (hn - ih * div_h == 0) & (ih < HZ)
        for s in range(0, S):
            wn = b * mul_w + off_w + s * step_w
            iw = wn // div_w
            w_ok = h_ok & (wn >= 0) & (wn - iw * div_w == 0) & (iw < WZ)
            j = ((R - 1 - r) * S + (S - 1 - s)) * KO + o
            v = tl.load(z_img + j * szc + ih * szh + iw * szw, mask=w_ok, other=0.0)
            acc += v.to(tl.float32)
    tl.store(y_ptr + n * syn + o * syk + a * syh + b * syw, acc.to(y_ptr.dtype.element_ty),
             mask=ok)
