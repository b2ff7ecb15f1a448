"""bench/conv_ceiling.py without a GPU: the summary of a saved run (`--from-json`), recomputed
from its rows, whose figures bench/results/README.md quotes, and its refusal of a file that is
not one."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CEILING = RESULTS / "conv_ceiling_h200-b055ca9.json"
TILES = RESULTS / "conv_tiles_f_h200-b055ca9.json"


def _summary(path: Path) -> dict:
    run = subprocess.run([sys.executable, "bench/conv_ceiling.py", "--from-json", str(path),
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_ceiling_figures_come_from_the_rows() -> None:
    summary = _summary(CEILING)
    rows = json.loads(CEILING.read_text())["rows"]
    assert len(rows) == 12 and all(v["layers"] == 12 for v in summary.values())
    # One column by hand: the geomean of its time over cuDNN's.
    ratios = [r["after_256x128x64w8s3_us"] / r["cudnn_us"] for r in rows]
    assert math.isclose(summary["after_256x128x64w8s3"]["vs_cudnn"],
                        math.exp(sum(map(math.log, ratios)) / len(ratios)))
    quoted = {"cublas": 1.08, "gemm_256x128x64w8s3": 1.52, "gemm-tma_128x128x64w4s4": 1.68,
              "before_256x128x64w8s3": 1.86, "after_256x128x64w8s3": 1.69,
              "before_128x128x64w4s4": 2.29, "after_128x128x64w4s4": 1.95,
              "before_128x256x64w8s3": 2.36, "after_128x256x64w8s3": 2.07}
    assert {k: round(summary[k]["vs_cudnn"], 2) for k in quoted} == quoted
    # The plain GEMM's best tile beats every TMA tile and the kernel's best.
    best = {kind: min(v["vs_cudnn"] for k, v in summary.items() if k.startswith(kind + "_"))
            for kind in ("gemm", "gemm-tma", "after")}
    assert best["gemm"] < best["gemm-tma"] < best["after"]
    # Every kernel's output matched cuDNN's.
    assert max(v for r in rows for k, v in r.items() if k.endswith("_err")) < 1e-4


def test_no_tile_beats_the_usual_forward_tile() -> None:
    summary = _summary(TILES)
    usual = round(summary["after_256x128x64w8s3"]["vs_cudnn"], 2)
    others = {k: round(v["vs_cudnn"], 2) for k, v in summary.items()
              if k.startswith("after_") and k != "after_256x128x64w8s3"}
    assert usual == 1.71 and len(others) == 4 and min(others.values()) >= usual


def test_a_file_that_is_not_a_run_is_refused_in_one_line() -> None:
    run = subprocess.run([sys.executable, "bench/conv_ceiling.py", "--from-json",
                          "README.md"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "not a saved bench/conv_ceiling.py run" in run.stderr
