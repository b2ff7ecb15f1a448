"""What the im2col solvers (solvers/blas_im2col.py) need, as plain data: a 2-D or 3-D layer's
forward, backward data (unit stride) or backward weights as one GEMM over a column matrix.

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes and
strides are those of `conv_triton_spec` (the layer's forward geometry: x, w, y) for a 2-D
layer, of `spec_sizes_3d` / `spec_strides_3d` (depth axes Z, D, T; strides in (n, c, d, h, w)
order) for a 3-D one; a 2-D layer is a 3-D one of depth 1 (`depth`).

A column matrix holds, one row a pixel of the batch, one column a (channel, tap) pair, the
values a filter tap reads ("im2col"); the layer is then one product with it, which the GEMM
library runs (taps over depth, height and width: (q, r, s); a 2-D layer's q is 0):
- the gathered side x: rows over y's pixels (n, z, p, q), columns (q, r, s, c) (or (c, q, r,
  s): the filters' order), col[(n, z, p, q), (q, r, s, c)] = x[n, c, z*st - pad + q*dil, ...]
  (zero outside x). Forward: y[N*Z*P*Q, K] = col w^T; backward weights where the input has no
  more channels than dy (an image stem's 3, most layers): dw[K, T*R*S*C] = dy^T col.
- the gathered side dy (backward data; backward weights where dy has fewer channels and at
  most MAX_NARROW: a latent output's 4): rows over x's pixels
  (n, d, h, w), columns (k, q, r, s), col[(n, d, h, w), (k, q, r, s)] = dy[n, k, (d + pad -
  q*dil) / st, ...] where that divides and falls inside dy (zero elsewhere); backward weights:
  dw[(k, q, r, s), C] = col^T x[N*D*H*W, C]. Backward data (at unit stride: a stride would
  leave most of the matrix zero) takes the columns taps first, (q, r, s, k), so that a tile's
  loads run along dy's channels, and the filters as w'[(q, r, s, k), C] = w[k, c, q, r, s],
  which the same gather writes first (`filter_values`): dx[N*D*H*W, C] = col w'.
x's columns follow the filters' packed order: (q, r, s, c) for KTRSC (KRSC), (c, q, r, s) for
KCTRS (KCRS). Each product's output is the layer's own memory: one call over the whole batch
where the activations are channels-last, a strided batch of a call per image where they are in
channel planes (backward weights then write each image's FP32 product into the workspace,
which the implicit GEMM's reduce kernel sums into dw). On the implicit
GEMM a few-channel side is read once per filter tap and padded to a matrix-core block, and
the forward's gather feeds a GEMM slower than the library's on sm90
(bench/results/conv_ceiling_h200-b055ca9.json); the column matrix costs a write of T*R*S times
the gathered side.

`gather`'s source pixel per axis is (o*mul + off + r*step) / div, as the kn2row tap sum's
(`conv_triton_kn2row_spec.tap_values`): forward geometry (mul = stride, off = -pad, step =
dil, div = 1) for x, backward data's (1, pad, -dil, stride) for dy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, typed_signature

TYPES = ("FP32", "FP16", "BF16")
ELEMENT_BYTES = {"FP32": 4, "FP16": 2, "BF16": 2}
GATHER = "im2col_gather"
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    GATHER: (("src_ptr", "ptr"), ("col_ptr", "ptr"),
             *((name, "i32") for name in (
                 "N", "U", "E", "A", "B", "DS", "HS", "WS", "T", "R", "S", "mul_d", "mul_h",
                 "mul_w", "off_d", "off_h", "off_w", "step_d", "step_h", "step_w", "div_d",
                 "div_h", "div_w", "ssn", "ssu", "ssd", "ssh", "ssw", "taps_first")),
             ("BLOCK_ROWS", "constexpr"), ("BLOCK_J", "constexpr")),
}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {GATHER: ()}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset({GATHER})
#: The gather's tile: 64 rows by 32 columns of the column matrix a program on four warps (a
#: stem's 27 or 36 columns in one tile, a forward's R*S*C in tiles of 32).
GATHER_ROWS = 64
GATHER_COLS = 32
GATHER_WARPS = 4
#: Backward weights: dy is gathered where it has fewer channels than x and at most this many
#: (a latent output's 4); its columns are then (k, r, s), dw's own order, whose loads run
#: across taps, not along channels (x's are taps first).
MAX_NARROW = 4
#: The most filter taps (3x7x7: a video network's stem), and at least two (a 1x1 layer is one
#: library call as it is).
MAX_TAPS = 147
#: The largest column matrix taken (YOLOv5's 6x6 stem's backward weights at 640x640 and batch
#: 32 needs 1.4 GB beside dy's 0.4 GB); larger layers are not taken.
MAX_COL_BYTES = 2 << 30
_INT32_MAX = 2**31 - 1
_AXES = ("d", "h", "w")


def depth(sizes: Mapping[str, int]) -> dict[str, int]:
    """A layer's sizes with the depth axes a 2-D layer lacks (Z, D, T of 1, depth stride and
    dilation 1, padding 0): one geometry over three axes."""
    z = dict(sizes)
    for name, value in (("Z", 1), ("D", 1), ("T", 1), ("stride_d", 1), ("pad_d", 0),
                        ("dil_d", 1)):
        z.setdefault(name, value)
    return z


def _taps(z: Mapping[str, int]) -> int:
    return z["T"] * z["R"] * z["S"]


def _strides5(strides: tuple[int, ...]) -> tuple[int, ...]:
    """(n, c, d, h, w) strides; a 2-D tensor's (n, c, h, w) with a depth stride of 0."""
    return tuple(strides) if len(strides) == 5 else (strides[0], strides[1], 0, *strides[2:])


def gathered(direction: str, sizes: Mapping[str, int]) -> str | None:
    """The side written as a column matrix: "x" (forward; backward weights but where dy is
    taken), "dy" (backward data; backward weights where dy has fewer channels than x and at
    most MAX_NARROW), or None."""
    z = sizes
    if direction in ("F", "B"):
        return "x" if direction == "F" else "dy"
    if direction != "W":
        return None
    if z["K"] < z["C"] and z["K"] <= MAX_NARROW:
        return "dy"
    return "x"


def col_shape(direction: str, sizes: Mapping[str, int]) -> tuple[int, int]:
    """(rows, columns) of the column matrix: y's pixels by T*R*S*C (x gathered), or x's by
    K*T*R*S (dy gathered)."""
    z = depth(sizes)
    if gathered(direction, z) == "x":
        return z["N"] * z["Z"] * z["P"] * z["Q"], _taps(z) * z["C"]
    return z["N"] * z["D"] * z["H"] * z["W"], _taps(z) * z["K"]


def other_width(direction: str, sizes: Mapping[str, int]) -> int:
    """The product's dimension the column matrix does not hold: the channels of the side not
    gathered (K where x is, C where dy is). The column matrix's traffic against the product's
    work goes as its inverse, so the form pays on wide layers first."""
    return sizes["K"] if gathered(direction, sizes) == "x" else sizes["C"]


def col_bytes(direction: str, sizes: Mapping[str, int], data_type: str) -> int:
    rows, cols = col_shape(direction, sizes)
    return rows * cols * ELEMENT_BYTES[data_type]


def applies(direction: str, sizes: Mapping[str, int], data_type: str) -> bool:
    """One group, a type of TYPES, a side to gather (`gathered`), 2..MAX_TAPS taps, backward
    data at unit stride, a column matrix of at most MAX_COL_BYTES whose offsets and the
    gathered side's are within 32 bits (the gather's)."""
    z = depth(sizes)
    side = gathered(direction, z)
    if z["G"] != 1 or side is None or data_type not in TYPES or \
            not 2 <= _taps(z) <= MAX_TAPS or \
            (direction == "B" and z["stride_d"] * z["stride_h"] * z["stride_w"] != 1):
        return False
    rows, cols = col_shape(direction, z)
    source = z["N"] * z["C"] * z["D"] * z["H"] * z["W"] if side == "x" else \
        z["N"] * z["K"] * z["Z"] * z["P"] * z["Q"]
    return col_bytes(direction, z, data_type) <= MAX_COL_BYTES and \
        rows * cols <= _INT32_MAX and source <= _INT32_MAX


def workspace_parts(direction: str, sizes: Mapping[str, int], data_type: str, align: int,
                    partials: bool = False) -> tuple[dict[str, int], int]:
    """(offsets, bytes): the column matrix ("ws_col") after, first, backward data's filters
    taps first ("ws_w") or, for channel-planar backward weights (`partials`), each image's
    FP32 product ("ws_part", N x K*C*T*R*S, which the reduce sums from the workspace's start);
    each rounded up to `align` bytes."""
    def up(n: int) -> int:
        return -(-n // align) * align
    z = depth(sizes)
    col = up(col_bytes(direction, z, data_type))
    weights = z["K"] * z["C"] * _taps(z)
    if direction == "B":
        head, name = up(weights * ELEMENT_BYTES[data_type]), "ws_w"
    elif partials:
        head, name = up(z["N"] * weights * 4), "ws_part"
    else:
        return {"ws_col": 0}, col
    return {name: 0, "ws_col": head}, head + col


def gather_values(direction: str, sizes: Mapping[str, int],
                  strides: Mapping[str, tuple[int, ...]], filters_last: bool = True
                  ) -> dict[str, int]:
    """The gather's i32 arguments: the gathered side (x's or dy's strides in (n, c, [d,] h, w)
    order) and its channels U, the rows' pixel grid (E x A x B), the source's (DS x HS x WS),
    per axis the source pixel (o*mul + off + r*step) / div of row pixel o and tap r, and the
    column order (taps_first): x's in the filters' own, (q, r, s, c) where they are
    channels-last (`filters_last`), else (c, q, r, s); backward data's dy (q, r, s, k); else
    (k, q, r, s)."""
    z = depth(sizes)
    if gathered(direction, z) == "x":
        u, rows, source, src = z["C"], ("Z", "P", "Q"), ("D", "H", "W"), strides["x"]
        axes = {ax: (z[f"stride_{ax}"], -z[f"pad_{ax}"], z[f"dil_{ax}"], 1) for ax in _AXES}
        first = int(filters_last)
    else:
        u, rows, source, src = z["K"], ("D", "H", "W"), ("Z", "P", "Q"), strides["y"]
        axes = {ax: (1, z[f"pad_{ax}"], -z[f"dil_{ax}"], z[f"stride_{ax}"]) for ax in _AXES}
        first = int(direction == "B")
    values = {"N": z["N"], "U": u, "T": z["T"], "R": z["R"], "S": z["S"], "taps_first": first}
    values.update(zip(("E", "A", "B"), (z[a] for a in rows), strict=True))
    values.update(zip(("DS", "HS", "WS"), (z[a] for a in source), strict=True))
    for ax in _AXES:
        mul, off, step, div = axes[ax]
        values.update({f"mul_{ax}": mul, f"off_{ax}": off, f"step_{ax}": step,
                       f"div_{ax}": div})
    values.update(zip(("ssn", "ssu", "ssd", "ssh", "ssw"), (int(v) for v in _strides5(src)),
                      strict=True))
    return values


def gather_grid(direction: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    rows, cols = col_shape(direction, sizes)
    return cdiv(rows, GATHER_ROWS), cdiv(cols, GATHER_COLS), 1


def filter_values(sizes: Mapping[str, int], w_strides: tuple[int, ...]) -> dict[str, int]:
    """The gather's i32 arguments that write backward data's filters taps first,
    w'[(q, r, s, k), c] = w[k, c, q, r, s] (w's strides in (k, c, [t,] r, s) order): the rows'
    grid (T x R x S x K) read as the gather's (N x E x A x B) one-tap pixels, the columns its C
    channels."""
    z = depth(sizes)
    ssk, ssc, sst, ssr, sss = (int(v) for v in _strides5(w_strides))
    values = {"N": z["T"], "U": z["C"], "E": z["R"], "A": z["S"], "B": z["K"], "DS": z["R"],
              "HS": z["S"], "WS": z["K"], "T": 1, "R": 1, "S": 1, "ssn": sst, "ssu": ssc,
              "ssd": ssr, "ssh": sss, "ssw": ssk, "taps_first": 1}
    for ax in _AXES:
        values.update({f"mul_{ax}": 1, f"off_{ax}": 0, f"step_{ax}": 0, f"div_{ax}": 1})
    return values


def filter_grid(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    z = depth(sizes)
    return cdiv(_taps(z) * z["K"], GATHER_ROWS), cdiv(z["C"], GATHER_COLS), 1


def gather_signature(dtype: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of the gather's object for `triton.compiler.ASTSource`."""
    return typed_signature(ARGS[GATHER], dtype, {"BLOCK_ROWS": GATHER_ROWS,
                                                  "BLOCK_J": GATHER_COLS})
