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
channels-last objects). At stride st > 1 (dilation 1, st at most the filter's size), dx's
rows h = a + st*i of one phase a (0 <= a < st) take the taps r = r_a + st*j alone,
r_a = (a + pad) mod st: each phase is a forward convolution at stride 1 of dy with every
st-th flipped tap, into every st-th row of dx (`phases`: per phase of height and width, the
forward problem, dx's rows and columns of that phase as a strided view at an offset, and the
flipped filters' taps of that phase as one). One group, padding at most dil*(R-1), FP32,
and forward problems the forward kernel's spec takes (`applies`: the few-filter kernel
1..MAX_FILTERS input channels, the few-channel one 1-4 filters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

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
#: The least channels of dy (the forward problem's) at which the solvers on the few-filter
#: forward claim first (channels-last, stride 1, more than one tap): over the zoo's such
#: layers of 3-4 input channels (H200, FP32, batch 32: bench/results/fewk_h200-035369f/
#: bwd.json) it took 1.71-1.84 of IEEE cuDNN's GPU time from 320 and 512 channels of dy, the
#: fastest measured, and 1.82-1.90 from 64 and 128, where the few-channel kernels took
#: 1.36-1.58 (tests/unit/test_bench_fewk_h200.py recomputes the figures).
CLAIM_LEAST_CHANNELS = 256
#: The largest stride taken (4 x 4 phases: 16 launches of the forward kernel).
MAX_STRIDE = 4


class Phase(NamedTuple):
    """One phase of dx's rows and columns as a forward problem: its sizes and strides (x: dy,
    w: the phase's flipped taps, y: dx's rows and columns of the phase), and the element
    offsets into dx and into the flipped filters where its view starts."""

    sizes: dict[str, int]
    strides: dict[str, tuple[int, int, int, int]]
    y_offset: int
    w_offset: int


def _axis_phases(out: int, taps: int, stride: int, pad: int, dil: int
                 ) -> list[tuple[int, int, int, int, int]]:
    """(first row a, rows, taps J, forward padding, first flipped tap) of each phase of an axis
    of dx with `out` rows (phases without rows left out)."""
    if stride == 1:
        return [(0, out, taps, dil * (taps - 1) - pad, 0)]
    phases = []
    for a in range(stride):
        rows = cdiv(out - a, stride)
        if rows <= 0:
            continue
        first = (a + pad) % stride  # the phase's first tap r_a
        count = cdiv(taps - first, stride)
        reach = (a + pad - first) // stride  # dy's row of tap r_a for the phase's row 0
        phases.append((a, rows, count, count - 1 - reach, taps - 1 - first - stride * (count - 1)))
    return phases


def phases(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
           channels_last: bool) -> list[Phase]:
    """The forward problems whose outputs are dx (above): one at stride 1, st_h * st_w (those
    with rows and columns) otherwise, the first of the most rows and columns. dy (N, K, P, Q)
    their input, the flipped filters (C, K, R, S) in the workspace (`flipped_strides`)."""
    z = sizes
    fc, fk, fr, fs = flipped_strides(z, channels_last)
    xn, xc, xh, xw = (int(v) for v in strides["x"])
    out = []
    for a, rows, taps_h, pad_h, first_h in _axis_phases(z["H"], z["R"], z["stride_h"],
                                                         z["pad_h"], z["dil_h"]):
        for b, cols, taps_w, pad_w, first_w in _axis_phases(z["W"], z["S"], z["stride_w"],
                                                             z["pad_w"], z["dil_w"]):
            fwd = {**z, "C": z["K"], "H": z["P"], "W": z["Q"], "K": z["C"], "P": rows,
                   "Q": cols, "R": taps_h, "S": taps_w, "stride_h": 1, "stride_w": 1,
                   "pad_h": pad_h, "pad_w": pad_w}
            fwd_strides = {"x": tuple(strides["y"]),
                           "y": (xn, xc, xh * z["stride_h"], xw * z["stride_w"]),
                           "w": (fc, fk, fr * z["stride_h"], fs * z["stride_w"])}
            out.append(Phase(fwd, fwd_strides,  # type: ignore[arg-type]
                             a * xh + b * xw, first_h * fr + first_w * fs))
    return out


def as_forward(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
               channels_last: bool) -> tuple[dict[str, int], dict[str, tuple[int, int, int, int]]]:
    """(sizes, strides) of the first phase's forward problem (`phases`): at stride 1 the only
    one, dx whole its output."""
    first = phases(sizes, strides, channels_last)[0]
    return first.sizes, first.strides


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
    """One group; per axis stride 1, or a stride of at most the filter's taps at dilation 1
    (every phase has a tap); padding at most dil*(R-1) (at stride 1 a non-negative forward
    padding; a phase's may be negative: the kernel masks dy's rows and columns whatever
    they are); and forward problems the forward kernel's spec takes (`forward`: its
    `applies`; the few-filter kernel's by default, at most MAX_FILTERS input channels)."""
    z = sizes
    if z["G"] != 1 or min(z["stride_h"], z["stride_w"], z["H"], z["W"]) < 1:
        return False
    for st, taps, dil in ((z["stride_h"], z["R"], z["dil_h"]), (z["stride_w"], z["S"], z["dil_w"])):
        if st > 1 and (dil != 1 or st > taps or st > MAX_STRIDE):
            return False
    if z["pad_h"] > z["dil_h"] * (z["R"] - 1) or z["pad_w"] > z["dil_w"] * (z["S"] - 1):
        return False
    return all(forward(p.sizes, p.strides) for p in phases(z, strides, False))


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
