"""bench/picks_compare.py: two trees' first choices compared, and its refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import picks_compare  # noqa: E402


def _write(path: Path, picks: dict[str, str]) -> Path:
    path.write_text(json.dumps({"target": "sm90-132", "by_problem": picks}))
    return path


def test_it_counts_the_moves_per_pair(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    before = _write(tmp_path / "a.json", {"n/a k1": "A", "n/a k2": "A", "n/b k3": "B",
                                          "m/c k4": "C"})
    after = _write(tmp_path / "b.json", {"n/a k1": "X", "n/a k2": "X", "n/b k3": "X",
                                         "m/c k4": "C"})
    assert picks_compare.main([str(before), str(after), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["problems"] == 4 and out["moved"] == 3
    assert out["changes"][0] == {"before": "A", "after": "X", "problems": 2, "layers": ["n/a"]}
    assert out["changes"][1]["before"] == "B"


def test_it_refuses_what_it_cannot_compare(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    good = _write(tmp_path / "a.json", {"n/a k1": "A"})
    other = _write(tmp_path / "b.json", {"n/a k2": "A"})
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    empty = tmp_path / "d.json"
    empty.write_text(json.dumps({"classes": {}}))
    assert picks_compare.main([str(good), str(other)]) == 3
    assert picks_compare.main([str(good), str(bad)]) == 2
    assert picks_compare.main([str(empty), str(good)]) == 2
    assert picks_compare.main([str(good), str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("error: ") for line in err)


def test_the_committed_comparison_matches_the_results_readme() -> None:
    """bench/results/picks_sm90-132-c27ed56-2779260.json: the counts its README section
    quotes."""
    data = json.loads((ROOT / "bench" / "results" /
                       "picks_sm90-132-c27ed56-2779260.json").read_text())
    assert (data["problems"], data["moved"]) == (41526, 112)
    moved = {(r["before"], r["after"]): (r["problems"], len(r["layers"]))
             for r in data["changes"]}
    assert moved[("ConvTritonSmallCWrw", "ConvTritonFmaFewCWrw")] == (51, 17)
    assert moved[("ConvTritonImplicitGemmTf32x3Wrw", "ConvTritonFmaFewKWrw")] == (13, 5)
    assert moved[("ConvTritonImplicitGemmTf32x3Bwd", "ConvTritonFmaBwd")][0] == 20
    assert sum(n for (_, after), (n, _) in moved.items()
               if after == "ConvTritonFmaFewKBwd") == 16
    assert sum(n for (_, after), (n, _) in moved.items() if "Chunks" in after) == 12
    assert all(r["after"].startswith(("ConvTritonFma", "ConvTritonImplicitGemmPaddedChunks"))
               for r in data["changes"])
    text = (ROOT / "bench" / "results" / "README.md").read_text()
    assert "112 of 41,526" in text
