"""bench/align8_backward_ab.py and bench/padded_ab.py without a GPU: which zoo layers each
times, and how `compare` pairs two arms of bench/zoo.py rows."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))


def _load(name: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


AB = _load("align8_backward_ab")
PADDED = _load("padded_ab")
ZOO = _load("zoo")


def test_each_ab_times_the_layers_it_is_about() -> None:
    layers = ZOO.load_layers(held_out=True)
    eights = [la for la in layers if AB.eights(la)]
    odd = [la for la in layers if PADDED.odd(la)]
    assert eights and odd and not set(map(id, eights)) & set(map(id, odd))
    assert all(la.problem.c % 8 == 0 and la.problem.k % 8 == 0 for la in eights)
    assert all(la.problem.c % 16 or la.problem.k % 16 for la in eights)
    assert all(la.problem.c % 8 or la.problem.k % 8 for la in odd)
    assert all(la.problem.groups == 1 and len(la.problem.in_spatial) == 2
               for la in eights + odd)
    assert any(la.network == "retinanet_resnet50_fpn" and la.problem.k == 819 for la in odd)


def _row(key: str, case: str, ours: float, cudnn: float, solver: str) -> dict:
    return {"network": "n", "layer": key, "key": key, "case": case, "n": 32,
            "ours_gpu_ms": ours, "ours_wall_ms": 2 * ours, "ratio": ours / cudnn,
            "solver": solver}


def test_compare_pairs_rows_and_names_the_arms() -> None:
    case = "FP16-F-NHWC"
    first = {"rows": [_row("a", case, 1.0, 2.0, "P"), _row("b", case, 4.0, 1.0, "P"),
                      _row("c", case, 1.0, 1.0, "P")]}
    second = {"rows": [_row("a", case, 4.0, 2.0, "U"), _row("b", case, 4.0, 1.0, "P")]}
    out = AB.compare(first, second, ("padded", "unpadded"))[case]
    assert out["layers"] == 2  # "c" has no partner
    assert out["padded_over_unpadded_gpu"] == 0.5  # geomean of 0.25 and 1
    assert (out["min_padded_over_unpadded"], out["max_padded_over_unpadded"]) == (0.25, 1.0)
    assert out["padded_vs_cudnn"] == 1.414 and out["unpadded_vs_cudnn"] == 2.828
    assert out["padded_max_vs_cudnn"] == 4.0 and out["same_solver"] == 1


def test_compare_writes_both_arms_and_refuses_what_is_not_a_zoo_result(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"device": "X", "rows": [_row("a", "FP16-W-NHWC", 1.0, 1.0, "P")]}))
    b.write_text(json.dumps({"device": "X", "rows": [_row("a", "FP16-W-NHWC", 2.0, 1.0, "U")]}))
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, str(BENCH / "padded_ab.py"), "compare", str(a),
                           str(b), "--out", str(out), "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "cmp.json").read_text())
    assert result["summary"]["FP16-W-NHWC"]["padded_over_unpadded_gpu"] == 0.5
    assert len(result["padded_rows"]) == len(result["unpadded_rows"]) == 1
    b.write_text("{}")
    proc = subprocess.run([sys.executable, str(BENCH / "align8_backward_ab.py"), "compare",
                           str(a), str(b), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1
    b.write_text("not json")
    proc = subprocess.run([sys.executable, str(BENCH / "padded_ab.py"), "compare", str(a),
                           str(b), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3 and proc.stderr.startswith("padded_ab: ")


@pytest.mark.parametrize("script", ["align8_backward_ab.py", "padded_ab.py"])
def test_help_needs_no_gpu(script: str) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "compare" in proc.stdout
