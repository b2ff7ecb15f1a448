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


def test_graph_profile_pairs_each_layer_with_its_run_of_convolution_kernels() -> None:
    pytest.importorskip("torch")
    profile = _bench("torch_graph_profile")
    assert not profile.is_conv("void cudnn::bn_fw_inf_1C11_kernel_NHWC<float>")
    assert profile.is_conv("internal::gemvx::kernel<int>")
    replay = [("conv2d_fwd", 0.0, 4.0), ("conv2d_bwd_weight_reduce", 4.5, 6.0),
              ("batch_norm", 6.5, 7.0), ("conv2d_fwd", 7.5, 9.5), ("relu elementwise", 10, 11),
              ("nvjet_sm90_gemm", 11.5, 13.0)]
    layers = profile.per_layer(replay, ["a", "b", "fc"])
    assert layers == [{"layer": "a", "us": 5.5, "kernels": 2},
                      {"layer": "b", "us": 2.0, "kernels": 1},
                      {"layer": "fc", "us": 1.5, "kernels": 1}]
    assert profile.per_layer(replay, ["a", "b"]) is None  # the runs do not pair up
    slower = [(n, s, s + 2 * (e - s)) for n, s, e in replay]
    medians = profile.layer_medians([replay, slower, replay], ["a", "b", "fc"])
    assert [m["us"] for m in medians] == [5.5, 2.0, 1.5]
    table = "\n".join(profile.layer_table([{"layer": "a", "torch_us": 2.0, "ours_us": 5.0},
                                           {"layer": "b", "torch_us": 2.0, "ours_us": 1.0}]))
    assert table.index(" a ") < table.index(" b ")  # the largest excess first


def _in_model_case(model: str, per_split: dict[int, list[float]]) -> dict:
    """A bench/split_in_model.py case of two small-grid layers (32 tiles of 16 steps, and 128
    tiles of 4) timed at each forced split."""
    shapes = [(32, 16), (128, 4)]

    def layers(times: list[float], splits: list[int]) -> list[dict]:
        return [{"layer": f"l{i}", "us": t, "small_grid_split": s, "programs": p, "steps": st,
                 "tile": "64x32x64 w4 s3"}
                for i, ((p, st), t, s) in enumerate(zip(shapes, times, splits, strict=True))]

    variants = {"rule": {"layers": layers([9.0, 4.0], [1, 1])}}
    for split, times in per_split.items():
        variants[f"split{split}"] = {"layers": layers(times, [split, min(split, 2)])}
    return {"model": model, "case": "FP16-F-NHWC", "variants": variants,
            "torch_layers": [{"layer": "l0", "us": 5.0}, {"layer": "l1", "us": 3.0}]}


def test_small_grid_fit_in_the_models_picks_the_costs_whose_splits_sum_least(
        tmp_path: Path) -> None:
    fit = _bench("small_grid_fit")
    # The 32-tile layer is fastest at a split of 8, the 128-tile one unsplit.
    case = _in_model_case("net", {1: [9.0, 4.0], 2: [7.0, 6.0], 4: [6.0, 6.0], 8: [5.0, 6.0]})
    path = tmp_path / "in_model.json"
    path.write_text(json.dumps({"cases": [case]}))
    rows = fit.in_model_rows([str(path)])
    assert [r["times"] for r in rows] == [{1: 9.0, 2: 7.0, 4: 6.0, 8: 5.0}, {1: 4.0, 2: 6.0}]
    rule = fit.fit_in_model(rows, 132)
    picks = [fit.in_model_pick(r, rule["reduce_steps"], rule["programs_per_sm"], 132)
             for r in rows]
    assert picks == [5.0, 4.0]
    score = fit.score_in_model(rows, rule, 132)["net"]
    assert score == {"layers": 2, "untimed": 0, "rule_us": 9.0, "best_us": 9.0,
                     "package_us": 13.0, "torch_us": 8.0}


def test_the_model_benches_run_each_case_and_write_their_rows(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture
                                                              ) -> None:
    pytest.importorskip("torch")
    profile = _bench("torch_graph_profile")
    monkeypatch.setattr(profile, "environment", lambda: {"device": "none"})
    args = type("Args", (), {"cases": "resnet50,1,FP16,channels_last;mobilenet_v2,8,FP32,x",
                             "replays": 3, "out": tmp_path / "r", "json": False})()
    rc = profile.run_cases(args, lambda *case: {"case": list(case)}, lambda rows: len(rows))
    assert rc == 0 and capsys.readouterr().out.strip() == "2"
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["cases"] == [{"case": ["resnet50", 1, "FP16", "channels_last"]},
                                {"case": ["mobilenet_v2", 8, "FP32", "x"]}]
    assert written["replays"] == 3 and written["environment"] == {"device": "none"}
