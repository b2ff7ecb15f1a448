"""The im2col backward weights' first step: the column matrix of a layer's narrow side.

The im2col solvers (solvers/blas_im2col.py) write, into the workspace, one row per pixel of
the rows' grid (N x A x B) and one column per (channel, tap) of the narrow side; the GEMM
library then takes the layer's backward weights as one product of it with the wide side
(launch data and the algebra in `conv_triton_im2col_spec`).

- `im2col_gather`: col[(n, a, b), j] = src[n, u, ih, iw], ih = (a*mul_h + off_h +
  r*step_h) / div_h where that is whole and inside the source (iw likewise), zero elsewhere;
  j = (r*S + s)*U + u (taps_first 1) or (u*R + r)*S + s; the source's strides in elements in
  (n, u, h, w) order; the column matrix dense, row-major. A program writes BLOCK consecutive
  elements of it.

Importing this module needs Triton but no GPU.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def im2col_gather(
    src_ptr, col_ptr, N, U, A, B, HS, WS, R, S, mul_h, mul_w, off_h, off_w, step_h, step_w,
    div_h, div_w, ssn, ssu, ssh, ssw, taps_first,
    BLOCK: tl.constexpr,
):
    """BLOCK elements of the column matrix a program, in its memory order."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = U * R * S
    ok = i < N * A * B * cols
    j = i % cols
    row = i // cols
    b = row % B
    t = row // B
    a = t % A
    n = t // A
    # taps first: j = (r*S + s)*U + u; else j = (u*R + r)*S + s
    u = tl.where(taps_first != 0, j % U, j // (R * S))
    t = tl.where(taps_first != 0, j // U, j % (R * S))
    s = t % S
    r = t // S
    hn = a * mul_h + off_h + r * step_h
    ih = hn // div_h
    wn = b * mul_w + off_w + s * step_w
    iw = wn // div_w
    inside = ok & (hn >= 0) & (hn - ih * div_h == 0) & (ih < HS) & \
        (wn >= 0) & (wn - iw * div_w == 0) & (iw < WS)
    v = tl.load(src_ptr + n * ssn + u * ssu + ih * ssh + iw * ssw, mask=inside, other=0.0)
    tl.store(col_ptr + i, v, mask=ok)
