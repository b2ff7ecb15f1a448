"""Which implicit GEMM object a problem takes by its channel counts: the 16-bit channels-last
aligned objects (forward, backward data, backward weights) assume multiples of 8 (16 bytes),
every other aligned object multiples of 16, and a problem that meets neither takes the generic
object."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.kernels import conv_triton_spec as spec
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
# EfficientNet-B0's 1x1 24 -> 144 at 56x56: channel counts multiples of 8, not of 16.
LAYER = ConvProblem(n=32, c=24, k=144, in_spatial=(56, 56), filter=(1, 1), pad=(0, 0))
SOLVERS = {"F": "ConvTritonImplicitGemmFwd", "B": "ConvTritonImplicitGemmBwd",
           "W": "ConvTritonImplicitGemmWrw"}


def _assumed(problem: ConvProblem) -> dict[str, int]:
    solver = get_solver(SOLVERS[problem.direction])
    job = solver.compile_job(problem, solver.default_params(problem, SM90), SM90)
    text = next((o[len("--assume="):] for o in job.options if o.startswith("--assume=")), "")
    return {k: int(v) for k, v in (item.split(":") for item in text.split(",") if item)}


def _as(type_name: str, layout: str, **change: object) -> ConvProblem:
    return replace(LAYER, in_type=type_name, wei_type=type_name, out_type=type_name,
                   in_layout=layout, wei_layout=layout, out_layout=layout, **change)


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("type_name", ["FP16", "BF16"])
def test_a_16_bit_channels_last_layer_of_8k_channels_takes_the_aligned_object(
        type_name: str, direction: str) -> None:
    assumed = _assumed(_as(type_name, "NHWC", direction=direction))
    assert assumed["C"] == assumed["K"] == assumed["syh"] == 8
    assert assumed["x_ptr"] == assumed["w_ptr"] == assumed["y_ptr"] == 16


@pytest.mark.parametrize(("type_name", "layout", "direction"), [
    ("FP16", "NCHW", "F"),   # NCHW objects keep 16 (masks along channels)
    ("FP32", "NHWC", "F"),   # 4-byte elements: 8 of them are not a 16-byte vector's multiple
    ("FP32", "NHWC", "B"),
    ("FP32", "NHWC", "W"),
    ("BF16", "NCHW", "W"),
])
def test_other_objects_keep_16_and_such_a_layer_takes_the_generic_one(
        type_name: str, layout: str, direction: str) -> None:
    assert _assumed(_as(type_name, layout, direction=direction)) == {}
    # The same layer with channel counts of 16k takes their aligned object, assuming 16.
    assumed = _assumed(_as(type_name, layout, direction=direction, c=32, k=160))
    assert assumed["C"] == assumed["K"] == 16


def test_16k_channels_keep_taking_an_aligned_object_at_either_divisor() -> None:
    assumed = _assumed(_as("FP16", "NHWC", c=32, k=160))
    assert assumed["C"] == 8  # the channels-last forward's one object serves both
    args = {"C": 24, "K": 40, "sxn": 2400, "sxh": 240, "sxw": 24, "swk": 24, "swr": 24,
            "sws": 24, "syn": 1000, "syh": 200, "syw": 40, "sxc": 1, "swc": 1, "syk": 1}
    assert spec.meets_align16(args, True, "FP16")
    assert not spec.meets_align16(args, True)             # no type: 16 elements
    assert not spec.meets_align16(args, True, "FP32")
    assert spec.meets_align16(args, True, "BF16", "conv2d_bwd_data")
    assert spec.meets_align16(args, True, "FP16", "conv2d_bwd_weight")
    assert not spec.meets_align16(args, True, "FP32", "conv2d_bwd_data")
    assert not spec.meets_align16({**args, "sxw": 20}, True, "FP16", "conv2d_bwd_weight")
    assert not spec.meets_align16({**args, "K": 36}, True, "FP16")


# A 7x7 stride-2 image stem (ResNet-50's: 3 -> 64) at the zoo's stems' filter counts: 64 and 24
# (ShuffleNet's).
@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize(("type_name", "k", "divisor"), [
    ("FP16", 64, 8), ("BF16", 24, 8), ("FP16", 24, 8), ("BF16", 64, 8)])
def test_a_channels_last_stem_takes_the_few_channel_object_aligned_on_its_output(
        type_name: str, k: int, divisor: int, direction: str) -> None:
    # y's side in forward, dy's in backward data and weights (the same strides).
    p = _as(type_name, "NHWC", c=3, k=k, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
            stride=(2, 2), direction=direction)
    kernel = spec.kernel_for(direction, {"C": 3, "G": 1, "K": k, "R": 7, "S": 7, "stride_h": 2,
                                         "stride_w": 2, "dil_h": 1, "dil_w": 1})
    assert kernel in spec.FEW_ALIGN_ARGS and spec.KERNELS[kernel].get("few_channels")
    assumed = _assumed(p)
    # y's side alone: x's strides are multiples of 3, which no vector load meets.
    assert {a: assumed[a] for a in ("K", "syn", "syh", "syw")} == dict.fromkeys(
        ("K", "syn", "syh", "syw"), divisor)
    assert not {"C", "sxn", "sxh", "sxw", "swk", "swr", "sws"} & set(assumed)
    assert assumed["y_ptr"] == 16


@pytest.mark.parametrize(("type_name", "layout", "k", "direction"), [
    ("FP16", "NHWC", 12, "F"),  # 12 filters of 2 bytes: rows of 24 bytes, not 16-byte vectors
    ("FP16", "NHWC", 12, "W"),
    ("FP16", "NCHW", 64, "F"),  # y's pixels innermost: no stride of it meets a vector
    ("FP16", "NCHW", 64, "B"),
    ("FP32", "NHWC", 64, "F"),  # FP32 ships none (its stems run on other kernels)
])
def test_other_few_channel_problems_take_the_generic_object(type_name: str, layout: str, k: int,
                                                           direction: str) -> None:
    p = _as(type_name, layout, c=3, k=k, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
            stride=(2, 2), direction=direction)
    assert _assumed(p) == {}
    kernel = spec.kernel_for(direction, {"C": 3, "G": 1, "K": k, "R": 7, "S": 7, "stride_h": 2,
                                         "stride_w": 2, "dil_h": 1, "dil_w": 1})
    assert spec.KERNELS[kernel].get("few_channels")
    assert spec.align16_variants(kernel, layout == "NHWC", type_name) == (
        (True, False) if kernel in spec.FEW_ALIGN_ARGS and layout == "NHWC" and
        type_name != "FP32" else (False,))
