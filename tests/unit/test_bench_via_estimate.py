"""bench/via_estimate.py without a GPU: the copies' cost per byte from the layers of a similar
size, the estimate of a layer from two rows, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import via_estimate  # noqa: E402

KEY = "64-28-28-3x3-64-28-28-32-1x1-1x1-1x1-0-{}-FP16-W"
GROUPED = "128-56-56-3x3-128-56-56-32-1x1-1x1-1x1-0-{}-FP16-W_g32"


def _row(layer: str, key: str, layout: str, solver: str, ms: float) -> dict:
    return {"network": "net", "layer": layer, "case": f"FP16-W-{layout}", "n": 32,
            "held_out": False, "key": key.format(layout), "solver": solver,
            "ours_gpu_ms": ms, "cudnn_gpu_ms": 1.0, "ratio": ms}


def test_the_copies_cost_per_byte_comes_from_layers_of_a_similar_size() -> None:
    pairs = [(10**8, 0.03), (10**8, 0.05), (10**8, 0.04), (2 * 10**8, 0.06), (10**8, 0.04),
             (10**6, 0.01)]  # the last far smaller: not a neighbour of 1e8 bytes
    assert via_estimate.copies_ms(pairs, 10**8, 0.5) == pytest.approx(0.04)
    assert via_estimate.copies_ms(pairs, 10**8, 0.9) == pytest.approx(0.05)
    # Too few within 2x: the window widens until five are in it.
    assert via_estimate.copies_ms(pairs, 10**6, 0.5) > 0


def test_a_layer_is_its_nhwc_time_plus_the_copies(tmp_path: Path) -> None:
    rows = []
    for i in range(6):  # the Via layers that measure the copies: 0.1 ms more than NHWC
        rows += [_row(f"via{i}", KEY, "NCHW", "ConvTritonImplicitGemmViaNhwcWrw", 0.5),
                 _row(f"via{i}", KEY, "NHWC", "ConvTritonImplicitGemmWrw", 0.4)]
    rows += [_row("g", GROUPED, "NCHW", "ConvTritonImplicitGemmWrw", 1.0),
             _row("g", GROUPED, "NHWC", "ConvTritonImplicitGemmWrw", 0.3)]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"rows": rows}))
    found = via_estimate.estimate([str(run)], "FP16-W", None, "packed", 0.9)
    (layer,) = found["layers"]
    per_byte = 0.1 / via_estimate.copied_bytes(KEY.format("NCHW"))
    copies = per_byte * via_estimate.copied_bytes(GROUPED.format("NCHW"))
    assert layer["via_ms"] == pytest.approx(0.3 + copies, abs=1e-4)
    assert layer["via_over_nchw"] == pytest.approx(0.3 + copies, abs=1e-3)
    assert via_estimate.estimate([str(run)], "FP16-W", None, "strided-1x1", 0.9)["layers"] == []


@pytest.mark.parametrize(("args", "message"), [
    (["README.md", "--case", "FP16-W"], "not a bench/zoo.py result"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP16"], "is not <type>-<direction>"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP16-W", "--quantile", "2"],
     "--quantile"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP16-F"], "too few to measure"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-F", "--dims", "3",
      "--copies-case", "FP16"], "--copies-case"),
])
def test_refusals(args: list[str], message: str) -> None:
    run = subprocess.run([sys.executable, "bench/via_estimate.py", *args], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


KEY_3D = "64-8-14-14-3x3x3-64-8-14-14-32-1x1x1-1x1x1-1x1x1-0-{}-{}-F"


def test_3d_layers_with_the_copies_of_another_case(tmp_path: Path) -> None:
    """`--dims 3` reads NCDHW and NDHWC rows and the 3-D solvers' names; the copies' cost may
    come from another case's runs (FP16 Via layers for an FP32 estimate)."""
    def row(layer: str, t: str, layout: str, solver: str, ms: float) -> dict:
        return {"network": "net", "layer": layer, "case": f"{t}-F-{layout}", "n": 32,
                "held_out": False, "key": KEY_3D.format(layout, t), "solver": solver,
                "ours_gpu_ms": ms, "cudnn_gpu_ms": 1.0, "ratio": ms}

    copies = []
    for i in range(5):  # FP16: the route took 0.1 ms more than the NDHWC kernel
        copies += [row(f"c{i}", "FP16", "NCDHW", "ConvTriton3dViaNdhwcFwd", 0.5),
                   row(f"c{i}", "FP16", "NDHWC", "ConvTriton3dFwd", 0.4)]
    fp32 = [row("x", "FP32", "NCDHW", "ConvTriton3dTf32x3Fwd", 3.0),
            row("x", "FP32", "NDHWC", "ConvTriton3dTf32x3Fwd", 1.0)]
    (tmp_path / "copies.json").write_text(json.dumps({"rows": copies}))
    (tmp_path / "fp32.json").write_text(json.dumps({"rows": fp32}))
    found = via_estimate.estimate([str(tmp_path / "fp32.json")], "FP32-F",
                                  "ConvTriton3dTf32x3Fwd", "aligned", 0.9, 3, "FP16-F",
                                  [str(tmp_path / "copies.json")])
    (layer,) = found["layers"]
    per_byte = 0.1 / via_estimate.copied_bytes(KEY_3D.format("NCDHW", "FP16"))
    nbytes = via_estimate.copied_bytes(KEY_3D.format("NCDHW", "FP32"))
    assert nbytes == 2 * via_estimate.copied_bytes(KEY_3D.format("NCDHW", "FP16"))
    assert layer["via_ms"] == pytest.approx(1.0 + per_byte * nbytes, abs=1e-4)
    assert found["copies"]["case"] == "FP16-F" and found["copies"]["pairs"] == 5
    with pytest.raises(ValueError, match="too few"):  # the FP32 rows hold no Via layers
        via_estimate.estimate([str(tmp_path / "fp32.json")], "FP32-F", None, None, 0.9, 3)
