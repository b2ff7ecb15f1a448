"""What the im2col backward-weights solvers (solvers/blas_im2col.py) need, as plain data: a 2-D
layer's backward weights whose one side has few channels, as one GEMM over a column matrix of
that narrow side.

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes and
strides are those of `conv_triton_spec` (the layer's forward geometry: x, w, y).

The backward weights of an image stem (3 channels in) or of a latent output (4 filters out)
reduces over every pixel of the batch into a small result, and its input of few channels is
read once per filter tap by the implicit GEMM, which pads those channels to a matrix-core
block. Written out once as a column matrix (one row a pixel of the batch, one column a
(channel, tap) pair of the narrow side, "im2col"), the layer is one product of the wide
side's pixels-by-channels matrix with it, which the GEMM library runs:
- few channels (C <= MAX_NARROW): rows over y's pixels (n, p, q), columns (r, s, c) in the
  filter's channels-last order, col[(n, p, q), (r, s, c)] = x[n, c, p*st - pad + r*dil, ...]
  (zero outside x), and dw[K, R*S*C] = dy^T[K, N*P*Q] col;
- few filters (K <= MAX_NARROW): rows over x's pixels (n, h, w), columns (k, r, s),
  col[(n, h, w), (k, r, s)] = dy[n, k, (h + pad - r*dil) / st, ...] where that divides and
  falls inside dy (zero elsewhere), and dw[(k, r, s), C] = col^T x[N*H*W, C].
Either product's output is dw's own memory where the filters are channels-last and packed
(KRSC), and the wide side's pixels-by-channels matrix is its own memory where the activations
are channels-last: the layer is then one call over the whole batch.

`gather`'s source pixel per axis is (o*mul + off + r*step) / div, as the kn2row tap sum's
(`conv_triton_kn2row_spec.tap_values`): forward geometry (mul = stride, off = -pad, step =
dil, div = 1) for the few-channel side, backward data's (1, pad, -dil, stride) for the
few-filter side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, typed_signature

TYPES = ("FP32",)
GATHER = "im2col_gather"
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    GATHER: (("src_ptr", "ptr"), ("col_ptr", "ptr"),
             *((name, "i32") for name in (
                 "N", "U", "A", "B", "HS", "WS", "R", "S", "mul_h", "mul_w", "off_h", "off_w",
                 "step_h", "step_w", "div_h", "div_w", "ssn", "ssu", "ssh", "ssw",
                 "taps_first")),
             ("BLOCK", "constexpr")),
}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {GATHER: ()}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset({GATHER})
#: The gather's tile: a column-matrix element a lane, 1024 a program on four warps.
GATHER_BLOCK = 1024
GATHER_WARPS = 4
#: The most channels of the narrow side (image stems: 3; latents: 4).
MAX_NARROW = 4
#: The least channels of the wide side.
MIN_WIDE = 16
#: The most filter taps (7x7), and at least two (a 1x1 layer is one library call as it is).
MAX_TAPS = 49
#: The largest column matrix taken (YOLOv5's 6x6 stem at 640x640 and batch 32 needs 1.4 GB
#: beside dy's 0.4 GB).
MAX_COL_BYTES = 2 << 30
_INT32_MAX = 2**31 - 1


def narrow_side(sizes: Mapping[str, int]) -> str | None:
    """"C" (few channels: a column matrix of x), "K" (few filters: of dy) or None."""
    z = sizes
    if z["C"] <= MAX_NARROW and z["K"] >= MIN_WIDE:
        return "C"
    if z["K"] <= MAX_NARROW and z["C"] >= MIN_WIDE:
        return "K"
    return None


def col_shape(sizes: Mapping[str, int]) -> tuple[int, int]:
    """(rows, columns) of the column matrix: y's pixels by R*S*C, or x's by K*R*S."""
    z = sizes
    taps = z["R"] * z["S"]
    if narrow_side(z) == "C":
        return z["N"] * z["P"] * z["Q"], taps * z["C"]
    return z["N"] * z["H"] * z["W"], taps * z["K"]


def col_bytes(sizes: Mapping[str, int]) -> int:
    rows, cols = col_shape(sizes)
    return rows * cols * 4


def applies(sizes: Mapping[str, int]) -> bool:
    """One group; a narrow side of 1..MAX_NARROW channels against at least MIN_WIDE,
    2..MAX_TAPS taps, a column matrix of at most MAX_COL_BYTES whose offsets and the narrow
    side's are within 32 bits (the gather's), the product's sizes within cuBLAS's 32-bit
    ones."""
    z = sizes
    if z["G"] != 1 or narrow_side(z) is None or not 2 <= z["R"] * z["S"] <= MAX_TAPS:
        return False
    rows, cols = col_shape(z)
    narrow = z["N"] * z["C"] * z["H"] * z["W"] if narrow_side(z) == "C" else \
        z["N"] * z["K"] * z["P"] * z["Q"]
    return col_bytes(z) <= MAX_COL_BYTES and rows * cols <= _INT32_MAX and \
        narrow <= _INT32_MAX


def workspace_parts(sizes: Mapping[str, int], align: int) -> tuple[dict[str, int], int]:
    """({"ws_col": 0}, bytes): the column matrix, rounded up to `align` bytes."""
    return {"ws_col": 0}, -(-col_bytes(sizes) // align) * align


def gather_values(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
                  ) -> dict[str, int]:
    """The gather's i32 arguments: the narrow side (x's or dy's strides in (n, c, h, w)
    order), the rows' pixel grid (A x B), the source's (HS x WS), and per axis the source
    pixel (o*mul + off + r*step) / div of row pixel o and tap r."""
    z = sizes
    if narrow_side(z) == "C":
        u, (a, b), (hs, ws), src = z["C"], (z["P"], z["Q"]), (z["H"], z["W"]), strides["x"]
        axes = {ax: (z[f"stride_{ax}"], -z[f"pad_{ax}"], z[f"dil_{ax}"], 1) for ax in "hw"}
    else:
        u, (a, b), (hs, ws), src = z["K"], (z["H"], z["W"]), (z["P"], z["Q"]), strides["y"]
        axes = {ax: (1, z[f"pad_{ax}"], -z[f"dil_{ax}"], z[f"stride_{ax}"]) for ax in "hw"}
    values = {"N": z["N"], "U": u, "A": a, "B": b, "HS": hs, "WS": ws, "R": z["R"],
              "S": z["S"]}
    for ax in "hw":
        mul, off, step, div = axes[ax]
        values.update({f"mul_{ax}": mul, f"off_{ax}": off, f"step_{ax}": step,
                       f"div_{ax}": div})
    values.update(zip(("ssn", "ssu", "ssh", "ssw"), (int(v) for v in src), strict=True))
    values["taps_first"] = int(taps_first(z))
    return values


def taps_first(sizes: Mapping[str, int]) -> bool:
    """The column order: (r, s, c) for a narrow input side (dw's rows are K), (k, r, s) for a
    narrow output side (dw's rows are (k, r, s))."""
    return narrow_side(sizes) == "C"


def gather_grid(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    rows, cols = col_shape(sizes)
    return cdiv(rows * cols, GATHER_BLOCK), 1, 1


def gather_signature(dtype: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of the gather's object for `triton.compiler.ASTSource`."""
    return typed_signature(ARGS[GATHER], dtype, {"BLOCK": GATHER_BLOCK})
