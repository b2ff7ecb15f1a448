"""Backward weights of 3x3 stride-1 convolutions by Winograd F(3x3, 2x2), on tensor cores.

dw[k, c, r, s] = sum over (n, p, q) of dy[n, k, p, q] * x[n, c, p + r - pad_h, q + s - pad_w]
is, over each 2x2 tile of dy and the 4x4 patch of x it reaches, a 3x3 correlation of a 4x4
input with a 2x2 filter: Winograd's F(3, 2) in both dimensions,

    dw = G^T [ sum over tiles and images of (A dy A^T) (*) (B^T x B) ] G

(`(*)` element by element). The 16 products per tile replace the direct method's 36, so the
work falls 2.25x, and the sum over tiles is 16 independent GEMMs (one per position xi of the
4x4 transform domain), M[xi][k][c] = sum over t of U[xi][k][t] * V[xi][c][t], which run dense
on the tensor cores with no gather at all. Four launches:

- `winograd_wrw_data`  x  -> V = B^T x B per 4x4 patch ([16][G*C][TP] FP32, workspace)
- `winograd_wrw_grad`  dy -> U = A dy A^T per 2x2 tile ([16][G*K][TP] FP32, workspace)
- `winograd_wrw_gemm`  U, V -> M per position and group, its tile reduction cut in SPLIT_K
  parts ([SPLIT_K][16][G*K][C] FP32, workspace); FP32 data, PRECISION "tf32x3" (three TF32
  products, FP32 accuracy) or "tf32" (the TF32 math mode)
- `winograd_wrw_out`   M -> dw = G^T (sum of the parts) G, in the caller's layout and strides

with B^T = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], A = [[1,0],[1,1],[1,-1],[0,-1]] and
G^T = [[1,1/2,1/2,0],[0,1/2,-1/2,0],[0,1/2,1/2,1]]: only additions and halvings (exact), so
the transforms lose next to nothing in FP32. Tiles are t = (n, th, tw) with
TH = cdiv(P, 2), TW = cdiv(Q, 2); TP is N*TH*TW rounded up to TILE_ROUND and the transforms
write zeros to the tiles past N*TH*TW, so the GEMM needs no mask along its reduction.

Importing this module needs Triton but no GPU; how to launch the kernels is plain data in
`conv_triton_winograd_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import split_range, tile_offsets


@triton.jit
def _load(ptr, base, h, w, H, W, sh, sw, ok):
    """One element per tile of a [tiles, channels] block at rows h, columns w (zero outside)."""
    inside = ok & ((h >= 0) & (h < H) & (w >= 0) & (w < W))[:, None]
    return tl.load(ptr + base + (h * sh + w * sw)[:, None], mask=inside,
                   other=0.0).to(tl.float32)


@triton.jit
def _data_row(ptr, base, h, w0, H, W, sh, sw, ok):
    """A row of a 4x4 patch times B: (d0 - d2, d1 + d2, d2 - d1, d1 - d3)."""
    d0 = _load(ptr, base, h, w0, H, W, sh, sw, ok)
    d1 = _load(ptr, base, h, w0 + 1, H, W, sh, sw, ok)
    d2 = _load(ptr, base, h, w0 + 2, H, W, sh, sw, ok)
    d3 = _load(ptr, base, h, w0 + 3, H, W, sh, sw, ok)
    return d0 - d2, d1 + d2, d2 - d1, d1 - d3


@triton.jit
def _store4(ptr, off, step, a, b, c, d, ok):
    """Four transform positions, `step` apart."""
    tl.store(ptr + off, a, mask=ok)
    tl.store(ptr + off + step, b, mask=ok)
    tl.store(ptr + off + 2 * step, c, mask=ok)
    tl.store(ptr + off + 3 * step, d, mask=ok)


@triton.jit
def _tiles(TH, TW, BLOCK_T: tl.constexpr):
    """(tile indices, image, tile row, tile column) of this program's BLOCK_T tiles."""
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    n = t // (TH * TW)
    rest = t - n * (TH * TW)
    th = rest // TW
    return t, n, th, rest - th * TW


@triton.jit
def winograd_wrw_data(
    x_ptr, v_ptr, N, C, H, W, TH, TW, TP, pad_h, pad_w, sxn, sxc, sxh, sxw,
    BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """V[xi][c][t] = (B^T d B)[xi] for the 4x4 patch d of x at (2*th - pad_h, 2*tw - pad_w) of
    image n, channel c (all G*C channels); zeros for tiles past N*TH*TW up to TP."""
    t, n, th, tw = _tiles(TH, TW, BLOCK_T)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    h0 = 2 * th - pad_h
    w0 = 2 * tw - pad_w
    ok = (t < N * TH * TW)[:, None] & (c < C)[None, :]
    base = (n * sxn)[:, None] + (c * sxc)[None, :]
    a0, a1, a2, a3 = _data_row(x_ptr, base, h0, w0, H, W, sxh, sxw, ok)
    b0, b1, b2, b3 = _data_row(x_ptr, base, h0 + 1, w0, H, W, sxh, sxw, ok)
    c0, c1, c2, c3 = _data_row(x_ptr, base, h0 + 2, w0, H, W, sxh, sxw, ok)
    d0, d1, d2, d3 = _data_row(x_ptr, base, h0 + 3, w0, H, W, sxh, sxw, ok)
    off = (c * TP)[None, :] + t[:, None]
    into = (t < TP)[:, None] & (c < C)[None, :]
    step = C * TP
    _store4(v_ptr, off, step, a0 - c0, a1 - c1, a2 - c2, a3 - c3, into)
    _store4(v_ptr, off + 4 * step, step, b0 + c0, b1 + c1, b2 + c2, b3 + c3, into)
    _store4(v_ptr, off + 8 * step, step, c0 - b0, c1 - b1, c2 - b2, c3 - b3, into)
    _store4(v_ptr, off + 12 * step, step, b0 - d0, b1 - d1, b2 - d2, b3 - d3, into)


@triton.jit
def winograd_wrw_grad(
    y_ptr, u_ptr, N, K, P, Q, TH, TW, TP, syn, syk, syh, syw,
    BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """U[xi][k][t] = (A h A^T)[xi] for the 2x2 tile h of dy at (2*th, 2*tw) of image n, filter
    k (all G*K filters; zero past P, Q); zeros for tiles past N*TH*TW up to TP."""
    t, n, th, tw = _tiles(TH, TW, BLOCK_T)
    k = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    p0 = 2 * th
    q0 = 2 * tw
    ok = (t < N * TH * TW)[:, None] & (k < K)[None, :]
    base = (n * syn)[:, None] + (k * syk)[None, :]
    h00 = _load(y_ptr, base, p0, q0, P, Q, syh, syw, ok)
    h01 = _load(y_ptr, base, p0, q0 + 1, P, Q, syh, syw, ok)
    h10 = _load(y_ptr, base, p0 + 1, q0, P, Q, syh, syw, ok)
    h11 = _load(y_ptr, base, p0 + 1, q0 + 1, P, Q, syh, syw, ok)
    # Rows times A^T: (h0, h0 + h1, h0 - h1, -h1); then A on the left, the same on columns.
    z00 = h00
    z01 = h00 + h01
    z02 = h00 - h01
    z03 = -h01
    z10 = h10
    z11 = h10 + h11
    z12 = h10 - h11
    z13 = -h11
    off = (k * TP)[None, :] + t[:, None]
    into = (t < TP)[:, None] & (k < K)[None, :]
    step = K * TP
    _store4(u_ptr, off, step, z00, z01, z02, z03, into)
    _store4(u_ptr, off + 4 * step, step, z00 + z10, z01 + z11, z02 + z12, z03 + z13, into)
    _store4(u_ptr, off + 8 * step, step, z00 - z10, z01 - z11, z02 - z12, z03 - z13, into)
    _store4(u_ptr, off + 12 * step, step, -z10, -z11, -z12, -z13, into)


@triton.jit
def winograd_wrw_gemm(
    u_ptr, v_ptr, m_ptr, K, C, G, TP,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, PRECISION: tl.constexpr,
):
    """M[split][xi][g*K + k][c] = sum over this split's tiles t of U[xi][g*K + k][t] *
    V[xi][g*C + c][t]. Program axis 1 is g*16 + xi, axis 2 the split; TP is a multiple of
    BLOCK_K (the spec's TILE_ROUND), so only rows and columns are masked."""
    gx = tl.program_id(1)
    g = gx // 16
    xi = gx - g * 16
    split = tl.program_id(2)
    rows, cols = tile_offsets(K, C, BLOCK_M, BLOCK_N, GROUP_M)
    kk = tl.arange(0, BLOCK_K)
    b0, b1 = split_range(TP // BLOCK_K, SPLIT_K, split)
    row_ok = rows < K
    col_ok = cols < C
    a_ptrs = u_ptr + (xi * G * K + g * K + rows)[:, None] * TP + (b0 * BLOCK_K + kk)[None, :]
    b_ptrs = v_ptr + (xi * G * C + g * C + cols)[None, :] * TP + (b0 * BLOCK_K + kk)[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(b0, b1):
        a = tl.load(a_ptrs, mask=row_ok[:, None], other=0.0)
        b = tl.load(b_ptrs, mask=col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    out = ((split * 16 + xi) * G * K + g * K + rows)[:, None] * C + cols[None, :]
    tl.store(m_ptr + out, acc, mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _out_col(m0, m1, m2, m3):
    """G^T times a column of four: (m0 + (m1 + m2)/2, (m1 - m2)/2, (m1 + m2)/2 + m3)."""
    half = 0.5 * (m1 + m2)
    return m0 + half, 0.5 * (m1 - m2), half + m3


@triton.jit
def _position(m_ptr, i, xi, GKC, SPLIT_K: tl.constexpr, ok):
    """Position xi of the M of elements i, summed over the SPLIT_K parts."""
    acc = tl.load(m_ptr + xi * GKC + i, mask=ok, other=0.0)
    for part in range(1, SPLIT_K):
        acc += tl.load(m_ptr + (part * 16 + xi) * GKC + i, mask=ok, other=0.0)
    return acc


@triton.jit
def _out_row(m_ptr, i, row, GKC, SPLIT_K: tl.constexpr, ok):
    """Row `row` of M times G: three values."""
    return _out_col(_position(m_ptr, i, 4 * row, GKC, SPLIT_K, ok),
                    _position(m_ptr, i, 4 * row + 1, GKC, SPLIT_K, ok),
                    _position(m_ptr, i, 4 * row + 2, GKC, SPLIT_K, ok),
                    _position(m_ptr, i, 4 * row + 3, GKC, SPLIT_K, ok))


@triton.jit
def winograd_wrw_out(
    m_ptr, w_ptr, GKC, C, swk, swc, swr, sws,
    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
):
    """dw[f, c, r, s] = (G^T M G)[r, s] for the flat index i = f*C + c (f = g*K + k) of M's
    [G*K][C] elements, M summed over its SPLIT_K parts; any dw strides."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < GKC
    a0, a1, a2 = _out_row(m_ptr, i, 0, GKC, SPLIT_K, ok)
    b0, b1, b2 = _out_row(m_ptr, i, 1, GKC, SPLIT_K, ok)
    c0, c1, c2 = _out_row(m_ptr, i, 2, GKC, SPLIT_K, ok)
    d0, d1, d2 = _out_row(m_ptr, i, 3, GKC, SPLIT_K, ok)
    f = i // C
    base = w_ptr + f * swk + (i - f * C) * swc
    ty = w_ptr.dtype.element_ty
    # Column s of the rows times G, then G^T on the left: dw[r, s] for r = 0, 1, 2.
    r0, r1, r2 = _out_col(a0, b0, c0, d0)
    tl.store(base, r0.to(ty), mask=ok)
    tl.store(base + swr, r1.to(ty), mask=ok)
    tl.store(base + 2 * swr, r2.to(ty), mask=ok)
    r0, r1, r2 = _out_col(a1, b1, c1, d1)
    tl.store(base + sws, r0.to(ty), mask=ok)
    tl.store(base + swr + sws, r1.to(ty), mask=ok)
    tl.store(base + 2 * swr + sws, r2.to(ty), mask=ok)
    r0, r1, r2 = _out_col(a2, b2, c2, d2)
    tl.store(base + 2 * sws, r0.to(ty), mask=ok)
    tl.store(base + swr + 2 * sws, r1.to(ty), mask=ok)
    tl.store(base + 2 * swr + 2 * sws, r2.to(ty), mask=ok)
