"""`miopenkernels problem` through typer's test runner."""

from __future__ import annotations

import json

from miopenkernels.cli import app
from typer.testing import CliRunner

runner = CliRunner()
RESNET_LINE = ("./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -p 0 -q 0 "
               "-u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 3 -t 1")
FWD_KEY = "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"
BWD_KEY = "2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B"


def test_driver_line_as_json_gives_one_problem_per_direction():
    result = runner.invoke(app, ["problem", RESNET_LINE, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["key"] for r in rows] == [FWD_KEY, BWD_KEY]
    assert rows[0]["in_shape"] == [128, 1024, 14, 14]
    assert rows[0]["out_shape"] == [128, 2048, 7, 7]
    assert rows[1]["direction"] == "B"


def test_key_as_json_round_trips():
    result = runner.invoke(app, ["problem", BWD_KEY, "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["key"] == BWD_KEY
    assert (row["c"], row["k"], row["direction"]) == (1024, 2048, "B")


def test_text_output_shows_key_direction_and_shapes():
    # Wide enough that rich does not shorten the shape columns (80 columns would).
    result = runner.invoke(app, ["problem", RESNET_LINE], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert FWD_KEY in result.stdout and BWD_KEY in result.stdout
    assert "128x1024x14x14" in result.stdout and "128x2048x7x7" in result.stdout


def test_pool_line_as_json():
    result = runner.invoke(app, ["problem", "pool -n 128 -c 192 -H 71 -W 71 -y 3 -x 3 -u 2 -v 2 "
                                            "-m max -F 1", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["kind"], row["out_spatial"]) == ("pool", [35, 35])


def test_malformed_line_exits_3_with_one_line():
    result = runner.invoke(app, ["problem", "conv -n 1 -F 9", "--json"])
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr == "error: flag '-F' must be one of 0..6, got 9\n"


def test_malformed_key_exits_3():
    bad_out = "1024-14-14-1x1-2048-8-8-128-0x0-2x2-1x1-0-NCHW-FP32-F"  # 8x8 should be 7x7
    result = runner.invoke(app, ["problem", bad_out])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: key ") and "inconsistent" in result.stderr


def test_missing_argument_is_a_usage_error():
    assert runner.invoke(app, ["problem"]).exit_code == 2
