"""The im2col solvers' first step: the column matrix of a layer's gathered side.

The im2col solvers (solvers/blas_im2col.py) write, into the workspace, one row per pixel of
the rows' grid (N x E x A x B: depth, height, width; E = 1 for a 2-D layer) and one column per
(channel, tap) of the gathered side (x, or dy); the GEMM library then takes the layer's
forward, backward data or backward weights as one product of it with the other operand
(launch data and the algebra in `conv_triton_im2col_spec`).

- `im2col_gather`: col[(n, e, a, b), j] = src[n, u, id, ih, iw], id = (e*mul_d + off_d +
  q*step_d) / div_d where that is whole and inside the source (ih, iw likewise, over taps r and
  s), zero elsewhere; j = ((q*R + r)*S + s)*U + u (taps_first 1) or ((u*T + q)*R + r)*S + s;
  the source's strides in elements in (n, u, d, h, w) order; the column matrix dense,
  row-major. A program writes a tile of BLOCK_ROWS rows by BLOCK_J columns of it.

Importing this module needs Triton but no GPU.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def im2col_gather(
    src_ptr, col_ptr, N, U, E, A, B, DS, HS, WS, T, R, S, mul_d, mul_h, mul_w,
    off_d, off_h, off_w, step_d, step_h, step_w, div_d, div_h, div_w,
    ssn, ssu, ssd, ssh, ssw, taps_first,
    BLOCK_ROWS: tl.constexpr, BLOCK_J: tl.constexpr,
):
    """A [BLOCK_ROWS, BLOCK_J] tile of the column matrix a program (axis 0 the rows, axis 1
    the columns): each row's pixel and each column's channel and tap are worked out once, an
    element costs a few multiply-adds (a division only where the source pixel divides by a
    stride: dy's)."""
    row = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    taps = T * R * S
    cols = U * taps
    ok = (row < N * E * A * B)[:, None] & (j < cols)[None, :]
    b = row % B
    t = row // B
    a = t % A
    t = t // A
    e = t % E
    n = t // E
    # taps first: j = tap*U + u; else j = u*taps + tap; tap = (q*R + r)*S + s
    u = tl.where(taps_first != 0, j % U, j // taps)
    t = tl.where(taps_first != 0, j // U, j % taps)
    s = t % S
    t = t // S
    r = t % R
    q = t // R
    dn = (e * mul_d + off_d)[:, None] + (q * step_d)[None, :]
    hn = (a * mul_h + off_h)[:, None] + (r * step_h)[None, :]
    wn = (b * mul_w + off_w)[:, None] + (s * step_w)[None, :]
    if div_d * div_h * div_w == 1:
        id = dn
        ih = hn
        iw = wn
        inside = (dn >= 0) & (dn < DS) & (hn >= 0) & (hn < HS) & (wn >= 0) & (wn < WS)
    else:
        id = dn // div_d
        ih = hn // div_h
        iw = wn // div_w
        inside = (dn >= 0) & (dn - id * div_d == 0) & (id < DS) & \
            (hn >= 0) & (hn - ih * div_h == 0) & (ih < HS) & \
            (wn >= 0) & (wn - iw * div_w == 0) & (iw < WS)
    src = src_ptr + (n * ssn)[:, None] + (u * ssu)[None, :] + id * ssd + ih * ssh + iw * ssw
    v = tl.load(src, mask=ok & inside, other=0.0)
    tl.store(col_ptr + row[:, None] * cols + j[None, :], v, mask=ok)
