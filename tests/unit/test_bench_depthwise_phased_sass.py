"""bench/results/depthwise_phased_sass-sm90.json (bench/depthwise_phased_sass.py, no GPU): the
figures the results README and the depthwise spec quote for the phased backward-data objects,
recomputed from the run's rows."""

from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "depthwise_phased_sass-sm90.json"


def test_phased_objects_issue_fewer_instructions_loads_and_divisions() -> None:
    rows = json.loads(RUN.read_text())["rows"]
    assert all(r["phased"]["phased"] and not r["raster"]["phased"] for r in rows)
    compared = [r for r in rows if not r["raster"]["loops"]]
    assert len(compared) == 4 and all(not r["phased"]["loops"] for r in rows)
    ratio = {r["layer"].split(" (")[1][:3]: (
        round(r["phased"]["instructions"] / r["raster"]["instructions"], 2),
        round(r["phased"]["loads"] / r["raster"]["loads"], 2)) for r in compared}
    # Quoted: 3x3 0.51 of the instructions and 0.44 of the loads, 5x5 0.40 and 0.36.
    assert ratio == {"3x3": (0.51, 0.44), "5x5": (0.4, 0.36)}
    assert all(r["phased"]["divisions"] == 1 and r["raster"]["divisions"] == 4 for r in rows)
    # The raster 7x7 object loops over its rows: its static counts are not a program's.
    assert [r["layer"] for r in rows if r["raster"]["loops"]] == ["a 7x7 stride-2 layer"]


def test_3d_phased_objects_run_about_half_the_instructions_of_a_depth_tap() -> None:
    run = json.loads((RUN.parent / "depthwise_phased_sass_3d-sm90.json").read_text())
    assert run["dims"] == 3 and len(run["rows"]) == 4
    for r in run["rows"]:
        # Both loop over the depth taps: the static counts are one depth tap's body.
        assert r["phased"]["phased"] and not r["raster"]["phased"]
        assert r["phased"]["loops"] == r["raster"]["loops"] == 1
        assert r["phased"]["loads"] < r["raster"]["loads"]
    ratio = [round(r["phased"]["instructions"] / r["raster"]["instructions"], 2)
             for r in run["rows"]]
    # Quoted: 0.54 of the instructions on X3D's 54 and 108 channels (pairs), 0.62 on 216
    # and 432 (16-byte vectors); 20 loads against 45 and 8 against 18.
    assert ratio == [0.54, 0.54, 0.62, 0.62]
    assert [(r["phased"]["loads"], r["raster"]["loads"]) for r in run["rows"]] == \
        [(20, 45), (20, 45), (8, 18), (8, 18)]
