"""What the Via solvers' test modules share: the target, the committed results folder, two
ResNet-50 layers, a problem in one case, a transpose launch's shape and a geomean."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from miopenkernels.problem import ConvProblem
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
# ResNet-50's 3x3 layer at 28x28, batch 32, and its first layer (C=3, 7x7 stride 2).
LAYER = ConvProblem(n=32, c=128, k=128, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1))
FIRST = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
                    stride=(2, 2))


def as_case(p: ConvProblem, direction: str, data_type: str, layout: str = "NCHW"
            ) -> ConvProblem:
    """`p` in one direction, element type and layout (every tensor)."""
    return replace(p, direction=direction, in_type=data_type, wei_type=data_type,
                   out_type=data_type, in_layout=layout, wei_layout=layout, out_layout=layout)


def plain(launch: object) -> dict[str, int]:
    """A transpose launch's B, R and S, checked unpadded (rows S apart, DST_B = B, DST_R = R)."""
    v = launch.scalars()  # type: ignore[attr-defined]
    assert (v["SRC_S"], v["DST_B"], v["DST_R"]) == (v["S"], v["B"], v["R"]), v
    return {k: v[k] for k in ("B", "R", "S")}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
