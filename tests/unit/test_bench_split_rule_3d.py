"""bench/split_rule_3d.py on the committed H100 runs: the figures kernels/conv_triton_3d_spec.py
(SMALL_PART_STEPS) and bench/results/README.md quote for the 3-D small-grid split rule."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import split_rule_3d  # noqa: E402

RUNS = ROOT / "bench" / "results" / "split3d_h100"
GEMM = ("ConvTriton3dFwd", "ConvTriton3dBwd", "ConvTriton3dTf32x3Fwd", "ConvTriton3dTf32x3Bwd")
RELAID = ("ConvTriton3dViaNdhwcFwd", "ConvTriton3dViaNdhwcBwd", "ConvTriton3dPaddedFwd",
          "ConvTriton3dPaddedBwd")


def _run(rule: str) -> dict:
    return split_rule_3d.summarise([RUNS / rule / "split_f.json", RUNS / rule / "split_b.json"])


def _range(run: dict, variant: str, names: tuple[str, ...] = GEMM) -> tuple[float, float]:
    values = [run["variants"][n][variant]["over_defaults"] for n in names
              if n in run["variants"]]
    return round(min(values), 2), round(max(values), 2)


def test_the_rule_figures() -> None:
    eight, four, two = _run("rule_8steps"), _run("rule_4steps"), _run("rule_2steps")
    assert _range(eight, "@split=1") == (2.83, 3.87)
    assert eight["doubled"]["within the waves, 4-7"] == {"rows": 110, "over_defaults": 0.819}
    assert 0.93 <= eight["doubled"]["past the waves, 4-7"]["over_defaults"] < 0.94
    assert 1.0 < eight["doubled"]["past the waves, 8+"]["over_defaults"] <= 1.01
    assert four["doubled"]["within the waves, 2-3"] == {"rows": 95, "over_defaults": 0.856}
    assert _range(two, "@split=1") == (2.64, 3.54)
    assert _range(two, "@split/2") == (1.06, 1.23)
    assert _range(two, "@split*2") == (0.88, 0.97)
    assert two["doubled"]["within the waves, under 2"] == {"rows": 63, "over_defaults": 0.823}


def test_the_relaid_16_bit_solvers_gain_least() -> None:
    ones = [(n, run["variants"][n]["@split=1"]) for run in
            (_run("rule_8steps"), _run("rule_4steps"), _run("rule_2steps"))
            for n in RELAID if n in run["variants"]]
    many = [v["over_defaults"] for _, v in ones if v["rows"] > 1]
    assert (round(min(many), 2), round(max(many), 2)) == (1.05, 1.35)
    assert min(v["rows"] for _, v in ones if v["rows"] > 1) == 6
    assert max(v["rows"] for _, v in ones) == 22
    assert [round(v["over_defaults"], 2) for _, v in ones if v["rows"] == 1] == [0.56]
