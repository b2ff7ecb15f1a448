"""bench/ranking_zoo.py without a GPU: how committed timings become a layer's solvers (each
over its own run's cuDNN time, the newest timing of a solver winning), the scores, the
comparison of two results whose figures solvers/blas_1x1.py quotes, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def _module():  # noqa: ANN202 - bench/ranking_zoo.py as a module
    import importlib.util

    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("ranking_zoo", ROOT / "bench" / "ranking_zoo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _alternatives_row(**solvers: tuple[float, float]) -> dict[str, Any]:
    return {"network": "net", "layer": "conv", "case": "FP16-W-NCHW", "n": 32, "held_out": False,
            "key": "64-28-28-1x1-64-28-28-32-0x0-1x1-1x1-0-NCHW-NCHW-NCHW-FP16-W",
            "cudnn_gpu_ms": 2.0,
            "solvers": {name: {"gpu_ms": ms, "rel_err": err, "params": [1]}
                        for name, (ms, err) in solvers.items()}}


def test_a_row_gives_each_right_solver_over_cudnn() -> None:
    rz = _module()
    row = _alternatives_row(ConvTritonGemm1x1Wrw=(1.0, 1e-4), ConvTritonImplicitGemmWrw=(3.0, 0.5))
    assert rz._row_timings(row) == {"ConvTritonGemm1x1Wrw": (0.5, [1])}  # the wrong one dropped
    zoo_row = {"solver": "ConvBlasGemm1x1ViaNhwcWrw", "ours_gpu_ms": 3.0, "cudnn_gpu_ms": 4.0,
               "rel_err": 0.0}
    assert rz._row_timings(zoo_row) == {"ConvBlasGemm1x1ViaNhwcWrw": (0.75, None)}
    assert rz._row_timings({**zoo_row, "cudnn_gpu_ms": 0}) == {}
    assert rz._row_timings({**zoo_row, "rel_err": None}) == {}


def test_the_newest_timing_of_a_solver_counts_and_tile_variants_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from miopenkernels.solvers import blas_1x1

    rz = _module()
    monkeypatch.setattr(blas_1x1, "_offered", [False])  # the script offers the library
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"rows": [_alternatives_row(
        ConvTritonGemm1x1Wrw=(8.0, 0.0), ConvTritonImplicitGemmWrw=(4.0, 0.0))]}))
    new.write_text(json.dumps({"rows": [_alternatives_row(
        ConvTritonGemm1x1Wrw=(1.0, 0.0), **{"ConvTritonGemm1x1Wrw@64:64:64:8:4:4": (0.1, 0.0)})]}))
    os.utime(old, (1, 1))  # outside a checkout a file's age is its mtime
    timings = rz.load_timings([new, old])
    solvers = timings[("net", "conv", "FP16-W-NCHW", 32, "cuDNN")]["solvers"]
    assert solvers == {"ConvTritonGemm1x1Wrw": (0.5, [1], "new.json"),
                       "ConvTritonImplicitGemmWrw": (2.0, [1], "old.json")}


def test_scores_and_the_comparison_of_two_results() -> None:
    rz = _module()

    def row(layer: str, chosen: str, fastest: str, ratio: float, best: float,
            held_out: bool = False) -> dict[str, Any]:
        return {"network": "net", "layer": layer, "case": "FP16-W-NCHW", "n": 32,
                "held_out": held_out, "classes": ["plain"], "chosen": chosen,
                "fastest": fastest, "chosen_vs_cudnn": ratio, "fastest_vs_cudnn": best,
                "regret": ratio / best - 1}

    old = [row("a", "X", "Y", 2.0, 1.0), row("b", "Y", "Y", 1.0, 1.0),
           row("c", "X", "Y", 4.0, 1.0, held_out=True)]
    new = [row("a", "Y", "Y", 1.0, 1.0), row("b", "Y", "Y", 1.0, 1.0),
           row("c", "Y", "Y", 1.0, 1.0, held_out=True)]
    s = rz.summarise(old)
    assert s["problems"] == 3 and s["top1"] == round(1 / 3, 4) and s["regret_max"] == 3.0
    assert s["regret_geomean"] == round((2 * 1 * 4) ** (1 / 3) - 1, 4)
    assert rz.report({"rows": old})["sets"]["held out"]["problems"] == 1
    found = rz.compare({"rows": old, "unscored": []},
                       {"rows": new, "unscored": [{**old[1], "layer": "d"}]})
    assert found["moved"] == 2 and found["scored_in_both"] == 3
    assert found["groups"]["zoo"] == {"layers": 1, "old_vs_cudnn": 2.0, "new_vs_cudnn": 1.0}
    assert found["groups"]["X -> Y (held out)"]["old_vs_cudnn"] == 4.0
    assert found["moved_to_untimed"] == 0  # "d" was not scored before either


@pytest.mark.parametrize(("old", "new"), [("39642db", "7fbd4a4"), ("7fbd4a4", "47b51a0"),
                                          ("47b51a0", "47f3b4d"), ("47f3b4d", "e4c89d3"),
                                          ("e4c89d3", None)])
def test_the_committed_comparisons_are_what_the_committed_results_give(old: str,
                                                                       new: str | None) -> None:
    """The figures solvers/blas_1x1.py and bench/first_place.py quote: VIA_FIRST's change
    (39642db -> 7fbd4a4), BLAS_FEW's (-> 47b51a0), FP32's listing (-> 47f3b4d), FP32 forward's
    product-size limit (-> e4c89d3); then this tree's result, whose rules on estimates move
    choices only to solvers no run timed."""
    rz = _module()
    from _results import read_json

    newer = RESULTS / (f"ranking_zoo_sm9084-{new}.json.gz" if new else "ranking_zoo_sm9084.json")
    found = rz.compare(read_json(RESULTS / f"ranking_zoo_sm9084-{old}.json.gz"),
                       read_json(newer))
    name = "3589932" if old == "e4c89d3" else old
    assert found == json.loads((RESULTS / f"ranking_zoo_compare-{name}.json").read_text())
    if old == "e4c89d3":  # the estimates' rules: every moved choice is to an untimed solver
        assert (found["moved"], found["moved_to_untimed"]) == (0, 32)
        return
    parts = {g: v for g, v in found["groups"].items() if "->" not in g}
    assert len(parts) == 2 and all(v["new_vs_cudnn"] < v["old_vs_cudnn"] for v in parts.values())
    if old == "39642db":
        moved = found["groups"]["ConvBlasGemm1x1ViaNhwcWrw -> ConvTritonGemm1x1Wrw (zoo)"]
        assert (moved["layers"], round(moved["old_vs_cudnn"], 2),
                round(moved["new_vs_cudnn"], 2)) == (36, 1.27, 1.08)
    elif old == "7fbd4a4":
        assert found["slower"] == 0 and found["moved"] == 9
    else:  # FP32 rows of a run whose cuDNN ran TF32: kept apart and labelled so
        assert set(parts) == {"zoo, against cuDNN TF32", "held out, against cuDNN TF32"}
        if old == "47f3b4d":  # the product-size limit gives the large ones to the kernel
            assert {g.split(" (")[0] for g in found["groups"] if "->" in g} == {
                "ConvBlasGemm1x1Fwd -> ConvTritonImplicitGemmTf32x3Fwd"}


@pytest.mark.parametrize("args", [["--compare", "README.md", "README.md"]])
def test_refusals(args: list[str]) -> None:
    run = subprocess.run([sys.executable, "bench/ranking_zoo.py", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2 and "not two results" in run.stderr
    assert "Traceback" not in run.stderr
