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


def test_it_puts_the_timings_beside_the_moves(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    before = _write(tmp_path / "a.json", {"n/a k1": "A", "n/a k2": "A", "n/b k3": "A"})
    after = _write(tmp_path / "b.json", {"n/a k1": "X", "n/a k2": "X", "n/b k3": "X"})
    timed = tmp_path / "t.json"
    timed.write_text(json.dumps({"rows": [
        {"key": "k1", "cudnn_gpu_ms": 2.0, "solvers": {"A": {"gpu_ms": 4.0},
                                                         "X": {"gpu_ms": 1.0},
                                                         "X@1:2": {"gpu_ms": 0.1}}},
        {"key": "k2", "cudnn_gpu_ms": 1.0, "solvers": {"A": {"gpu_ms": 8.0},
                                                         "X": {"gpu_ms": 2.0}}},
        {"key": "k3", "cudnn_gpu_ms": 1.0, "solvers": {"X": {"gpu_ms": 1.0}}}]}))
    assert picks_compare.main([str(before), str(after), "--json", "--measured",
                               str(timed)]) == 0
    m = json.loads(capsys.readouterr().out)["changes"][0]["measured"]
    # k3 lacks the before choice's timing; X@1:2 is another tile, not the usual one.
    assert m["problems"] == 2 and m["before_geomean"] == 4.0 and m["after_geomean"] == 1.0
    assert picks_compare.main([str(before), str(after), "--measured", str(timed)]) == 0
    assert "timed on 2: 4.00 -> 1.00" in capsys.readouterr().out
    broken = tmp_path / "u.json"
    broken.write_text(json.dumps({"rows": [{"key": "k1"}]}))
    assert picks_compare.main([str(before), str(after), "--measured", str(broken)]) == 2
    assert picks_compare.main([str(before), str(after), "--measured", str(before)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_h200_backward_comparison_matches_the_results_readme() -> None:
    """bench/results/picks_sm90-132-035369f-3d8205b.json: the moves and the timed ratios
    its README section quotes."""
    data = json.loads((ROOT / "bench" / "results" /
                       "picks_sm90-132-035369f-3d8205b.json").read_text())
    assert (data["problems"], data["moved"]) == (41526, 123)
    moved = {(r["before"], r["after"]): r for r in data["changes"]}
    t3 = moved[("ConvTritonSmallCWrw", "ConvTritonImplicitGemmTf32x3Wrw")]
    assert t3["problems"] == 42 and len(t3["layers"]) == 14
    assert (t3["measured"]["before_geomean"], t3["measured"]["after_geomean"]) == (2.991, 1.532)
    fewc = moved[("ConvTritonSmallCWrw", "ConvTritonFmaFewCWrw")]["measured"]
    assert (fewc["before_geomean"], fewc["after_geomean"]) == (3.101, 1.903)
    wide = moved[("ConvTritonFmaFewCWrw", "ConvTritonImplicitGemmTf32x3Wrw")]["measured"]
    assert (wide["before_geomean"], wide["after_geomean"]) == (3.357, 2.027)
    video = moved[("ConvTriton3dSmallCFwd", "ConvTritonFmaSlicesFwd")]["measured"]
    assert (video["before_geomean"], video["after_geomean"]) == (2.193, 0.835)
    assert "measured" not in moved[("ConvTriton3dTf32x3Bwd",
                                    "ConvTritonImplicitGemmTf32x3SlicesBwd")]
    text = (ROOT / "bench" / "results" / "README.md").read_text()
    assert "123 of 41,526" in text


def test_before_as_times_the_old_choices_at_their_variant(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    """--before-as @split=1: the before tree ran the same solver unsplit; `timed` compares
    every problem whose two timings differ, moved or not, per case and batch."""
    k1 = "512-2-7-7-3x3x3-512-2-7-7-1-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-B"
    k2 = "512-2-7-7-3x3x3-512-2-7-7-1-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-F"
    before = _write(tmp_path / "a.json", {f"r/a {k1}": "S", f"r/a {k2}": "A"})
    after = _write(tmp_path / "b.json", {f"r/a {k1}": "S", f"r/a {k2}": "X"})
    timed = tmp_path / "t.json"
    timed.write_text(json.dumps({"rows": [
        {"key": k1, "cudnn_gpu_ms": 1.0, "solvers": {"S": {"gpu_ms": 2.0},
                                                       "S@split=1": {"gpu_ms": 8.0}}},
        {"key": k2, "cudnn_gpu_ms": 1.0, "solvers": {"A": {"gpu_ms": 3.0},
                                                       "X": {"gpu_ms": 1.0}}}]}))
    assert picks_compare.main([str(before), str(after), "--json", "--measured", str(timed),
                               "--before-as", "@split=1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["moved"] == 1 and out["changes"][0]["measured"]["before_geomean"] == 3.0
    assert out["timed"] == {
        "FP32-B-NCDHW@1": {"problems": 1, "before_geomean": 8.0, "after_geomean": 2.0},
        "FP32-F-NCDHW@1": {"problems": 1, "before_geomean": 3.0, "after_geomean": 1.0}}
    assert picks_compare.main([str(before), str(after), "--measured", str(timed),
                               "--before-as", "split=1"]) == 2
    assert "error: --before-as" in capsys.readouterr().err
