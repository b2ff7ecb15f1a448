"""What the backward data on flipped filters (solvers/triton_fma_bwd.py) needs, as plain data:
the problem it takes as a forward convolution of dy on flipped, transposed filters (the
few-filter or the few-channel direct kernel's), and the launch of the flip
(kernels/conv_triton_flip.py).

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes
and strides are those of `conv_triton_spec` (the layer's forward geometry: x is dx, y dy).
At stride 1 (every axis), dx is the forward convolution of dy (K channels) with
w'[c, k, r, s] = w[k, c, R-1-r, S-1-s] (C filters), padded dil*(R-1) - pad: `as_forward`
gives that forward problem's sizes and strides, the flipped filters in the workspace laid
out as the forward object reads them (`flipped_strides`: filters' channels fastest for the
channels-last objects). One group, padding at most dil*(R-1) (a non-negative forward padding),
FP32, and the forward problem one the forward kernel's spec takes (`applies`: the few-filter
kernel 1..MAX_FILTERS input channels, the few-channel one 1-4 filters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .conv_triton_fewk_spec import applies as forward_applies
from .conv_triton_spec import cdiv, typed_signature

TYPES = ("FP32",)
FLIP = "flip_filters"
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    FLIP: (("src_ptr", "ptr"), ("dst_ptr", "ptr"),
           *((name, "i32") for name in ("K", "C", "R", "S", "ssk", "ssc", "ssr", "sss", "sdc",
                                        "sdk", "sdr", "sds")),
           ("BLOCK", "constexpr")),
}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {FLIP: ()}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset({FLIP})
#: The flip's tile: a weight a lane, 256 a program on four warps (the filters are at most
#: 8 x C*R*S: a few programs).
FLIP_BLOCK = 256
FLIP_WARPS = 4


def as_forward(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
               channels_last: bool) -> tuple[dict[str, int], dict[str, tuple[int, int, int, int]]]:
    """(sizes, strides) of the forward problem whose output is dx: dy (N, K, P, Q) its input,
    the flipped filters (C, K, R, S) in the workspace (`flipped_strides`), dx its output."""
    z = sizes
    fwd = {**z, "C": z["K"], "H": z["P"], "W": z["Q"], "K": z["C"], "P": z["H"], "Q": z["W"],
           "stride_h": 1, "stride_w": 1,
           "pad_h": z["dil_h"] * (z["R"] - 1) - z["pad_h"],
           "pad_w": z["dil_w"] * (z["S"] - 1) - z["pad_w"]}
    return fwd, {"x": tuple(strides["y"]), "y": tuple(strides["x"]),  # type: ignore[dict-item]
                 "w": flipped_strides(z, channels_last)}


def flipped_strides(sizes: Mapping[str, int], channels_last: bool
                    ) -> tuple[int, int, int, int]:
    """Strides in (filter c, channel k, r, s) order of the flipped filters in the workspace:
    [C][R][S][K] for the channels-last objects, else [C][K][R][S]."""
    k, r, s = sizes["K"], sizes["R"], sizes["S"]
    if channels_last:
        return (r * s * k, 1, s * k, k)
    return (k * r * s, r * s, s, 1)


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
            forward: Callable[..., bool] = forward_applies) -> bool:
    """One group, stride 1, a non-negative forward padding, and a forward problem the forward
    kernel's spec takes (`forward`: its `applies`; the few-filter kernel's by default, at most
    MAX_FILTERS input channels)."""
    z = sizes
    if z["G"] != 1 or (z["stride_h"], z["stride_w"]) != (1, 1):
        return False
    if z["pad_h"] > z["dil_h"] * (z["R"] - 1) or z["pad_w"] > z["dil_w"] * (z["S"] - 1):
        return False
    fwd, fwd_strides = as_forward(z, strides, False)
    return bool(forward(fwd, fwd_strides))


def workspace_bytes(sizes: Mapping[str, int]) -> int:
    """The flipped filters, FP32."""
    return sizes["K"] * sizes["C"] * sizes["R"] * sizes["S"] * 4


def flip_values(sizes: Mapping[str, int], w_strides: tuple[int, int, int, int],
                channels_last: bool) -> dict[str, int]:
    """The flip's i32 arguments: the layer's filters (k, c, r, s strides) into the workspace."""
    z = sizes
    dst = flipped_strides(z, channels_last)
    values = {"K": z["K"], "C": z["C"], "R": z["R"], "S": z["S"]}
    values.update(zip(("ssk", "ssc", "ssr", "sss"), (int(v) for v in w_strides), strict=True))
    values.update(zip(("sdc", "sdk", "sdr", "sds"), dst, strict=True))
    return values


def flip_grid(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    return cdiv(sizes["K"] * sizes["C"] * sizes["R"] * sizes["S"], FLIP_BLOCK), 1, 1


def flip_signature(dtype: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of the flip's object for `triton.compiler.ASTSource`."""
    return typed_signature(ARGS[FLIP], dtype, {"BLOCK": FLIP_BLOCK})
