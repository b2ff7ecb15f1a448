"""The backward-weights benches without a GPU: the figures bench/results/README.md quotes from
bench/conv_ceiling.py's `--best`, bench/split_sweep.py's `--compare` and
bench/split_profile.py's and bench/depthwise_wrw_split.py's `--from-json` over the committed
runs, and their refusal of files that are not runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)


def _json(*args: str) -> dict:
    run = _run(*args, "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_reading_dy_transposed_is_never_slower_and_walking_rows_is_not_kept() -> None:
    found = _json("bench/conv_ceiling.py", "--from-json",
                  str(RESULTS / "conv_ceiling_w_h200.json"), "--best")
    k = {name: round(v["vs_cudnn"], 2) for name, v in found["kernels"].items()}
    assert k == {"cublas": 1.01, "gemm-w": 4.62, "shipped": 1.73, "rows": 1.8, "dyT": 1.66}
    dyt, rows = found["pairs"]["dyT/shipped"], found["pairs"]["rows/shipped"]
    assert dyt["pairs"] == rows["pairs"] == 30
    assert round(dyt["geomean"], 2) == 0.92 and dyt["max"] < 1.004
    assert round(rows["geomean"], 2) == 1.02 and rows["layers_faster"] == 2
    again = _json("bench/conv_ceiling.py", "--from-json",
                  str(RESULTS / "conv_ceiling_w_dyt_h200.json"), "--best")
    pair = again["pairs"]["dyT/shipped"]
    assert (pair["pairs"], round(pair["geomean"], 2), round(pair["min"], 2)) == (50, 0.96, 0.83)
    assert pair["max"] < 1.004 and pair["layers_faster"] == 10
    wins = again["kernels"]["dyT"]["fastest_tiles"]
    assert sum(n for t, n in wins.items() if t.startswith("128x128x32w4s4")) == 6
    fwd = _json("bench/conv_ceiling.py", "--from-json",
                str(RESULTS / "conv_ceiling_fwd_wt_h200.json"), "--best")
    assert {n: round(v["vs_cudnn"], 2) for n, v in fwd["kernels"].items()} == \
        {"shipped": 1.5, "wT": 1.5}
    assert round(fwd["pairs"]["wT/shipped"]["geomean"], 2) == 1.0


def test_contiguous_partials_make_every_split_cheaper() -> None:
    found = _json("bench/split_sweep.py", "--compare",
                  str(RESULTS / "split_sweep_dyt_h200.json"),
                  str(RESULTS / "split_sweep_partials_h200.json"))
    ratio = {int(s): round(v["geomean"], 3) for s, v in found["splits"].items()}
    assert ratio == {1: 0.993, 2: 0.71, 4: 0.658, 8: 0.596, 16: 0.585, 32: 0.515, 64: 0.454}
    # Each split's launches took less time the more parts they had.
    assert all(ratio[a] > ratio[b] for a, b in zip((2, 4, 8, 16, 32), (4, 8, 16, 32, 64),
                                                    strict=True))
    assert found["layers"] == 192
    assert (round(found["best_vs_cudnn"]["old"], 2), round(found["best_vs_cudnn"]["new"], 2)) \
        == (1.97, 1.63)


def test_the_runtime_objects_run_as_fast_as_the_jit() -> None:
    run = _run("bench/split_profile.py", "--from-json",
               str(RESULTS / "split_profile_h200.json"))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 6
    main = [float(x) for x in
            (line.split("conv2d_bwd_weight ")[1].split("(")[1].split("x")[0] for line in lines)]
    assert max(main) <= 1.10


def test_files_that_are_not_runs_are_refused_in_one_line() -> None:
    for args in (("bench/split_sweep.py", "--compare", "README.md", "README.md"),
                 ("bench/split_profile.py", "--from-json", "README.md")):
        run = _run(*args)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.count("\n") == 1
        assert "is not" in run.stderr or "are not" in run.stderr


def test_depthwise_split_fit_is_the_rule_the_spec_holds(tmp_path: Path) -> None:
    run = str(RESULTS / "dw_wrw_split_h200.json")
    found = _json("bench/depthwise_wrw_split.py", "--from-json", run)
    got = {c: (v["rows"], v["today"], round(v["best_per_row"], 2)) for c, v in found.items()}
    assert got == {"FP16-W-NCHW": (51, 1.43, 0.94), "FP16-W-NHWC": (51, 2.86, 1.47)}
    fit = _json("bench/depthwise_wrw_split.py", "--from-json", run, "--fit")
    nhwc = fit["FP16-W-NHWC"]
    assert (nhwc["tile"], nhwc["fitted_rows"], nhwc["held_out_rows"]) == ("16x32w4", 39, 12)
    assert (nhwc["fitted_today"], nhwc["fitted_geomean"]) == (3.09, 1.877)
    assert (nhwc["held_out_today"], nhwc["held_out_geomean"]) == (2.224, 1.488)
    sys.path.insert(0, str(ROOT))
    from kernels.conv_triton_depthwise_spec import SPLIT_RULES, TILES

    # The channels-last rule and tile are the fit's; NCHW's fit is no better than its rule.
    assert SPLIT_RULES[True] == {k: nhwc[k] for k in ("waves", "most", "least")}
    usual = TILES[("W", True)]
    assert nhwc["tile"] == f"{usual['BLOCK_M']}x{usual['BLOCK_N']}w{usual['num_warps']}"
    nchw = fit["FP16-W-NCHW"]
    assert nchw["fitted_geomean"] == nchw["fitted_today"]
    for text in ("{}", "not json", json.dumps({"sms": 132, "rows": [{"case": "x"}]})):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        refused = _run("bench/depthwise_wrw_split.py", "--from-json", str(bad), "--fit")
        assert refused.returncode == 2 and refused.stdout == "", text
        assert refused.stderr.count("\n") == 1 and "not a run" in refused.stderr


def test_few_channel_split_fit_is_the_rule_the_spec_holds(tmp_path: Path) -> None:
    run = str(RESULTS / "split_sweep_smallc_h200.json")
    fit = _json("bench/split_sweep.py", "--fit", run)
    assert set(fit) == {"FP16-W-NCHW", "FP16-W-NHWC"}
    for case, today, fitted in (("FP16-W-NCHW", 1.176, 0.831), ("FP16-W-NHWC", 2.356, 1.777)):
        v = fit[case]
        assert (v["tile"], v["fitted_rows"], v["held_out_rows"]) == ("64x32x32w4s4", 25, 1)
        assert (v["fitted_today"], v["fitted_geomean"]) == (today, fitted)
        assert v["best_per_row"] <= v["fitted_geomean"] < v["fitted_today"]
    sys.path.insert(0, str(ROOT))
    from kernels import conv_triton_grid_spec as grid
    from kernels.conv_triton_kernels_spec import splits_of

    kernel = "conv2d_bwd_weight_smallc"
    rule = (grid.SPLIT_WAVES[kernel], grid.MAX_SPLIT[kernel], grid._MIN_SPLIT_STEPS[kernel])
    assert all((v["waves"], v["most"], v["least"]) == rule for v in fit.values())
    assert grid.MAX_SPLIT[kernel] in splits_of("sm90", kernel)
    assert max(splits_of("sm90", "conv2d_bwd_weight")) == grid.MAX_SPLIT["conv2d_bwd_weight"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"case": "FP16-W-NCHW", "times": {"x": 1}}]}))
    refused = _run("bench/split_sweep.py", "--fit", str(bad))
    assert refused.returncode == 2 and refused.stdout == "" and "not a split_sweep" in \
        refused.stderr


def test_the_ranking_replay_moves_picks_from_portable_solvers_only() -> None:
    found = _json("bench/ranking_replay.py", "--compare",
                  str(RESULTS / "ranking_replay_9e68394.json"),
                  str(RESULTS / "ranking_replay_66c63c2.json"))
    assert (found["problems"], found["moved"]) == (3780, 70)
    assert all(not r["old"].startswith("ConvTriton") and r["new"].startswith("ConvTriton")
               for r in found["rows"].values())
    assert sum(found["by_pair"].values()) == 70
    refused = _run("bench/ranking_replay.py", "--compare", str(RESULTS / "README.md"),
                   str(RESULTS / "ranking_replay_66c63c2.json"))
    assert refused.returncode == 2 and "not two replays" in refused.stderr


def test_the_all_taps_depthwise_trial_kernel_computes_backward_weights() -> None:
    """bench/depthwise_wrw_taps.py's trial kernel under Triton's interpreter (no GPU): filters
    3/5/7, strides, dilations, several parts, both layouts, against a float64 loop."""
    run = _run("bench/depthwise_wrw_taps.py", "--check")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    errors = [float(line.rsplit(" ", 1)[1]) for line in run.stdout.splitlines()
              if line.startswith("C=")]
    assert len(errors) == 8 and max(errors) < 1e-5


def test_the_trial_bench_needs_a_gpu_for_timings() -> None:
    run = _run("bench/depthwise_wrw_taps.py", "--out", "/nonexistent/x")
    assert run.returncode == 6 and "GPU machine" in run.stderr
