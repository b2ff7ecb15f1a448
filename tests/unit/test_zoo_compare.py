"""bench/zoo_compare.py: two zoo.py runs compared over the rows both hold, per case and part
(zoo, held out), with the rows whose solver stayed the same apart per solver; files that are
not zoo results refused in one line (exit 2)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "zoo_compare.py"


def _row(layer: str, solver: str, ratio: float, held: bool = False,
         case: str = "FP16-W-NHWC") -> dict:
    return {"network": "net", "layer": layer, "case": case, "n": 32, "solver": solver,
            "ratio": ratio, "held_out": held}


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text(json.dumps({"device": "NVIDIA H200", "rows": rows}))
    return str(path)


def _compare(tmp_path: Path, before: list[dict], after: list[dict], *extra: str
             ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), _write(tmp_path / "a.json", before),
                           _write(tmp_path / "b.json", after), "--json", *extra],
                          capture_output=True, text=True, timeout=60)


def test_same_solver_rows_show_apart_from_solver_changes(tmp_path: Path) -> None:
    before = [_row("a", "Wrw", 2.0), _row("b", "Wrw", 4.0), _row("c", "Direct", 20.0),
              _row("d", "Wrw", 3.0, held=True), _row("gone", "Wrw", 9.0)]
    after = [_row("a", "Wrw", 1.0), _row("b", "Wrw", 2.0), _row("c", "Padded", 2.0),
             _row("d", "Wrw", 3.0, held=True), _row("new", "Wrw", 0.1)]
    run = _compare(tmp_path, before, after)
    assert run.returncode == 0, run.stderr
    cases = json.loads(run.stdout)["cases"]
    zoo, held = cases["FP16-W-NHWC zoo"], cases["FP16-W-NHWC held_out"]
    assert zoo["layers"] == 3  # rows only one run holds are left out
    assert math.isclose(zoo["before"], (2 * 4 * 20) ** (1 / 3))
    assert math.isclose(zoo["after"], (1 * 2 * 2) ** (1 / 3))
    assert set(zoo["same_solver"]) == {"Wrw"}  # the Direct row changed solver
    same = zoo["same_solver"]["Wrw"]
    assert same["layers"] == 2
    assert math.isclose(same["before"], math.sqrt(8)) and math.isclose(same["after"], math.sqrt(2))
    assert zoo["solver_changed"]["layers"] == 1
    assert math.isclose(zoo["solver_changed"]["after"], 2.0)
    assert held["layers"] == 1 and math.isclose(held["after"], 3.0)


def test_cases_filter_and_bad_input(tmp_path: Path) -> None:
    rows = [_row("a", "Wrw", 2.0), _row("a", "Fwd", 1.0, case="FP16-F-NHWC")]
    run = _compare(tmp_path, rows, rows, "--cases", "FP16-F-NHWC")
    assert set(json.loads(run.stdout)["cases"]) == {"FP16-F-NHWC zoo"}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    run = subprocess.run([sys.executable, str(SCRIPT), str(bad), str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "is not a bench/zoo.py result" in run.stderr and "Traceback" not in run.stderr
