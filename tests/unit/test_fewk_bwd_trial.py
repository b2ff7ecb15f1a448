"""bench/fewk_bwd_trial.py's transformation: at stride 1 the backward data of a layer is the
forward convolution of dy with the filters flipped and transposed, padded by dil*(R-1) - pad
(checked against the float64 reference on the host, NCHW), and which problems it takes."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import get_solver
from miopenkernels.solvers.reference import conv_inputs, conv_reference
from miopenkernels.target import Target

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import fewk_bwd_trial as trial  # noqa: E402

CASES = [
    ConvProblem(n=2, c=4, k=20, in_spatial=(7, 6), filter=(3, 3), pad=(1, 1)),
    ConvProblem(n=1, c=3, k=9, in_spatial=(8, 9), filter=(5, 3), pad=(2, 0)),
    ConvProblem(n=2, c=2, k=12, in_spatial=(9, 9), filter=(3, 3), pad=(2, 2), dilation=(2, 2)),
    ConvProblem(n=3, c=5, k=7, in_spatial=(1, 1), filter=(1, 1)),
]


@pytest.mark.parametrize("fwd", CASES, ids=lambda p: p.key())
def test_backward_data_is_the_flipped_forward(fwd: ConvProblem) -> None:
    p = replace(fwd, direction="B")
    q = trial.forward_equivalent(p)
    assert q is not None and q.direction == "F" and (q.c, q.k) == (p.k, p.c)
    assert tuple(q.out_spatial) == tuple(p.in_spatial)
    rng = np.random.default_rng(3)
    inputs = conv_inputs(p, rng)
    dx = conv_reference(p, inputs)
    y = conv_reference(q, {"x": inputs["dy"], "w": np.ascontiguousarray(
        trial.flipped_filters(inputs["w"]))})
    assert np.allclose(y, dx, rtol=1e-12, atol=1e-12)


def test_what_it_takes() -> None:
    p = replace(CASES[0], direction="B")
    for kw in ({"stride": (2, 2)}, {"direction": "F"}, {"groups": 2, "c": 4, "k": 20},
               {"pad": (3, 3)}, {"mode": "trans"}):
        assert trial.forward_equivalent(replace(p, **kw)) is None, kw
    # The UNet's 4-channel input: the few-filter forward takes its equivalent.
    conv_in = ConvProblem(n=32, c=4, k=320, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                          direction="B", in_type="FP32", in_layout="NHWC", wei_layout="NHWC",
                          out_layout="NHWC")
    q = trial.forward_equivalent(conv_in)
    assert q is not None and (q.c, q.k, q.pad) == (320, 4, (1, 1))
    assert get_solver(trial.SOLVER).is_applicable(q, Target("sm90", 132))
    names = {(layer.network, layer.name) for layer in trial._layers(held_out=False)}
    assert {("sd15_unet", "conv_in"), ("sd15_vae", "decoder.conv_in"),
            ("vgg16", "features.0")} <= names
