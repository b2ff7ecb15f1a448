"""bench/im2col_claims.py without a GPU: the widths it chooses from a run of the im2col form
beside the kernels (a run made up here, its keys real problems), the held-out layers left out
of the choice, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from miopenkernels.problem import ConvProblem

ROOT = Path(__file__).resolve().parents[2]


def _row(k: int, mine: float, other: float, held_out: bool = False, c: int = 64,
         direction: str = "F") -> dict[str, Any]:
    p = ConvProblem(n=32, c=c, k=k, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1),
                    direction=direction, in_type="FP16", in_layout="NHWC", wei_layout="NHWC",
                    out_layout="NHWC")
    return {"case": f"FP16-{direction}-NHWC", "key": p.key(), "n": 32, "held_out": held_out,
            "cudnn_gpu_ms": 1.0, "solvers": {
                f"ConvBlasIm2col{'Fwd' if direction == 'F' else 'Bwd'}": {"gpu_ms": mine},
                "ConvTritonImplicitGemmFwd": {"gpu_ms": other},
                "ConvTritonImplicitGemmPaddedFwd": {"gpu_ms": other * 1.5}}}


def _run(tmp_path: Path, rows: list[dict], *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"rows": rows}))
    return subprocess.run([sys.executable, "bench/im2col_claims.py", str(path), "--json",
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_least_width_where_the_form_wins(tmp_path: Path) -> None:
    rows = [_row(64, 2.0, 1.0), _row(128, 1.2, 1.0), _row(256, 0.8, 1.0), _row(384, 0.9, 1.0),
            _row(512, 0.6, 1.0), _row(640, 1.01, 1.0), _row(512, 0.5, 1.0, held_out=True),
            _row(64, 3.0, 1.0, held_out=True),
            # backward data: never faster, so no claim
            _row(64, 1.5, 1.0, direction="B", c=256), _row(64, 1.1, 1.0, direction="B", c=512),
            _row(64, 1.3, 1.0, direction="B", c=640)]
    run = _run(tmp_path, rows)
    assert run.returncode == 0, run.stderr
    cases = json.loads(run.stdout)["cases"]
    forward = cases["FP16-F-NHWC"]
    assert forward["width"] == 256  # 0.8, 0.9, 0.6, 1.01: 3 of 4 won, geomean 0.81
    assert forward["fit"]["layers"] == 6 and forward["fit"]["claimed"] == 4
    assert forward["held_out"]["layers"] == 2 and forward["held_out"]["claimed"] == 1
    assert abs(forward["held_out"]["after_vs_cudnn"] - (0.5 * 1.0) ** 0.5) < 1e-3
    assert cases["FP16-B-NHWC"]["width"] is None
    assert cases["FP16-B-NHWC"]["fit"]["after_vs_cudnn"] == 1.0
    strict = json.loads(_run(tmp_path, rows, "--margin", "0.8").stdout)["cases"]
    assert strict["FP16-F-NHWC"]["width"] is None  # 0.81, 0.82, then 0.78 on two layers...
    assert json.loads(_run(tmp_path, rows, "--margin", "0.8", "--least", "2", "--share",
                           "0.5").stdout)["cases"]["FP16-F-NHWC"]["width"] == 512  # ... won once


def test_refusals(tmp_path: Path) -> None:
    run = _run(tmp_path, [])
    assert run.returncode == 3 and "no layer" in run.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    run = subprocess.run([sys.executable, "bench/im2col_claims.py", str(bad)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2 and "bad.json" in run.stderr and "Traceback" not in run.stderr


def test_first_choice_before_and_with_the_rule(tmp_path: Path) -> None:
    """Where the run timed immediate mode's first choice (`pick`), the case reports it over
    cuDNN before and with the rule (the form where claimed); a 3-D layer's width too."""
    rows = [_row(k, mine, 1.0) for k, mine in ((64, 8.0), (256, 0.5), (384, 0.5), (512, 0.5))]
    for r, pick in zip(rows, (1.0, 2.0, 2.0, 2.0), strict=True):
        r["solvers"]["pick"] = {"gpu_ms": pick}
    p3 = ConvProblem(n=8, c=3, k=64, in_spatial=(8, 28, 28), filter=(3, 7, 7), pad=(1, 3, 3),
                     stride=(1, 2, 2), direction="W", in_type="FP32", in_layout="NCDHW",
                     wei_layout="NCDHW", out_layout="NCDHW")
    rows.append({"case": "FP32-W-NCDHW", "key": p3.key(), "n": 8, "held_out": False,
                 "cudnn_gpu_ms": 2.0, "solvers": {"ConvBlasIm2colWrw": {"gpu_ms": 1.0},
                                                  "ConvTriton3dTf32x3Wrw": {"gpu_ms": 4.0}}})
    run = _run(tmp_path, rows, "--least", "1")
    assert run.returncode == 0, run.stderr
    cases = json.loads(run.stdout)["cases"]
    fit = cases["FP16-F-NHWC"]["fit"]
    assert cases["FP16-F-NHWC"]["width"] == 256 and fit["claimed"] == 3
    assert abs(fit["pick_before_vs_cudnn"] - 8 ** 0.25) < 1e-3  # 1, 2, 2, 2
    assert abs(fit["pick_after_vs_cudnn"] - 0.125 ** 0.25) < 1e-3  # 1, 0.5, 0.5, 0.5
    three_d = cases["FP32-W-NCDHW"]
    assert three_d["width"] == 64 and three_d["fit"]["pick_before_vs_cudnn"] is None


def test_a_column_cap_where_wide_matrices_lose(tmp_path: Path) -> None:
    """3x3 stems (27 columns) won, 7x7 ones (147) lost at the same widths: the claim takes the
    least cap that holds the winners; a layer two runs timed counts once."""
    def stem(rs: int, mine: float, network: str) -> dict[str, Any]:
        p = ConvProblem(n=32, c=3, k=64, in_spatial=(112, 112), filter=(rs, rs),
                        pad=(rs // 2, rs // 2), direction="W", in_type="FP32",
                        in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
        return {"network": network, "layer": "stem", "case": "FP32-W-NHWC", "key": p.key(),
                "n": 32, "held_out": False, "cudnn_gpu_ms": 1.0,
                "solvers": {"ConvBlasIm2colWrw": {"gpu_ms": mine},
                            "ConvTritonImplicitGemmTf32x3Wrw": {"gpu_ms": 1.0}}}

    rows = [stem(3, 0.5, f"a{i}") for i in range(3)] + [stem(7, 1.5, f"b{i}") for i in range(3)]
    run = _run(tmp_path, rows + rows[:1])
    assert run.returncode == 0, run.stderr
    case = json.loads(run.stdout)["cases"]["FP32-W-NHWC"]
    assert (case["width"], case["columns"]) == (64, 32)
    assert case["fit"]["layers"] == 6 and case["fit"]["claimed"] == 3
    assert abs(case["fit"]["after_vs_cudnn"] - 0.5 ** 0.5) < 1e-3


def test_the_claims_on_sm90_are_the_committed_runs() -> None:
    """solvers/blas_im2col.py's IM2COL_FIRST for sm90 is what bench/im2col_claims.py chooses
    from the committed H100 run at its defaults, and the figures its comment and
    bench/results/README.md quote are that run's."""
    import importlib.util

    from miopenkernels.solvers.blas_im2col import IM2COL_FIRST

    spec = importlib.util.spec_from_file_location("im2col_claims",
                                                  ROOT / "bench" / "im2col_claims.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run = ROOT / "bench" / "results" / "im2col_h100-5f39bda"
    names = ("fp32_w", "wplain_FP32", "wplain_FP16", "fp16_f", "fp16_b", "fp16_nchw", "fp32_3d")
    rows = mod.layer_rows([json.loads((run / f"{n}.json").read_text()) for n in names])
    cases = mod.choose(rows, 0.95, 2 / 3, 3)
    chosen = {c: (e["width"], e["columns"]) for c, e in cases.items() if e["width"] is not None}
    assert IM2COL_FIRST["sm90"] == chosen
    assert not [c for c in chosen if not c.startswith("FP32-")]  # no 16-bit case
    fit = {c: (e["fit"]["layers"], e["fit"]["claimed"], round(e["fit"]["pick_before_vs_cudnn"], 2),
               round(e["fit"]["pick_after_vs_cudnn"], 2)) for c, e in cases.items()}
    assert fit["FP32-W-NHWC"] == (72, 29, 1.33, 1.04)
    assert fit["FP32-W-NDHWC"] == (21, 16, 1.23, 0.86)
    assert fit["FP32-B-NDHWC"] == (15, 3, 1.07, 1.03)
    held = cases["FP32-W-NDHWC"]["held_out"]
    assert (held["layers"], held["claimed"], round(held["pick_before_vs_cudnn"], 2),
            round(held["pick_after_vs_cudnn"], 2)) == (6, 4, 0.77, 0.77)
    saved = json.loads((ROOT / "bench" / "results" /
                        "im2col_claims_h100-5f39bda.json").read_text())
    assert {c: (e["width"], e["columns"]) for c, e in saved["cases"].items()
            if e["width"] is not None} == chosen


def test_the_moves_and_the_find_run_the_readme_quotes() -> None:
    """picks_sm90-132-baf6f22-a09c949.json (immediate mode's moves) and
    zoo_h100-fp32-w-fewc-a09c949.json (find's picks on the few-channel FP32 backward weights):
    the figures bench/results/README.md quotes."""
    results = ROOT / "bench" / "results"
    picks = json.loads((results / "picks_sm90-132-baf6f22-a09c949.json").read_text())
    assert (picks["problems"], picks["moved"]) == (41526, 115)
    moved = {(c["before"], c["after"]): c for c in picks["changes"]}
    assert {after for _, after in moved} == {"ConvBlasIm2colWrw", "ConvBlasIm2colBwd"}
    igemm = moved[("ConvTritonImplicitGemmTf32x3Wrw", "ConvBlasIm2colWrw")]["measured"]
    assert (igemm["problems"], igemm["before_geomean"], igemm["after_geomean"]) == \
        (24, 1.685, 1.176)
    fewk = moved[("ConvTritonFmaFewKWrw", "ConvBlasIm2colWrw")]["measured"]
    assert (fewk["problems"], fewk["before_geomean"], fewk["after_geomean"]) == (5, 1.634, 0.275)
    zoo = json.loads((results / "zoo_h100-fp32-w-fewc-a09c949.json").read_text())
    case = zoo["summary"]["FP32-W-NHWC"]
    assert (case["layers"], round(case["gpu_geomean"], 2), round(case["max_ratio"], 2)) == \
        (29, 1.22, 2.75)
    held = zoo["held_out"]["summary"]["FP32-W-NHWC"]
    assert (held["layers"], round(held["gpu_geomean"], 2)) == (4, 1.35)
    assert (zoo["compiles"], zoo["errors"]) == (6, 0)
    text = " ".join((results / "README.md").read_text().split())
    assert "115 of 41,526 moved" in text and "FP32-W-NHWC 1.22 of IEEE cuDNN" in text
