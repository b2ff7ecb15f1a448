"""Numbers from outside: ASCII digits within range, one `error:` line and the class's exit code.

`str.isdigit()` is True for '²', '❽' and '౭', and `int()` raises past 4,300 digits: every such
value below must come back as one line naming the field, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from miopenkernels._numbers import parse_int
from miopenkernels.cli import app
from miopenkernels.detect import detect_devices
from miopenkernels.driver import parse_any_line
from miopenkernels.errors import DetectError, ProblemError, TargetError
from miopenkernels.problem import ConvProblem
from miopenkernels.target import Target
from typer.testing import CliRunner

runner = CliRunner()
TESTDATA = Path("/work/shared/testdata")
RX6900XT = TESTDATA / "rocminfo" / "gfx1030_rx6900xt.txt"
HUGE = "9" * 5000
KEY = "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"
NOT_ASCII = ["²", "❽", "౭", "1" * 4301, "-3", "0", "65536", "4x"]


def _one_error_line(result, code: int, *parts: str) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in parts:
        assert part in lines[0]
    assert len(lines[0]) < 400
    return lines[0]


# ----------------------------------------------------------------------------- the helper
@pytest.mark.parametrize("text", ["²", "❽", "౭", "1" * 4301, "+5", "5.0", "0x10", "", "١٢"])
def test_parse_int_takes_ascii_digits_only(text):
    with pytest.raises(TargetError, match=r"^the field must .*1\.\.100"):
        parse_int(text, "the field", 1, 100, TargetError)


def test_parse_int_range_sign_and_class():
    assert parse_int(" 007 ", "f", 0, 10, ProblemError) == 7
    assert parse_int("-5", "f", -10, 10, ProblemError, signed=True) == -5
    with pytest.raises(ProblemError, match="f must be in -10..10, got '11'"):
        parse_int("11", "f", -10, 10, ProblemError, signed=True)
    with pytest.raises(DetectError, match=r"\(5000 characters\)"):
        parse_int(HUGE, "f", 0, 10, DetectError)


# ----------------------------------------------------------------------------- environment
@pytest.mark.parametrize("value", NOT_ASCII)
def test_device_cu_override_exits_4(monkeypatch, value):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", value)
    with pytest.raises(TargetError, match="MIOPEN_DEVICE_CU"):
        detect_devices(RX6900XT)
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(RX6900XT), "--json"])
    _one_error_line(result, 4, "MIOPEN_DEVICE_CU", "1..65535")


# ----------------------------------------------------------------------------- rocminfo
@pytest.mark.parametrize("value", ["²", "❽", "౭", HUGE, "0", "-4", "lots"])
def test_rocminfo_compute_unit_exits_7(tmp_path, monkeypatch, value):
    monkeypatch.delenv("MIOPEN_DEVICE_ARCH", raising=False)
    monkeypatch.delenv("MIOPEN_DEVICE_CU", raising=False)
    text = RX6900XT.read_text()
    assert "Compute Unit:            80" in text
    file = tmp_path / "rocminfo.txt"
    file.write_text(text.replace("Compute Unit:            80", f"Compute Unit:   {value}"))
    with pytest.raises(DetectError, match="'Compute Unit' must be"):
        detect_devices(file)
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(file)])
    _one_error_line(result, 7, "Compute Unit", "1..65535")


def test_rocminfo_agent_number_of_5000_digits_is_not_an_agent(tmp_path, monkeypatch):
    monkeypatch.delenv("MIOPEN_DEVICE_ARCH", raising=False)
    monkeypatch.delenv("MIOPEN_DEVICE_CU", raising=False)
    file = tmp_path / "rocminfo.txt"
    file.write_text(RX6900XT.read_text().replace("Agent 2", f"Agent {HUGE}"))
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(file), "--json"])
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 6, 7), result.output


# ----------------------------------------------------------------------------- targets
@pytest.mark.parametrize("text", [f"gfx90a-{HUGE}", "gfx90a-²", "gfx90a-0", "gfx90a-65536",
                                  f"gfx90a_{HUGE}", "gfx90a" + "f" * 5000])
def test_target_parse_exits_4(text):
    with pytest.raises(TargetError):
        Target.parse(text)
    result = runner.invoke(app, ["matrix", "--targets", text, "--json"])
    assert "Traceback" not in result.output


@pytest.mark.parametrize("text", [f"gfx90a-{HUGE}", "gfx90a-²", "gfx90a-❽"])
def test_target_option_exits_4_with_one_line(text):
    result = runner.invoke(app, ["matrix", "--targets", text, "--json"])
    _one_error_line(result, 4, "target")


def test_package_name_with_huge_cu_is_a_target_error():
    with pytest.raises(TargetError, match="1..65535"):
        Target.from_package(f"miopenkernels-gfx90a-{HUGE}")


# ----------------------------------------------------------------------------- keys
@pytest.mark.parametrize(("key", "field"), [
    (KEY.replace("1024-", HUGE + "-", 1), "problem key"),
    (KEY.replace("-128-", f"-{HUGE}-"), "field N"),
    (KEY.replace("-7-7-", "-²-7-"), "field oH"),
    (KEY.replace("1x1", f"1x{HUGE}", 1), "field filter"),
    (KEY + "_g" + HUGE, "group count"),
    (KEY + "_g0", "group count"),
])
def test_key_with_bad_number_exits_3(key, field):
    with pytest.raises(ProblemError, match=field):
        ConvProblem.from_key(key)
    result = runner.invoke(app, ["problem", key, "--json"])
    _one_error_line(result, 3, field)


# ----------------------------------------------------------------------------- driver lines
POOL = "pool -n 2 -c 3 -H 8 -W 8 -y 2 -x 2 -p 0 -q 0 -u 2 -v 2 -m max -F 1"


@pytest.mark.parametrize(("line", "flag"), [
    (POOL.replace("-n 2", "-n 0"), "'-n' (--batchsize) must be at least 1, got 0"),
    (POOL.replace("-n 2", "-n -5"), "'-n' (--batchsize) must be at least 1, got -5"),
    (POOL.replace("-c 3", "-c 0"), "'-c' (--in_channels) must be at least 1, got 0"),
    (POOL.replace("-p 0", "-p -1"), "'-p' (--pad_h) must be at least 0, got -1"),
    (POOL.replace("-q 0", "-q -2"), "'-q' (--pad_w) must be at least 0, got -2"),
    (POOL.replace("-H 8", "-H 0"), "'-H' (--in_h) must be at least 1"),
    (POOL + " -L FOO", "'-L' (--layout) of a 2D pool must be NCHW or NHWC, got 'FOO'"),
    (POOL.replace("-n 2", f"-n {HUGE}"), "flag '-n' must be in"),
    (POOL.replace("-n 2", "-n ²"), "flag '-n' must be an integer"),
    ("conv -n 1 -c 4 -k 4 -H 8 -W 8 -g 0", "flag '-g' (--group_count) must be at least 1, got 0"),
    ("conv -n 1 -c 4 -k 4 -H 8 -W 8 -g -2", "flag '-g' (--group_count) must be at least 1"),
])
def test_bad_pool_and_group_values_exit_3(line, flag):
    with pytest.raises(ProblemError, match="flag"):
        parse_any_line(line)
    result = runner.invoke(app, ["problem", line, "--json"])
    _one_error_line(result, 3, flag)


def test_good_pool_layouts_still_parse():
    assert parse_any_line(POOL + " -L NHWC")[0].layout == "NHWC"
    assert parse_any_line(POOL)[0].layout == "NCHW"
    (p,) = parse_any_line("pool -n 1 -c 2 -_ 3 -! 4 -H 4 -W 4 -@ 2 -y 2 -x 2 -# 2 -u 2 -v 2 -F 1")
    assert p.layout == "NCDHW"


# ----------------------------------------------------------------------------- file names
def test_temporary_file_with_a_huge_pid_is_left_alone(tmp_path):
    from miopenkernels.db._lock import remove_orphans

    db = tmp_path / "u.fdb.txt"
    odd = [tmp_path / f".u.fdb.txt.{'9' * 200}.x.tmp", tmp_path / ".u.fdb.txt.౭.x.tmp"]
    for p in odd:
        p.write_text("")
    remove_orphans(db)
    assert all(p.exists() for p in odd)


def test_perfdb_key_with_huge_group_count_is_not_a_key():
    from miopenkernels.db.perfdb import _finddb_key_fields

    with pytest.raises(ValueError, match="not a MIOpen problem key"):
        _finddb_key_fields(KEY + "_g" + HUGE)
    with pytest.raises(ValueError, match="not a MIOpen problem key"):
        _finddb_key_fields(KEY + "_g౭")
