"""The figures solvers/triton_kn2row.py and bench/results/README.md quote for kn2row on the H100
(bench/results/kn2row_h100/), recomputed from the committed runs, and the claim rule
(`blas_kn2row_first`) checked against them: it takes the library form where that was the
faster side of the groups it names, and leaves the rest."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import blas_1x1
from miopenkernels.solvers.triton_kn2row import blas_kn2row_first
from miopenkernels.target import Target

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "kn2row_h100"
SM90 = Target("sm90", 132)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


@pytest.fixture()
def groups(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[float, float]]]:
    """Per group of the claim rule: (library form, best other solver), each GPU time over
    cuDNN's, per timed row."""
    monkeypatch.setattr(blas_1x1, "_offered", [True])  # as on a CUDA backend with cuBLAS
    out: dict[str, list[tuple[float, float]]] = {}
    for name in ("bwd", "bwd_small", "fwd", "fwd_small"):
        for row in json.loads((RUN / f"{name}.json").read_text())["rows"]:
            times = row["solvers"]
            library = next((v["gpu_ms"] for k, v in times.items()
                            if k.startswith("ConvBlasKn2Row")), None)
            if library is None:
                continue
            p = ConvProblem.from_key(row["key"])
            claims = blas_kn2row_first(p, SM90)
            if p.direction == "F":
                group = "F" if claims else "F whole input"
            elif all(s == 1 for s in p.stride):
                group = "B stride 1"
            elif claims:
                group = "B strided NHWC"
            else:
                group = "B strided " + ("divides" if p.in_layout == "NHWC" else "NCHW")
            best = min(v["gpu_ms"] for k, v in times.items() if "Kn2Row" not in k)
            out.setdefault(group, []).append((library / row["cudnn_gpu_ms"],
                                              best / row["cudnn_gpu_ms"]))
    return out


def _figures(rows: list[tuple[float, float]]) -> tuple:
    lib, best = [r[0] for r in rows], [r[1] for r in rows]
    return (len(rows), round(min(lib), 2), round(max(lib), 2), round(_geomean(lib), 2),
            round(min(best), 2), round(max(best), 2), round(_geomean(best), 2))


def test_the_claim_follows_the_timings(groups: dict) -> None:
    assert {g: _figures(rows) for g, rows in groups.items()} == {
        "F": (18, 0.12, 0.34, 0.22, 0.51, 1.86, 0.76),
        "F whole input": (6, 0.71, 1.17, 0.86, 1.73, 4.62, 2.73),
        "B stride 1": (32, 0.38, 1.14, 0.62, 1.02, 4.88, 1.73),
        "B strided NHWC": (44, 0.51, 1.36, 0.79, 0.49, 1.46, 0.83),
        "B strided divides": (8, 0.65, 0.97, 0.84, 0.57, 1.07, 0.72),
        "B strided NCHW": (52, 0.89, 1.83, 1.19, 0.43, 1.81, 0.77)}
    # Where it claims, faster than the best of the rest on most rows; the rest are the 3x3
    # stems at stride 2 channels-last at batches 8 and 1 (up to 1.20x the implicit GEMM's).
    claimed = [r for g in ("F", "B stride 1", "B strided NHWC") for r in groups[g]]
    assert (len(claimed), sum(lib < best for lib, best in claimed)) == (94, 82)
    assert round(max(lib / best for lib, best in claimed), 2) == 1.20


def test_the_grid_and_the_forms_side_by_side() -> None:
    grid = (RUN / "grid" / "gpu_tests.txt").read_text()
    assert re.search(r"\b108 passed\b", grid) and "failed" not in grid
    ratios = []
    for name in ("bwd", "bwd_small", "fwd", "fwd_small"):
        saved = json.loads((RUN / f"{name}.json").read_text())
        assert saved["failures"] == [] and saved["device"].startswith("NVIDIA H100")
        for case in saved["summary"].values():
            three = next(k for k in case["solvers"] if "Tf32x3Kn2Row" in k)
            library = next(k for k in case["solvers"] if k.startswith("ConvBlasKn2Row"))
            assert case[three]["vs_first"] == 1.0  # the three-product form is listed first
            ratios.append(case[library]["vs_first"])
            assert case[library]["max_rel_err"] < 2e-6  # against IEEE cuDNN
    assert (len(ratios), round(min(ratios), 2), round(max(ratios), 2)) == (8, 0.25, 0.96)


def _library_over_cudnn(pattern: str, names: tuple[str, ...]) -> list[float]:
    out = []
    for name in names:
        for row in json.loads((RUN / f"{name}.json").read_text())["rows"]:
            if re.search(pattern, row["key"]):
                ms = next(v["gpu_ms"] for k, v in row["solvers"].items()
                          if k.startswith("ConvBlasKn2Row"))
                out.append(round(ms / row["cudnn_gpu_ms"], 2))
    return out


def test_the_layers_the_readme_names() -> None:
    def span(values: list[float]) -> tuple[float, float]:
        return min(values), max(values)

    latent = r"^(320|512)-64-64-3x3-4-64-64-{n}-.*-NCHW-FP32-B$"
    assert span(_library_over_cudnn(latent.format(n="32"), ("bwd",)) +
                _library_over_cudnn(latent.format(n="8"), ("bwd_small",))) == (0.80, 0.90)
    assert span(_library_over_cudnn(latent.format(n="1"), ("bwd_small",))) == (0.94, 1.14)
    stems = r"^(64|128)-512-512-3x3-3-512-512-[0-9]+-.*-{layout}-"
    assert span(_library_over_cudnn(stems.format(layout="NCHW"), ("bwd_small",))) == \
        (0.65, 0.80)
    assert span(_library_over_cudnn(stems.format(layout="NHWC"), ("bwd_small",))) == \
        (0.38, 0.48)
    assert span(_library_over_cudnn(r"^128-512-512-3x3-3-512-512-.*-F$", ("fwd_small",))) == \
        (0.12, 0.18)
    rest = [round(min(v["gpu_ms"] for k, v in row["solvers"].items() if "Kn2Row" not in k)
                  / row["cudnn_gpu_ms"], 2)
            for row in json.loads((RUN / "fwd_small.json").read_text())["rows"]
            if row["key"].startswith("128-512-512-3x3-3-512-512-")]
    assert span(rest) == (0.53, 0.81)


def test_immediate_mode_chooses_it() -> None:
    run = RUN / "immediate"
    assert re.search(r"\b26 passed\b", (run / "gpu_tests.txt").read_text())
    rows = []
    for name in ("zoo_kn2row_b32", "zoo_kn2row_b8_b1"):
        saved = json.loads((run / f"{name}.json").read_text())
        assert saved["errors"] == 0 and saved["device"].startswith("NVIDIA H100")
        rows += saved["rows"]
    mine = [r for r in rows if r["solver"].startswith("ConvBlasKn2Row")]
    assert all(r["solver"] == "ConvBlasKn2Row" + ("Fwd" if r["case"][5] == "F" else "Bwd")
               for r in mine)

    def span(pick: list[dict], key: str = "ratio") -> tuple[float, float]:
        return round(min(r[key] for r in pick), 2), round(max(r[key] for r in pick), 2)

    at32 = [r for r in mine if r["n"] == 32]
    stems = [r for r in at32 if r["layer"] in ("conv_first", "encoder.conv_in")]
    assert span([r for r in stems if r["case"] == "FP32-B-NCHW"]) == (0.65, 0.65)
    assert span([r for r in at32 if r["case"] == "FP32-B-NCHW" and r not in stems]) == \
        (0.89, 0.92)
    assert span([r for r in at32 if r["case"] == "FP32-B-NHWC"]) == (0.38, 0.55)
    assert span([r for r in at32 if r["case"][5] == "F"]) == (0.12, 0.20)
    assert span(mine) == (0.12, 1.14) and span(mine, "wall_ratio") == (0.12, 1.18)
    others = sorted({(r["network"], r["layer"]) for r in rows
                     if r["ratio"] > 1.5 and r not in mine})
    assert others == [("esrgan", "conv_last"), ("sd15_vae", "post_quant_conv")]
    last = [r for r in rows if r["layer"] == "conv_last" and r["n"] == 8 and r["ratio"] > 1.5]
    assert len(last) == 3 and span(last) == (2.84, 5.28)
    assert span([r for r in mine if r["layer"] == "conv_last"]) == (0.17, 0.20)
    small = [r for r in rows if r["layer"] == "post_quant_conv" and r["ratio"] > 1.5]
    assert span(small) == (1.56, 2.95)
    assert (round(min(r["cudnn_gpu_ms"] for r in small), 3),
            round(max(r["cudnn_gpu_ms"] for r in small), 3)) == (0.004, 0.008)
