"""MIOpenDriver command lines: the real MITuna files, defaults, -F, errors, round trips."""

from __future__ import annotations

import pytest
from miopenkernels.driver import (
    parse_any_line,
    parse_driver_line,
    parse_driver_lines,
    parse_pool_line,
    to_driver_line,
)
from miopenkernels.errors import ProblemError
from miopenkernels.pooling import PoolProblem
from miopenkernels.problem import ConvProblem
from testdata import TESTDATA  # noqa: E402

MIOPEN = TESTDATA / "miopen"
DRIVER_FILES = sorted(MIOPEN.glob("driver_cmds_*.txt"))
FINDDB_FILES = sorted(MIOPEN.glob("fdb_*.txt")) + sorted(MIOPEN.glob("ufdb_*.txt"))

# The samples are required: an empty glob must fail the run, not skip the tests.
assert DRIVER_FILES, "no driver samples in the shared test data"


def driver_lines() -> list[tuple[str, int, str]]:
    out = []
    for file in DRIVER_FILES:
        for number, line in enumerate(file.read_text().splitlines(), 1):
            if line.strip() and not line.startswith("#"):
                out.append((file.name, number, line))
    return out


# ----------------------------------------------------------------------------- real files
@pytest.mark.parametrize(("file", "number", "line"), driver_lines() if DRIVER_FILES else [])
def test_every_real_driver_line_parses(file, number, line):
    problems = parse_any_line(line)
    assert problems
    for p in problems:
        if isinstance(p, ConvProblem):
            assert ConvProblem.from_key(p.key()).key() == p.key()
        else:
            assert all(o >= 1 for o in p.out_spatial)


def test_real_files_hold_conv_and_pool_lines():
    kinds = {type(p) for _, _, line in driver_lines() for p in parse_any_line(line)}
    assert kinds == {ConvProblem, PoolProblem}
    assert len(driver_lines()) >= 300


def test_mituna_long_flags_with_depth_flags_stay_2d():
    file = MIOPEN / "driver_cmds_mituna_utils_configs_conv_configs_NCHW.txt"
    first = next(ln for ln in file.read_text().splitlines() if ln.startswith("./bin"))
    (p,) = parse_driver_line(first)
    assert p.key() == "128-28-28-3x3-128-28-28-256-1x1-1x1-1x1-0-NCHW-FP32-F"


def test_pytorch_log_prefix_is_dropped_and_missing_f_means_all_three():
    file = MIOPEN / "driver_cmds_mituna_utils_recurrent_cfgs_resnet50_pytorch.txt"
    line = next(ln for ln in file.read_text().splitlines() if ln.startswith("miopenConv"))
    assert line.startswith("miopenConvolutionForward: ./bin/MIOpenDriver conv")
    assert [p.direction for p in parse_driver_line(line)] == ["F", "B", "W"]


def test_file_of_lines_dedupes_and_leaves_pool_out():
    text = (MIOPEN / "driver_cmds_mituna_utils_recurrent_cfgs_inception3.txt").read_text()
    conv = parse_driver_lines(text)
    both = parse_driver_lines(text, conv_only=False)
    assert all(isinstance(p, ConvProblem) for p in conv)
    assert any(isinstance(p, PoolProblem) for p in both)
    assert len({p.key() for p in conv}) == len(conv)


def test_every_finddb_key_survives_a_driver_line_round_trip():
    for file in FINDDB_FILES:
        for line in file.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            key = line.split("=", 1)[0]
            (p,) = parse_driver_line(to_driver_line(ConvProblem.from_key(key)))
            assert p.key() == key, file.name


# ----------------------------------------------------------------------------- semantics
def test_defaults_of_the_driver_flags():
    (p,) = parse_driver_line("conv -F 1")
    assert (p.n, p.c, p.k, p.in_spatial, p.filter) == (100, 3, 32, (32, 32), (3, 3))
    assert (p.pad, p.stride, p.dilation, p.groups) == ((0, 0), (1, 1), (1, 1), 1)
    assert (p.in_layout, p.in_type, p.mode, p.bias) == ("NCHW", "FP32", "conv", 0)
    assert p.key() == "3-32-32-3x3-32-30-30-100-0x0-1x1-1x1-0-NCHW-FP32-F"


@pytest.mark.parametrize(("flag", "directions"), [
    ("0", "FBW"), ("1", "F"), ("2", "B"), ("3", "FB"), ("4", "W"), ("5", "FW"), ("6", "BW"),
])
def test_forw_flag_gives_one_problem_per_direction(flag, directions):
    problems = parse_driver_line(f"conv -n 8 -c 16 -H 14 -W 14 -k 32 -F {flag}")
    assert "".join(p.direction for p in problems) == directions
    assert len({p.key() for p in problems}) == len(directions)


def test_short_and_long_flags_mean_the_same():
    short = parse_driver_line("conv -n 32 -c 64 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 "
                              "-u 2 -v 2 -l 1 -j 1 -g 2 -F 1")
    long_ = parse_driver_line("conv --batchsize 32 --in_channels 64 --in_h 56 --in_w=56 "
                              "--out_channels 128 --fil_h 3 --fil_w 3 --pad_h 1 --pad_w 1 "
                              "--conv_stride_h 2 --conv_stride_w 2 --group_count 2 --forw 1")
    assert short == long_
    assert short[0].key() == "64-56-56-3x3-128-28-28-32-1x1-2x2-1x1-0-NCHW-FP32-F_g2"


@pytest.mark.parametrize(("sub", "dtype"), [
    ("conv", "FP32"), ("convfp16", "FP16"), ("convbfp16", "BF16"), ("convint8", "INT8"),
    ("convfp8", "FP8"), ("convbfp8", "BF8"),
])
def test_subcommand_gives_the_data_type(sub, dtype):
    (p,) = parse_driver_line(f"{sub} -n 1 -c 8 -H 8 -W 8 -k 8 -F 1")
    assert p.data_type == dtype and p.key().endswith(f"-{dtype}-F")


def test_nhwc_layout_flags():
    (p,) = parse_driver_line("./bin/MIOpenDriver convfp16 -n 1024 -c 14 -H 14 -W 1 -k 2048 "
                             "-y 1 -x 1 -F 1 --in_layout NHWC --out_layout NHWC "
                             "--fil_layout NHWC")
    assert p.layout == "NHWC-NHWC-NHWC"


def test_3d_line():
    (p,) = parse_driver_line("conv -n 4 -c 16 -! 8 -H 14 -W 14 -k 32 -@ 3 -y 3 -x 3 "
                             "--pad_d 1 -p 1 -q 1 --conv_stride_d 2 -u 2 -v 2 "
                             "--spatial_dim 3 -F 1")
    assert p.key() == "16-8-14-14-3x3x3-32-4-7-7-4-1x1x1-2x2x2-1x1x1-0-NCDHW-FP32-F"


def test_depth_flags_without_spatial_dim_3_stay_2d():
    (p,) = parse_driver_line("conv -n 1 -c 4 -! 8 -H 8 -W 8 -k 4 -@ 3 -F 1")
    assert (p.spatial_dim, p.in_spatial, p.filter) == (2, (8, 8), (3, 3))


def test_transposed_line_with_output_padding():
    (p,) = parse_driver_line("conv -n 2 -c 8 -H 7 -W 7 -k 16 -y 4 -x 4 -p 1 -q 1 -u 2 -v 2 "
                             "-Y 1 -m trans -F 1")
    assert (p.mode, p.out_spatial) == ("trans", (15, 14))


@pytest.mark.parametrize(("extra", "pad"), [
    ("-y 3 -x 3 -z same", (1, 1)),
    ("-y 1 -x 1 -z same -u 2 -v 2", (0, 0)),
    ("-y 3 -x 3 -p 1 -q 1 -z valid", (0, 0)),
])
def test_pad_mode(extra, pad):
    (p,) = parse_driver_line(f"conv -n 1 -c 4 -H 8 -W 8 -k 4 {extra} -F 1")
    assert p.pad == pad


def test_flags_that_do_not_change_the_problem_are_ignored():
    base = parse_driver_line("conv -n 1 -c 4 -H 8 -W 8 -k 4 -F 1")
    noisy = parse_driver_line("conv -n 1 -c 4 -H 8 -W 8 -k 4 -F 1 -t 1 -i 5 -V 0 -s 1 -S 2 -w 1")
    assert noisy == base


def test_pool_line():
    fwd, bwd = parse_pool_line("./bin/MIOpenDriver pool -n 128 -c 192 -H 71 -W 71 -y 3 -x 3 "
                               "-p 0 -q 0 -u 2 -v 2 -m max -t 1")
    assert (fwd.direction, bwd.direction) == ("F", "B")
    assert fwd.out_spatial == (35, 35) and fwd.mode == "max"


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(("line", "message"), [
    ("conv -n abc", "flag '-n' must be an integer (an optional sign and ASCII digits)"),
    ("conv --in_h=x", "flag '--in_h=x' must be an integer"),
    ("conv -F 7", "flag '-F' must be one of 0..6, got 7"),
    ("conv -Q 3", "unknown flag '-Q'"),
    ("conv --nope 1", "unknown flag '--nope'"),
    ("conv -n 1 -k", "flag '-k' needs a value"),
    ("conv3 -n 1", "unknown sub-command 'conv3'"),
    ("conv -m deconv", "flag '-m' must be 'conv' or 'trans', got 'deconv'"),
    ("conv -z full", "flag '-z' must be default, same or valid, got 'full'"),
    ("conv --spatial_dim 4", "flag '--spatial_dim' must be 2 or 3, got 4"),
    ("conv -n 1 5", "unexpected argument '5'"),
    ("conv --in_layout NCWH", "layout 'NCWH'"),
    ("conv 'unclosed", "cannot split the command line"),
    ("", "empty command line"),
    ("pool -F 3", "flag '-F' of pool must be 0, 1 or 2, got 3"),
])
def test_malformed_lines_name_the_bad_flag_or_value(line, message):
    with pytest.raises(ProblemError) as info:
        parse_any_line(line)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_line_in_a_file_names_its_line_number():
    with pytest.raises(ProblemError, match=r"^line 3: unknown flag '-Q'"):
        parse_driver_lines("# header\nconv -n 1 -F 1\nconv -Q 1\n")
