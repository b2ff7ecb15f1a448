"""The few-channel kernels' committed H100 run (bench/results/smallc_quotient_h100-13861c6):
the figures the spec (NARROW_M) and bench/results/README.md state, recomputed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "results" / "smallc_quotient_h100-13861c6"
sys.path.insert(0, str(ROOT / "bench"))
from _results import read_json  # noqa: E402

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_smallc_spec")


def _variants() -> list[dict]:
    return [r for f in ("variants.json", "variants_more.json", "variants_r3d_fp32.json")
            for r in read_json(RUN / f)["rows"]]


def _usual(row: dict) -> int:
    """The usual tile's positions a program before the narrow tile took NARROW_M."""
    return 64 if row["type"] == "FP32" else 128


def test_every_variant_matched_cudnn_and_the_grid_passed() -> None:
    rows = _variants()
    assert len(rows) == 30
    for row in rows:
        assert all(v < 1e-2 for k, v in row.items() if k.endswith("_err")), row["layer"]
    for name in ("gpu_tests.txt", "gpu_tests_narrow128.txt"):
        assert "516 passed" in (RUN / name).read_text()


def test_the_multiply_and_shift_beat_the_divisions_on_every_layer_and_tile() -> None:
    ratios = [r[f"quotient_{b}_ms"] / r[f"divide_{b}_ms"] for r in _variants()
              for b in (_usual(r), 256)]
    assert len(ratios) == 60 and max(ratios) < 0.94 and min(ratios) < 0.3


def test_the_narrow_tile_takes_narrow_m_positions_where_they_measured_faster() -> None:
    rows = _variants()
    narrow = [r for r in rows if r["sizes"]["K"] <= spec.NARROW_N]
    half = [r["quotient_256_ms"] / r[f"quotient_{_usual(r)}_ms"] for r in narrow
            if r["type"] != "FP32"]
    single = [r["quotient_256_ms"] / r[f"quotient_{_usual(r)}_ms"] for r in narrow
              if r["type"] == "FP32"]
    assert spec.NARROW_M == 256 and len(half) == 12 and len(single) == 6
    assert (round(min(half), 2), round(max(half), 2)) == (0.67, 0.80)
    assert (round(min(single), 2), round(max(single), 2)) == (0.49, 0.78)
    wide = [r["quotient_256_ms"] / r[f"quotient_{_usual(r)}_ms"] for r in rows
            if r["sizes"]["K"] > spec.NARROW_N and r["layout"] == "NDHWC"]
    assert (round(min(wide), 2), round(max(wide), 2)) == (1.09, 2.06)
    generic = read_json(RUN / "variants_generic.json")
    assert generic["generic"] is True
    assert all(r["quotient_256_ms"] < r["quotient_128_ms"] for r in generic["rows"])


def _ratio(run: dict, case: str, layer: str = "analysis1.conv_a") -> float:
    (row,) = [r for r in run["rows"] if r["network"] == "unet3d" and r["layer"] == layer
              and r["case"] == case]
    return row["ratio"]


def test_3d_unets_first_layer_through_find() -> None:
    run = read_json(RUN / "zoo.json")
    assert run["errors"] == 0
    before = read_json(ROOT / "bench" / "results" / "fewc_aligned_h100-6dc4da4" /
                       "zoo_after.json")
    fp32_before = read_json(ROOT / "bench" / "results" / "fewk_h100-6a76905" / "zoo.json")
    assert round(_ratio(before, "FP16-F-NDHWC"), 2) == 2.75
    assert round(_ratio(run, "FP16-F-NDHWC"), 2) == 1.06
    assert round(_ratio(fp32_before, "FP32-F-NCDHW"), 2) == 2.58
    assert round(_ratio(run, "FP32-F-NCDHW"), 2) == 1.39
    assert round(_ratio(fp32_before, "FP32-F-NDHWC"), 2) == 3.0
    assert round(_ratio(run, "FP32-F-NDHWC"), 2) == 1.24
    classes = run["classes"]
    assert round(classes["3-D"]["gpu_geomean"], 2) == 0.59
    assert round(classes["3-D"]["max_ratio"], 2) == 1.39
    assert round(read_json(RUN / "zoo_narrow128.json.gz")["classes"]["3-D"]["max_ratio"],
                 2) == 2.47
    readme = (ROOT / "bench" / "results" / "README.md").read_text()
    assert "smallc_quotient_h100-13861c6" in readme


def test_the_sass_counts_the_readme_states() -> None:
    rows = read_json(RUN / "sass_narrow128.json")
    fewer = [1 - r["quotient"]["instructions"] / r["divide"]["instructions"] for r in rows]
    assert len(rows) == 22 and (round(min(fewer), 2), round(max(fewer), 2)) == (0.07, 0.39)
    assert sum(r["divide"]["spills"] for r in rows) == 9
    assert sum(r["quotient"]["spills"] for r in rows) == 2
    (ndhwc,) = [r for r in rows if r["object"] == "FP16 128x32 CHANNELS_LAST=1 aligned"]
    assert (ndhwc["divide"]["instructions"], ndhwc["quotient"]["instructions"]) == (3176, 1944)
    wide = read_json(RUN / "sass.json")
    assert not any(r["quotient"]["spills"] for r in wide
                   if r["object"].startswith(("FP16 256", "BF16 256", "FP32 256"))
                   and "aligned" in r["object"])


def test_the_main_job_figures_the_readme_gives() -> None:
    from main_job_files import main_job_times, minutes

    setup, build, rebuild = main_job_times("2837931")
    readme = (ROOT / "README.md").read_text()
    assert rebuild is not None and f"nothing in {rebuild:.1f} s" in readme
    assert f"{minutes(build)} cold" in readme and minutes(setup + build) in readme
    assert f"set-up {setup:.1f} s" in readme
    header = (ROOT / "bench" / "results" / "main_job-2cpu-2837931.txt").read_text()
    assert "10348/10348 objects compiled" in header and " 0 failed" in header
    # The narrowed Triton IR key's run (the same objects, a slower hour), then the
    # module-keyed IR and the layer-class PerfDb sets' (fewer objects, a fast hour).
    for tree, objects, ratios in (("4c2c95c", 10348, "build {0:.2f}x tree 2837931's"),
                                  ("4b5a6a0", 10106,
                                   "build {0:.2f}x tree 2837931's, {1:.2f}x")):
        setup, build, rebuild = main_job_times(tree)
        assert rebuild is not None and f"nothing in {rebuild:.1f} s" in readme
        assert f"{minutes(build)} cold" in readme and minutes(setup + build) in readme
        assert f"set-up {setup:.1f} s against 48.4 s" in readme
        assert ratios.format(build / 1966.72, build / 2215.95) in readme
        header = (ROOT / "bench" / "results" / f"main_job-2cpu-{tree}.txt").read_text()
        assert f"{objects}/{objects} objects compiled" in header and " 0 failed" in header
    assert "sm90-132: 1403 jobs, 1403 compiled" in header
