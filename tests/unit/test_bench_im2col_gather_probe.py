"""bench/im2col_gather_probe.py without a GPU: every layer it names is one the im2col form
takes on sm90, its column matrix the size the spec says, and its refusals."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():  # noqa: ANN202 - bench/im2col_gather_probe.py as a module
    spec = importlib.util.spec_from_file_location("im2col_gather_probe",
                                                  ROOT / "bench" / "im2col_gather_probe.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_layer_is_one_the_form_takes() -> None:
    from miopenkernels.solvers import LIBRARY_SOLVERS
    from miopenkernels.target import Target

    mod = _module()
    sm90 = Target("sm90", 132)
    for spec in mod.LAYERS:
        p = mod.problem(spec)
        name = "ConvBlasIm2col" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[p.direction]
        solver = next(s for s in LIBRARY_SOLVERS if s.name == name)
        assert solver.is_applicable(p, sm90), spec[0]
        assert 0 < mod.column_bytes(p) <= solver.workspace_bytes(p)
    first = mod.problem(mod.LAYERS[0])  # 14x14 pixels of 32 images by 3x3 taps of 256
    assert mod.column_bytes(first) == 32 * 14 * 14 * 9 * 256 * 2


def test_refusals() -> None:
    run = subprocess.run([sys.executable, "bench/im2col_gather_probe.py", "--layers", "nope"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 3 and "no layer 'nope'" in run.stderr
    assert "Traceback" not in run.stderr
    run = subprocess.run([sys.executable, "bench/im2col_gather_probe.py", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and "--repeats" in run.stdout


def test_the_traffic_bound_the_readme_quotes() -> None:
    """--bound over the committed H100 run: the column matrix's traffic at the datasheet's
    rate against cuDNN and the first choice, per case, as bench/results/README.md quotes."""
    import json

    mod = _module()
    run = ROOT / "bench" / "results" / "im2col_h100-5f39bda"
    runs = [json.loads((run / f"{n}.json").read_text())
            for n in ("fp16_f", "fp16_b", "wplain_FP16")]
    got = mod.bound(runs, 3350.0)
    assert {c: (e["layers"], e["traffic_vs_cudnn"], e["pick_vs_cudnn"]) for c, e in got.items()
            if c.endswith("NHWC")} == {"FP16-F-NHWC": (71, 0.77, 1.478),
                                       "FP16-B-NHWC": (43, 1.089, 1.449),
                                       "FP16-W-NHWC": (42, 0.417, 1.233)}
    text = " ".join((ROOT / "bench" / "results" / "README.md").read_text().split())
    assert "comes alone to 0.77 of cuDNN's whole layer in FP16 forward NHWC (71 layers" in text
    assert "1.09 in backward data, 0.42 in backward weights, where the first choices took 1.48, " \
        "1.45 and 1.23" in text

