"""The split work's bench helpers that run without a GPU: bench/kernels_ab.py (two packages'
times, judged on our milliseconds alone) and bench/torch_graph_profile.py's summary of a
replay's kernels (sums, gaps, overlaps)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:  # the bench scripts put bench/ first on the path: its kernels.py is not kernels/
        sys.path[:] = path
    return module


def _result(path: Path, times: dict[str, float]) -> Path:
    rows = [{"case": key.split("/")[0], "n": 32, "key": key.split("/")[1], "ours_ms": ms,
             "cudnn_ms": 1.0} for key, ms in times.items()]
    path.write_text(json.dumps({"rows": rows}))
    return path


def test_kernels_ab_compares_our_times_per_case_over_every_pair(tmp_path: Path) -> None:
    a1 = _result(tmp_path / "a1.json", {"FP16-W-NHWC/l1": 1.0, "FP16-W-NHWC/l2": 2.0,
                                        "FP16-F-NHWC/l1": 1.0})
    b1 = _result(tmp_path / "b1.json", {"FP16-W-NHWC/l1": 0.5, "FP16-W-NHWC/l2": 2.0,
                                        "FP16-F-NHWC/l1": 1.0})
    a2 = _result(tmp_path / "a2.json", {"FP16-W-NHWC/l1": 1.0, "FP16-W-NHWC/l2": 2.0})
    b2 = _result(tmp_path / "b2.json", {"FP16-W-NHWC/l1": 2.0, "FP16-W-NHWC/l2": 2.0})
    out = tmp_path / "ab.json"
    run = subprocess.run([sys.executable, "bench/kernels_ab.py", "--pair", str(a1), str(b1),
                          "--pair", str(a2), str(b2), "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.read_text())
    # W: ratios 0.5, 1, 2, 1 over the two pairs, geomean 1; F: one row, unchanged.
    assert result["cases"]["FP16-W-NHWC@32"] == {"b_over_a": 1.0, "rows": 4, "max": 2.0,
                                                 "min": 0.5}
    assert result["cases"]["FP16-F-NHWC@32"]["rows"] == 1
    assert result["slower"][0] == [2.0, "l1"] and result["faster"][0] == [0.5, "l1"]
    assert "FP16-W-NHWC@32" in run.stdout


def test_kernels_ab_refuses_a_missing_result_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "bench/kernels_ab.py", "--pair", str(tmp_path / "a"),
                          str(tmp_path / "b")], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 2 and "is not a file" in run.stderr
    assert "Traceback" not in run.stderr


def test_graph_profile_summary_splits_gaps_by_the_kernel_that_follows() -> None:
    pytest.importorskip("torch")
    profile = _bench("torch_graph_profile")
    assert profile.is_conv("conv2d_fwd") and profile.is_conv("sm90_xmma_fprop_implicit_gemm")
    assert not profile.is_conv("void at::native::vectorized_elementwise_kernel<4>")
    replay = [("conv2d_fwd", 0.0, 5.0), ("batch_norm", 6.0, 8.0),
              ("conv2d_bwd_weight_reduce", 7.5, 9.0)]
    s = profile.summarise([replay, replay, replay])
    assert (s["kernels"], s["conv_kernels"]) == (3, 2)
    assert s["kernel_us"] == 8.5 and s["conv_us"] == 6.5 and s["span_us"] == 9.0
    # 1 us before the batch norm, -0.5 (an overlap) before the reduce.
    assert s["gap_before_other_us"] == 1.0 and s["gap_before_conv_us"] == -0.5
    assert s["overlaps"] == 1 and s["gap_us"] == 0.5
    assert s["top"][0] == ["conv2d_fwd", 1, 5.0]
