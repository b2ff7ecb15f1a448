"""bench/zoo_merge.py: runs of bench/zoo.py merged into the result one run would write; a
case whole from one run; runs of another stack, overlapping cases and files that are not zoo
results refused with one line and their exit code."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str, file: str):  # noqa: ANN202
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


MERGE = _load("bench_zoo_merge", "zoo_merge.py")
STACK = {"device": "NVIDIA H200", "driver": "580", "torch": "2.11", "cuda": "13.0",
         "cudnn": 91900, "triton": "3.6.0", "miopenkernels": "0.1", "every": 1, "repeats": 10,
         "warmup": 2}


def _row(network: str, case: str, n: int, ratio: float, held: bool = False) -> dict:
    return {"network": network, "layer": f"{network}.conv", "classes": ["plain"], "case": case,
            "n": n, "key": f"{network}-{case}-{n}", "ratio": ratio, "ratio_heuristics": ratio,
            "wall_ratio": ratio, "held_out": held}


def _run(rows: list[dict], not_reached: tuple[str, ...] = (), **changes: object) -> dict:
    return {**STACK, **changes, "method": "m", "compiles": 0, "errors": 0, "seconds": 10.0,
            "rows": rows, "failures": [], "skipped": [], "not_reached": list(not_reached)}


def test_runs_of_different_cases_give_what_one_run_would() -> None:
    a = [_row("resnet", "FP16-F-NHWC", 32, 0.5), _row("unet", "FP16-F-NHWC", 32, 2.0)]
    b = [_row("resnet", "FP16-W-NHWC", 32, 4.0), _row("vit", "FP16-W-NHWC", 32, 1.0, held=True)]
    merged = MERGE.merge([("a.json", _run(a)), ("b.json", _run(b))])
    expected = MERGE.report([r for r in a + b if not r["held_out"]])
    assert merged["summary"] == expected["summary"] and merged["classes"] == expected["classes"]
    assert merged["summary"]["FP16-F-NHWC"]["gpu_geomean"] == pytest.approx(1.0)
    assert merged["held_out"]["networks"] == ["vit"]
    assert merged["networks"] == ["resnet", "unet"] and merged["seconds"] == 20.0
    assert merged["runs"] == [
        {"file": "a.json", "cases": ["FP16-F-NHWC@32"], "seconds": 10.0},
        {"file": "b.json", "cases": ["FP16-W-NHWC@32"], "seconds": 10.0}]
    assert "| FP16-W-NHWC | 1 | 4.00 |" in MERGE.markdown(merged)


def test_a_case_in_two_runs_is_refused() -> None:
    a = _run([_row("resnet", "FP16-F-NHWC", 32, 0.5)])
    b = _run([_row("unet", "FP16-F-NHWC", 32, 2.0)])
    with pytest.raises(MERGE.MergeError, match="FP16-F-NHWC@32 is in both a.json and b.json"):
        MERGE.merge([("a.json", a), ("b.json", b)])


def test_an_unfinished_case_is_left_out_unless_another_run_holds_it_whole() -> None:
    cut = _run([_row("resnet", "FP16-F-NHWC", 32, 0.5), _row("resnet", "FP16-B-NHWC", 32, 3.0)],
               not_reached=("FP16-B-NHWC@32 (5 of 6 layers)", "FP16-W-NHWC@32"))
    merged = MERGE.merge([("cut.json", cut)])
    assert list(merged["summary"]) == ["FP16-F-NHWC"]
    assert merged["not_reached"] == ["FP16-B-NHWC@32", "FP16-W-NHWC@32"]
    whole = _run([_row("resnet", "FP16-B-NHWC", 32, 1.5), _row("unet", "FP16-B-NHWC", 32, 1.5)])
    merged = MERGE.merge([("cut.json", cut), ("whole.json", whole)])
    assert merged["summary"]["FP16-B-NHWC"]["layers"] == 2
    assert merged["summary"]["FP16-B-NHWC"]["gpu_geomean"] == pytest.approx(1.5)
    assert merged["not_reached"] == ["FP16-W-NHWC@32"]


def test_a_pass_cut_short_leaves_its_3d_layers_unfinished_too() -> None:
    # zoo.py runs a layout's 3-D layers in the same pass: NDHWC rows of a cut NHWC pass.
    cut = _run([_row("resnet", "FP16-B-NHWC", 32, 3.0), _row("r3d", "FP16-B-NDHWC", 32, 3.0)],
               not_reached=("FP16-B-NHWC@32 (5 of 6 layers)",))
    merged = MERGE.merge([("cut.json", cut)])
    assert merged["summary"] == {} and \
        merged["not_reached"] == ["FP16-B-NDHWC@32", "FP16-B-NHWC@32"]
    whole = _run([_row("resnet", "FP16-B-NHWC", 32, 1.5), _row("r3d", "FP16-B-NDHWC", 32, 2.0),
                  _row("x3d", "FP16-B-NDHWC", 32, 2.0)])
    merged = MERGE.merge([("cut.json", cut), ("whole.json", whole)])
    assert merged["summary"]["FP16-B-NDHWC"]["layers"] == 2 and merged["not_reached"] == []
    assert merged["runs"][1]["cases"] == ["FP16-B-NDHWC@32", "FP16-B-NHWC@32"]


def test_runs_of_another_stack_or_method_are_refused() -> None:
    a = _run([_row("resnet", "FP16-F-NHWC", 32, 0.5)])
    b = _run([_row("resnet", "FP16-W-NHWC", 32, 0.5)], cudnn=91000)
    with pytest.raises(MERGE.MergeError, match="cudnn 91000 against 91900") as info:
        MERGE.merge([("a.json", a), ("b.json", b)])
    assert info.value.code == 3


def _cli(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / "zoo_merge.py"), *map(str, files),
                           "--out", str(tmp_path / "out" / "zoo")], capture_output=True,
                          text=True)


def test_the_command_writes_json_and_markdown(tmp_path: Path) -> None:
    files = []
    for name, case in (("a", "FP16-F-NHWC"), ("b", "BF16-F-NHWC")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_run([_row("resnet", case, 32, 0.8)])))
        files.append(path)
    proc = _cli(tmp_path, *files)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads((tmp_path / "out" / "zoo.json").read_text())
    assert sorted(merged["summary"]) == ["BF16-F-NHWC", "FP16-F-NHWC"]
    assert (tmp_path / "out" / "zoo.md").read_text().startswith("Find's pick against cuDNN")


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "not readable as JSON"),
    ("[1, 2]", "not a bench/zoo.py result (no rows)"),
    (json.dumps({"rows": []}), "not a bench/zoo.py result (no device, driver"),
    (json.dumps({**STACK, "rows": [{"case": "x"}]}), "row 0 lacks one of"),
])
def test_a_file_that_is_not_a_zoo_result_is_refused_in_one_line(
        tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(text)
    proc = _cli(tmp_path, path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and says in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written
