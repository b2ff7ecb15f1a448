"""The Via solvers on transposed convolutions: a transposed layer is its plain convolution's
opposite direction, copies and all; where its copies would be channel-padded, and where it has
few channels (the few-channel table was measured on plain stems), it stays on its own layout;
the figures bench/results/README.md quotes for the zoo's transposed layers."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver, ranks_first
from relayout_cases import RESULTS, SM90, as_case, geomean, plain

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

# U-Net's deepest up-convolution: 1024 -> 512 channels, 16x16 -> 32x32 (2x2, stride 2).
UP = ConvProblem(n=32, c=1024, k=512, in_spatial=(16, 16), filter=(2, 2), stride=(2, 2),
                 pad=(0, 0), mode="trans")


def test_a_transposed_convolution_copies_its_own_tensors_in_and_out() -> None:
    """Its forward is the plain convolution's backward data: the kernel reads the caller's x
    as dy and w (C x K/G filters) as the plain convolution's, and writes the caller's y."""
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(UP, "F", "FP16")
    assert via.is_applicable(p, SM90) and ranks_first(via, p, SM90)
    params = (128, 64, 64, 8, 1, 4, 4)
    ins = via.lead_ins(p, params, SM90)
    assert [(launch.pointer_args()[:2], plain(launch)) for _, launch in ins] == [
        (["w", "ws_w"], {"B": 1024, "R": 512, "S": 4}),
        (["x", "ws_y"], {"B": 32, "R": 1024, "S": 256})]
    assert via.launch(p, params).pointer_args()[:3] == ["ws_x", "ws_w", "ws_y"]
    (_, out), = via.follow_ups(p, params, SM90)
    assert out.pointer_args()[:2] == ["ws_x", "y"]
    assert plain(out) == {"B": 32, "R": 1024, "S": 512}  # [n][32*32][512] -> [n][512][...]
    # Its backward data is the plain forward, on the caller's dy and into its dx.
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    q = as_case(UP, "B", "FP16")
    assert fwd.is_applicable(q, SM90)
    reads = [launch.pointer_args()[0] for _, launch in fwd.lead_ins(q, params, SM90)]
    assert sorted(reads) == ["dy", "w"]
    (_, back), = fwd.follow_ups(q, params, SM90)
    assert back.pointer_args()[1] == "dx"


def test_a_transposed_convolution_of_few_channels_stays_on_its_own_layout() -> None:
    """The few-channel table (VIA_NCHW_FEW_C) was measured on plain stems; DCGAN's 64 -> 3
    4x4 stride-2 up-convolution in NHWC keeps its own few-channel kernel, and the plain stem
    of the same shape still goes through NCHW where its own kernel runs the generic object
    (60 filters; 64 take the object aligned on dy's side)."""
    up = ConvProblem(n=32, c=64, k=3, in_spatial=(32, 32), filter=(4, 4), stride=(2, 2),
                     pad=(1, 1), mode="trans")
    via = get_solver("ConvTritonImplicitGemmViaNchwBwd")
    assert not via.is_applicable(as_case(up, "F", "FP16", "NHWC"), SM90)
    stem = ConvProblem(n=32, c=3, k=64, in_spatial=(64, 64), filter=(4, 4), stride=(2, 2),
                       pad=(1, 1))
    assert via.is_applicable(as_case(replace(stem, k=60), "B", "FP16", "NHWC"), SM90)
    assert not via.is_applicable(as_case(stem, "B", "FP16", "NHWC"), SM90)


def test_a_transposed_convolution_of_odd_channels_is_not_padded() -> None:
    """`_copies` pads by the problem's own channel counts, which a transposed convolution's
    view swaps: such a problem stays on the NCHW kernels."""
    odd = as_case(replace(UP, c=1000, k=500), "F", "FP16")
    assert not get_solver("ConvTritonImplicitGemmViaNhwcBwd").is_applicable(odd, SM90)
    plain = as_case(replace(UP, c=500, k=1000, mode="conv", in_spatial=(32, 32)), "B", "FP16")
    assert get_solver("ConvTritonImplicitGemmViaNhwcBwd").is_applicable(plain, SM90)


def test_transposed_layers_figures_are_what_the_committed_runs_measured() -> None:
    """bench/results/README's figures for the zoo's transposed layers (FP16, batch 32): over
    the rows (network, layer, case: a transposed layer shares its FindDb key with the plain
    convolution it mirrors) the whole-zoo runs before (9ec5af9) and the runs after (the Via
    solvers taking transposed convolutions, fdf1aef; the window GEMM, d10d600) both measured,
    the GPU-time geomean against cuDNN 1.44 -> 0.94; U-Net's up-convolutions in NCHW 1.8-5.4x
    before."""
    sys.path.insert(0, str(RESULTS.parent))
    from _results import read_json

    def rows(*names: str) -> dict[tuple[str, str, str, int], dict]:
        out = {}
        for name in names:
            for r in read_json(RESULTS / name)["rows"]:
                out[(r["network"], r["layer"], r["case"], r["n"])] = r
        return out

    before = rows("zoo_h200-fb-9ec5af9.json", "zoo_h200-w-9ec5af9.json")
    after = rows("zoo_h200-trans-fdf1aef.json", "zoo_h200-nets-d10d600.json")
    both = [k for k, r in after.items() if k in before and "transposed" in r["classes"]]
    assert len(both) == 64
    assert round(geomean([before[k]["ratio"] for k in both]), 2) == 1.44
    assert round(geomean([after[k]["ratio"] for k in both]), 2) == 0.94
    per = {d: [k for k in both if k[2].split("-")[1] == d] for d in "FBW"}
    assert [(round(geomean([before[k]["ratio"] for k in ks]), 2),
             round(geomean([after[k]["ratio"] for k in ks]), 2)) for ks in per.values()] == \
        [(1.58, 0.92), (1.38, 0.89), (1.35, 1.01)]
    up = [before[k]["ratio"] for k in both
          if before[k]["network"] == "unet" and before[k]["case"] == "FP16-F-NCHW"]
    assert (round(min(up), 1), round(max(up), 1)) == (1.8, 5.4)
