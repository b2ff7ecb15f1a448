"""bench/pointwise_first.py: the pointwise row GEMMs' claims from runs that timed them beside
immediate mode's first choice, on made-up runs (the committed run's figures: a test of their
own)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import pointwise_first as pf  # noqa: E402


def _row(case: str, key: str, pick: float, ours: float, held_out: bool = False,
         name: str = "ConvTritonPointwiseFwd", picked: str = "ConvBlasGemm1x1Fwd") -> dict:
    return {"network": "net", "layer": key, "held_out": held_out, "case": case, "n": 32,
            "key": key, "cudnn_gpu_ms": 1.0,
            "solvers": {name: {"gpu_ms": ours}, "pick": {"gpu_ms": pick, "solver": picked}}}


def _run(tmp_path: Path, rows: list[dict], name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"rows": rows}))
    return path


def test_narrow_width_is_the_fewer_channels_either_way_round() -> None:
    assert pf.narrow_width("64-256-256-1x1-2-256-256-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F") == 2
    assert pf.narrow_width("3-128-128-128-1x1x1-64-128-128-128-32-0x0x0-1x1x1-1x1x1-0-NDHWC-"
                           "NDHWC-NDHWC-FP16-B") == 3


def test_claims_the_width_that_leaves_the_case_fastest(tmp_path: Path) -> None:
    case = "FP16-F-NHWC"
    rows = [_row(case, "64-8-8-1x1-2-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F", 2.0, 0.8),
            _row(case, "64-8-8-1x1-8-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F", 1.0, 0.9),
            _row(case, "64-8-8-1x1-16-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F", 0.5, 1.5),
            _row(case, "64-8-8-1x1-4-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F", 1.0, 0.5,
                 held_out=True)]
    cases = pf.fit(pf.read_rows([_run(tmp_path, rows)]))
    got = cases[case]
    # Up to 8 channels the solver is faster; at 16 the pick is: the claim stops at 8.
    assert got["width"] == 8 and got["claimed"] == 2 and got["layers"] == 3
    assert got["pick"] == pytest.approx((2.0 * 1.0 * 0.5) ** (1 / 3))
    assert got["with_claim"] == pytest.approx((0.8 * 0.9 * 0.5) ** (1 / 3))
    assert got["held_out_pick"] == pytest.approx(1.0)
    assert got["held_out_with_claim"] == pytest.approx(0.5)
    # A case where the solver never wins claims nothing.
    slow = [_row("BF16-W-NHWC", r["key"].replace("FP16-F", "BF16-W"), 1.0, 1.2,
                 name="ConvTritonPointwiseWrw") for r in rows[:3]]
    assert pf.fit(pf.read_rows([_run(tmp_path, slow)]))["BF16-W-NHWC"]["width"] == 0


def test_rows_the_solver_already_took_are_left_out_and_later_runs_win(tmp_path: Path) -> None:
    case = "FP16-F-NHWC"
    key = "64-8-8-1x1-2-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
    first = _run(tmp_path, [_row(case, key, 2.0, 0.8)], "a.json")
    second = _run(tmp_path, [_row(case, key, 3.0, 0.6)], "b.json")
    rows = pf.read_rows([first, second])
    assert len(rows) == 1 and rows[0]["pick"] == 3.0
    taken = _run(tmp_path, [_row(case, key, 0.8, 0.8, picked="ConvTritonPointwiseFwd")],
                 "c.json")
    assert pf.read_rows([taken]) == []


def test_command_line_prints_writes_and_refuses(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    key = "64-8-8-1x1-2-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
    run = _run(tmp_path, [_row("FP16-F-NHWC", key, 2.0, 0.5)])
    assert pf.main([str(run), "--out", str(tmp_path / "fit")]) == 0
    assert "| FP16-F-NHWC | 1 | 2.00 | 0.50 | 2 |" in capsys.readouterr().out
    saved = json.loads((tmp_path / "fit.json").read_text())
    assert saved["first"] == {"sm90": {"FP16-F-NHWC": [2, 8 * 8 * 32]}}
    assert math.isclose(saved["cases"]["FP16-F-NHWC"]["with_claim"], 0.5)
    assert pf.main([str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{}")
    assert pf.main([str(tmp_path / "bad.json")]) == 3
