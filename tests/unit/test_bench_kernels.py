"""bench/kernels.py without a GPU: its cases, its summary and its refusals."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kernels.py"


def _module():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_kernels", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", [("FP16", "F", "NHWC", 32), ("TF32", "W", "NCHW", 1),
                                  ("BF16", "B", "NHWC", 64)])
def test_every_case_is_the_23_layers_in_its_direction_layout_and_type(case) -> None:  # noqa: ANN001
    type_name, direction, layout, batch = case
    ps = _module().problems(type_name, direction, layout, batch)
    assert len({p.key() for p in ps}) == 23
    storage = "FP32" if type_name == "TF32" else type_name
    assert all(p.direction == direction and p.n == batch and p.in_type == storage and
               p.in_layout == p.wei_layout == p.out_layout == layout for p in ps)


def test_summary_per_case_geomean_and_worst_layer() -> None:
    rows = [{"case": "FP16-F-NHWC", "ratio": r, "key": f"k{i}", "ours_ms": r, "cudnn_ms": 1.0,
             "rel_err": 1e-4 * i} for i, r in enumerate((0.5, 2.0, 1.0))]
    rows.append({"case": "FP32-W-NCHW", "ratio": 3.0, "key": "w", "ours_ms": 3.0,
                 "cudnn_ms": 1.0, "rel_err": 0.0})
    s = _module().summarise(rows)
    assert set(s) == {"FP16-F-NHWC", "FP32-W-NCHW"}
    assert s["FP16-F-NHWC"]["geomean_ratio"] == pytest.approx(1.0)
    assert s["FP16-F-NHWC"]["max_ratio"] == 2.0 and s["FP16-F-NHWC"]["max_layer"] == "k1"
    assert s["FP16-F-NHWC"]["layers"] == 3
    assert s["FP16-F-NHWC"]["max_rel_err"] == pytest.approx(2e-4)
    assert math.isclose(s["FP32-W-NCHW"]["geomean_ratio"], 3.0)


@pytest.mark.parametrize("argv", [["--types", "FP8"], ["--directions", "X"],
                                  ["--layouts", "NCDHW"], ["--batches", "x"],
                                  ["--batches", "0"]])
def test_a_malformed_command_line_exits_3_in_one_line(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), *argv], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("kernels: ")


def test_compare_kernels_reads_the_committed_runs() -> None:
    """bench/compare_kernels.py, whose figures bench/results/README.md quotes: the run of
    record against the fdd5c89 run, with the 45341a7 run for cuDNN's spread."""
    results = BENCH.parent / "results"
    spec = importlib.util.spec_from_file_location("compare_kernels",
                                                  BENCH.with_name("compare_kernels.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import json

    runs = [json.loads((results / n).read_text()) for n in
            ("kernels_h100.json", "kernels_h100-fdd5c89.json", "kernels_h100-45341a7.json")]
    table = module.compare(runs, 32)
    assert len(table) == 24 and all(v["layers"] == 23 for v in table.values())
    assert table["TF32-W-NHWC"]["ours"] < 0.65  # mma.sync
    assert all(v["cudnn_spread"] >= 1.0 for v in table.values())
    assert max(v["cudnn_spread"] for v in table.values()) > 1.5
    # Against itself nothing moved.
    same = module.compare([runs[0], runs[0]], 32)
    assert all(math.isclose(v["ours"], 1.0) and math.isclose(v["cudnn_spread"], 1.0)
               for v in same.values())
    bad = subprocess.run([sys.executable, str(BENCH.with_name("compare_kernels.py")),
                          str(results / "kernels_h100.json"), "/nonexistent.json"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
