"""bench/blas_estimate.py without a GPU: the calibration over the layers the library ran in
every direction, a layer's estimate from its other two directions, the Via twin beside it,
its refusals, and the committed figures that solvers/blas_1x1.py's BLAS_FIRST_ESTIMATED
quotes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import blas_estimate  # noqa: E402

RESULTS = ROOT / "bench" / "results"
RUNS = [str(RESULTS / r) for r in ("zoo_h200-fp32-bw-every8-ef1efe1.json.gz",
                                   "zoo_h200-fp32-every4-ef1efe1.json.gz",
                                   "zoo_h200-w-9ec5af9.json", "zoo_h200-fb-9ec5af9.json")]
KEY = "{c}-28-28-1x1-{k}-28-28-32-0x0-1x1-1x1-0-{lay}-{t}-{d}"
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _row(layer: str, data_type: str, direction: str, layout: str, solver: str, ms: float,
         c: int = 64) -> dict:
    lay = "NHWC-NHWC-NHWC" if layout == "NHWC" else "NCHW"
    return {"network": "net", "layer": layer, "case": f"{data_type}-{direction}-{layout}",
            "n": 32, "held_out": False,
            "key": KEY.format(c=c, k=128, lay=lay, t=data_type, d=direction),
            "solver": solver, "ours_gpu_ms": ms, "cudnn_gpu_ms": 0.1, "ratio": ms / 0.1}


def _run(tmp_path: Path, rows: list[dict]) -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"rows": rows}))
    return str(path)


def test_a_layer_is_its_other_directions_times_the_calibration(tmp_path: Path) -> None:
    rows = []
    for i, ratio in enumerate((1.0, 1.2, 1.4, 1.6, 2.0)):  # FP16: W over max(F, B)
        c = 16 * (i + 1)
        rows += [_row(f"l{i}", "FP16", "F", "NHWC", "ConvBlasGemm1x1Fwd", 0.10, c),
                 _row(f"l{i}", "FP16", "B", "NHWC", "ConvBlasGemm1x1Bwd", 0.20, c),
                 _row(f"l{i}", "FP16", "W", "NHWC", "ConvBlasGemm1x1Wrw", 0.20 * ratio, c)]
    rows += [_row("x", "FP32", "F", "NHWC", "ConvBlasGemm1x1Fwd", 0.30),
             _row("x", "FP32", "B", "NHWC", "ConvBlasGemm1x1Bwd", 0.25),
             _row("x", "FP32", "W", "NHWC", "ConvTritonImplicitGemmTf32x3Wrw", 1.2),
             _row("x", "FP32", "W", "NCHW", "ConvTritonImplicitGemmViaNhwcWrw", 0.9),
             # Only one other direction on the library: not estimated.
             _row("y", "FP32", "F", "NHWC", "ConvBlasGemm1x1Fwd", 0.30),
             _row("y", "FP32", "B", "NHWC", "ConvTritonImplicitGemmTf32x3Bwd", 0.25),
             _row("y", "FP32", "W", "NHWC", "ConvTritonImplicitGemmTf32x3Wrw", 1.2)]
    found = blas_estimate.estimate([_run(tmp_path, rows)], "FP32-W-NHWC", "FP16", 0.9)
    assert found["calibration"]["layers"] == 5
    assert found["calibration"]["median"] == pytest.approx(1.4)
    assert found["calibration"]["pessimistic"] == pytest.approx(2.0)
    (layer,) = found["layers"]
    assert layer["layer"] == "x" and layer["library_other_ms"] == pytest.approx(0.30)
    assert layer["est_ms"] == pytest.approx(0.42) and layer["pessimistic_ms"] == 0.6
    assert layer["via_twin_ms"] == 0.9  # the twin's route is the smaller alternative
    assert layer["est_over_alternative"] == pytest.approx(0.42 / 0.9, abs=1e-3)
    assert found["summary"]["zoo"]["picked_vs_cudnn"] == pytest.approx(12.0)
    assert found["summary"]["held_out"]["layers"] == 0


def test_one_pixel_channel_planes_count_as_the_channels_last_case(tmp_path: Path) -> None:
    """A squeeze-and-excitation layer in NCHW is the channels-last call: it calibrates and
    is estimated as the NHWC case."""
    se = "672-1-1-1x1-168-1-1-32-0x0-1x1-1x1-0-NCHW-{t}-{d}"
    rows = []
    for i in range(5):
        for d in "FBW":
            r = _row(f"l{i}", "FP16", d, "NCHW", f"ConvBlasGemm1x1{SUFFIX[d]}", 0.01)
            r["key"] = se.replace("672", str(600 + i)).format(t="FP16", d=d)
            rows.append(r)
    for d, solver in (("F", "ConvBlasGemm1x1Fwd"), ("B", "ConvBlasGemm1x1Bwd"),
                      ("W", "ConvTritonImplicitGemmTf32x3Wrw")):
        r = _row("se", "FP32", d, "NCHW", solver, 0.02 if d != "W" else 0.024)
        r["key"] = se.format(t="FP32", d=d)
        rows.append(r)
    found = blas_estimate.estimate([_run(tmp_path, rows)], "FP32-W-NHWC", "FP16", 0.9)
    (layer,) = found["layers"]
    assert layer["est_ms"] == pytest.approx(0.02) and "via_twin_ms" not in layer


def test_the_committed_estimate_is_what_the_table_quotes() -> None:
    """The figures BLAS_FIRST_ESTIMATED's comment gives, from the committed runs."""
    from miopenkernels.solvers import blas_1x1

    assert blas_1x1.BLAS_FIRST_ESTIMATED["sm90"] == {"FP32-W-NHWC": 0}
    found = blas_estimate.estimate(RUNS, "FP32-W-NHWC", "FP16", 0.9)
    cal, zoo, held = found["calibration"], found["summary"]["zoo"], found["summary"]["held_out"]
    assert (cal["layers"], round(cal["median"], 2), round(cal["pessimistic"], 2)) == \
        (225, 1.17, 1.63)
    assert (zoo["layers"], zoo["picked_vs_cudnn"], zoo["est_vs_cudnn"]) == (15, 3.327, 1.002)
    assert round(zoo["pessimistic_vs_cudnn"], 2) == 1.39
    assert round(zoo["est_over_alternative"], 2) == 0.50
    assert (held["layers"], round(held["picked_vs_cudnn"], 2),
            round(held["est_vs_cudnn"], 2)) == (4, 7.55, 2.76)
    # Every layer: the library's estimate below what runs there now (or its twin's route).
    assert all(e["est_over_alternative"] < 1 for e in found["layers"])
    assert (RESULTS / "blas_estimate_fp32_w_h200.json").is_file()
    committed = json.loads((RESULTS / "blas_estimate_fp32_w_h200.json").read_text())
    assert committed["summary"] == found["summary"]


@pytest.mark.parametrize(("args", "message"), [
    (["README.md", "--case", "FP32-W-NHWC"], "not a bench/zoo.py result"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-W"], "is not <type>-<direction>"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-W-NHWC", "--calibrate", "FP8"],
     "--calibrate"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-W-NHWC", "--quantile", "0.2"],
     "--quantile"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-W-NHWC"], "too few to calibrate"),
])
def test_refusals_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "blas_estimate.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_run_that_timed_the_estimated_case_bears_it_out() -> None:
    """BLAS_FIRST_ESTIMATED's comment: the library measured at 0.56 of cuDNN on 13 of the
    layers (at most 0.89), under the estimate, the IEEE kernel 0.90, the three-product 2.42."""
    import math

    run = json.loads((RESULTS / "alternatives_blas_fp32_w_h200.json").read_text())
    ratios: dict[str, list[float]] = {}
    for row in run["rows"]:
        assert row["case"] == "FP32-W-NHWC"
        if "ConvBlasGemm1x1Wrw" not in row["solvers"]:
            continue  # not a 1x1 layer: the library does not take it
        for name, timing in row["solvers"].items():
            ratios.setdefault(name, []).append(timing["gpu_ms"] / row["cudnn_gpu_ms"])
    geo = {n: round(math.exp(sum(map(math.log, v)) / len(v)), 2) for n, v in ratios.items()}
    assert len(ratios["ConvBlasGemm1x1Wrw"]) == 13
    assert geo == {"ConvBlasGemm1x1Wrw": 0.56, "ConvTritonImplicitGemmTf32x3Wrw": 2.42,
                   "ConvTritonImplicitGemmWrw": 0.90}
    assert max(ratios["ConvBlasGemm1x1Wrw"]) < 0.9
