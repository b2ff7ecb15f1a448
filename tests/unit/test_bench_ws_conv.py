"""bench/ws_conv.py without a GPU: its summary recomputed from rows (`--from-json`), the refusal
of a file that is not a run, and the compile check the results README quotes
(bench/results/ws_conv-sm90.json: every specialised configuration split into a producer and
two consumer warp groups)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPILED = ROOT / "bench" / "results" / "ws_conv-sm90.json"


def _row(case: str, cudnn: float, gather: float, shift: dict, pad: float = 0.01) -> dict:
    return {"case": case, "cudnn_gpu_ms": cudnn, "gather_gpu_ms": gather, "pad_gpu_ms": pad,
            "shift": {name: {"conv_gpu_ms": t - pad, "total_gpu_ms": t, "rel_err": 1e-4}
                      for name, t in shift.items()}}


def _summary(tmp_path: Path, rows: list[dict]) -> dict:
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"device": "test", "batch": 32, "rows": rows}))
    run = subprocess.run([sys.executable, "bench/ws_conv.py", "--from-json", str(saved),
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_summary_is_the_geomean_over_cudnn(tmp_path: Path) -> None:
    ws, plain = "128x256x64w4s3ws", "128x128x64w4s4"
    rows = [_row("FP16-F-NHWC", 1.0, 1.5, {ws: 0.8, plain: 1.2}),
            _row("FP16-F-NHWC", 2.0, 2.0, {ws: 3.0, plain: 2.4}),
            _row("FP16-B-NHWC", 1.0, 1.7, {ws: 0.9}),
            _row("FP16-F-NHWC", 1.0, 4.0, {ws: 4.0}) | {"held_out": True}]
    rows[2]["shift"][plain] = {"error": "OutOfResources"}
    s = _summary(tmp_path, rows)
    f = s["FP16-F-NHWC"]
    assert f["layers"] == 2
    assert math.isclose(f["gather"], math.sqrt(1.5 * 1.0))
    assert math.isclose(f[f"{ws} total"], math.sqrt(0.8 * 1.5))
    assert math.isclose(f[f"{ws} conv"], math.sqrt(0.79 * 2.99 / 2))
    assert math.isclose(f["shift best total"], math.sqrt(0.8 * 1.2))
    assert math.isclose(f["best of shift and gather"], math.sqrt(0.8 * 1.0))
    b = s["FP16-B-NHWC"]
    assert f"{plain} total" not in b  # failed on the case's one layer: no column
    assert math.isclose(b["shift best total"], 0.9) and b["max_rel_err"] == 1e-4
    held = s["FP16-F-NHWC held out"]  # apart from the case's own layers
    assert held["layers"] == 1 and math.isclose(held["gather"], 4.0)


def test_a_file_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    run = subprocess.run([sys.executable, "bench/ws_conv.py", "--from-json", str(bad)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2 and "is not a saved bench/ws_conv.py run" in run.stderr
    assert "Traceback" not in run.stderr


def test_every_specialised_configuration_compiled_specialised() -> None:
    rows = json.loads(COMPILED.read_text())["rows"]
    assert {r["kernel"] for r in rows} == {"conv2d_shift", "gemm_ws", "conv2d_shift_wrw"}
    assert not [r for r in rows if "error" in r]
    ws = [r for r in rows if r["config"].endswith(("ws", "wsp"))]
    # 6 configurations forward, backward data and the GEMM (2 of them persistent); 3 weights
    assert len(ws) == 21 and sum(r["config"].endswith("wsp") for r in ws) == 6
    assert all(r["num_warps"] == 12 and r["setmaxnreg"] > 0 for r in ws)
    assert all(r["setmaxnreg"] == 0 for r in rows if r not in ws)
