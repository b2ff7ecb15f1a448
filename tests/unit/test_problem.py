"""ConvProblem and MIOpen's FindDb key, checked against real FindDb files."""

from __future__ import annotations

import pytest
from miopenkernels.driver import parse_problems
from miopenkernels.errors import ProblemError
from miopenkernels.problem import ConvProblem
from testdata import TESTDATA  # noqa: E402

MIOPEN = TESTDATA / "miopen"
# FindDb files only (system fdb_*, user ufdb_*): perfdb_* keys are another format.
FINDDB_FILES = sorted(MIOPEN.glob("fdb_*.txt")) + sorted(MIOPEN.glob("ufdb_*.txt"))


def finddb_keys() -> list[tuple[str, str]]:
    keys = []
    for file in FINDDB_FILES:
        for line in file.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                keys.append((file.name, line.split("=", 1)[0]))
    return keys


# The samples are required: an empty glob must fail the run, not skip the tests.
assert FINDDB_FILES, "no FindDb samples in the shared test data"


# ----------------------------------------------------------------------------- real keys
def test_every_finddb_file_is_read():
    names = {f.name for f in FINDDB_FILES}
    assert "fdb_gfx90a6e_HIP_sample.txt" in names and any(n.startswith("ufdb_") for n in names)
    assert not any(n.startswith("perfdb") for n in names)
    assert len(finddb_keys()) > 100


@pytest.mark.parametrize(("file", "key"), finddb_keys() if FINDDB_FILES else [])
def test_finddb_key_parses_and_reserialises_identically(file, key):
    problem = ConvProblem.from_key(key)
    assert problem.key() == key
    assert problem.key_direction == key.split("_g")[0][-1]


def test_real_keys_cover_3d_groups_and_every_direction():
    keys = [k for _, k in finddb_keys()]
    problems = [ConvProblem.from_key(k) for k in keys]
    assert {p.direction for p in problems} == {"F", "B", "W"}
    assert any(p.spatial_dim == 3 for p in problems)
    assert any(p.groups > 1 for p in problems)
    assert any(p.in_type == "FP16" for p in problems)


# ----------------------------------------------------------------------------- key rules
def resnet_downsample(direction: str) -> ConvProblem:
    """x 128x1024x14x14, w 2048x1024x1x1, stride 2 -> y 128x2048x7x7."""
    return ConvProblem(n=128, c=1024, k=2048, in_spatial=(14, 14), filter=(1, 1),
                       stride=(2, 2), direction=direction)


def test_forward_key_is_x_then_y():
    assert resnet_downsample("F").key() == "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"


@pytest.mark.parametrize("direction", ["B", "W"])
def test_backward_keys_swap_input_and_output(direction):
    # The key's "input" is dy: the leading channel count is the layer's K.
    key = resnet_downsample(direction).key()
    assert key == f"2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-{direction}"
    back = ConvProblem.from_key(key)
    assert (back.c, back.k, back.in_spatial, back.out_spatial) == (1024, 2048, (14, 14), (7, 7))
    assert back == resnet_downsample(direction)


def test_backward_key_swaps_layouts_and_types_too():
    p = ConvProblem(n=1, c=8, k=16, in_spatial=(8, 8), filter=(3, 3), direction="B",
                    in_layout="NCHW", wei_layout="NHWC", out_layout="NHWC",
                    in_type="FP16", wei_type="FP16", out_type="FP32")
    key = p.key()
    assert key.endswith("-NHWC-NHWC-NCHW-FP32FP16FP16-B")
    assert ConvProblem.from_key(key) == p


@pytest.mark.parametrize(("layouts", "field"), [
    (("NCHW", "NCHW", "NCHW"), "NCHW"),
    (("NHWC", "NHWC", "NHWC"), "NHWC-NHWC-NHWC"),
    (("NHWC", "NCHW", "NHWC"), "NHWC-NCHW-NHWC"),
])
def test_layout_field_is_single_only_for_the_default(layouts, field):
    p = ConvProblem(n=1, c=4, k=4, in_spatial=(8, 8), filter=(3, 3), in_layout=layouts[0],
                    wei_layout=layouts[1], out_layout=layouts[2])
    assert p.layout == field
    assert p.key() == f"4-8-8-3x3-4-6-6-1-0x0-1x1-1x1-0-{field}-FP32-F"


def test_three_default_layouts_in_a_key_are_read_and_written_as_one():
    p = ConvProblem.from_key("4-8-8-3x3-4-6-6-1-0x0-1x1-1x1-0-NCHW-NCHW-NCHW-FP32-F")
    assert p.key() == "4-8-8-3x3-4-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F"


def test_mixed_types_are_concatenated_in_wei_out():
    key = "64-28-28-3x3-64-28-28-16-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-INT8INT8INT32-F"
    p = ConvProblem.from_key(key)
    assert (p.in_type, p.wei_type, p.out_type) == ("INT8", "INT8", "INT32")
    assert p.key() == key


def test_group_suffix_only_above_one():
    one = ConvProblem(n=2, c=32, k=32, in_spatial=(7, 7), filter=(3, 3), pad=(1, 1))
    assert "_g" not in one.key()
    dw = ConvProblem(n=2, c=32, k=32, in_spatial=(7, 7), filter=(3, 3), pad=(1, 1), groups=32)
    assert dw.key() == "32-7-7-3x3-32-7-7-2-1x1-1x1-1x1-0-NCHW-FP32-F_g32"
    assert ConvProblem.from_key(dw.key()).groups == 32
    assert dw.wei_shape == (32, 1, 3, 3)


def test_3d_key_fields():
    p = ConvProblem(n=4, c=16, k=32, in_spatial=(8, 14, 14), filter=(3, 3, 3),
                    pad=(1, 1, 1), stride=(2, 2, 2), direction="F")
    assert p.out_spatial == (4, 7, 7)
    key = "16-8-14-14-3x3x3-32-4-7-7-4-1x1x1-2x2x2-1x1x1-0-NCDHW-FP32-F"
    assert p.key() == key
    assert ConvProblem.from_key(key) == p
    nhwc = ConvProblem(n=4, c=16, k=32, in_spatial=(8, 14, 14), filter=(3, 3, 3),
                       in_layout="NDHWC")
    assert nhwc.layout == "NDHWC-NDHWC-NDHWC"


# ----------------------------------------------------------------------------- shapes
@pytest.mark.parametrize(("size", "fil", "pad", "stride", "dil", "out"), [
    (224, 7, 3, 2, 1, 112),   # resnet stem
    (56, 3, 1, 1, 1, 56),     # same padding
    (56, 1, 0, 2, 1, 28),     # 1x1 downsample
    (32, 3, 2, 1, 2, 32),     # dilated 3x3 acts as 5x5
    (17, 3, 0, 2, 1, 8),      # floor division
    (10, 3, 0, 1, 4, 2),      # dilation 4: effective filter 9
])
def test_output_size_arithmetic(size, fil, pad, stride, dil, out):
    p = ConvProblem(n=1, c=1, k=1, in_spatial=(size, size), filter=(fil, fil), pad=(pad, pad),
                    stride=(stride, stride), dilation=(dil, dil))
    assert p.out_spatial == (out, out)
    assert p.out_shape == (1, 1, out, out)


def test_transposed_output_size_and_key():
    # y = s*(i-1) + d*(f-1) + 1 - 2p + output_pad
    p = ConvProblem(n=2, c=8, k=16, in_spatial=(7, 7), filter=(4, 4), pad=(1, 1),
                    stride=(2, 2), mode="trans", direction="F", trans_output_pad=(1, 0))
    assert p.out_spatial == (15, 14)
    assert p.wei_shape == (8, 16, 4, 4)
    # Solved as backward data of the plain convolution with x and y swapped.
    assert p.key() == "8-7-7-4x4-16-15-14-2-1x1-2x2-1x1-0-NCHW-FP32-B"
    assert p.with_direction("B").key().endswith("-F")


def test_rectangular_filter_and_asymmetric_padding():
    p = ConvProblem(n=128, c=128, k=192, in_spatial=(17, 17), filter=(1, 7), pad=(0, 3))
    assert p.out_spatial == (17, 17)
    assert p.key() == "128-17-17-1x7-192-17-17-128-0x3-1x1-1x1-0-NCHW-FP32-F"


def test_problems_are_hashable_values():
    a = resnet_downsample("F")
    assert a == resnet_downsample("F") and hash(a) == hash(resnet_downsample("F"))
    assert len({a, resnet_downsample("F"), resnet_downsample("B")}) == 2


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"c": 6, "k": 4, "groups": 4}, "group count 4 must divide both C=6 and K=4"),
    ({"in_spatial": (2, 2)}, "output size"),
    ({"pad": (-1, 0)}, "padding"),
    ({"stride": (0, 1)}, "stride"),
    ({"direction": "X"}, "direction 'X'"),
    ({"in_layout": "NCDHW"}, "in layout 'NCDHW'"),
    ({"in_type": "FP33"}, "data type 'FP33'"),
    ({"in_spatial": (8,)}, "spatial dimension 1"),
])
def test_impossible_problems_are_rejected(kwargs, message):
    args = {"n": 1, "c": 4, "k": 4, "in_spatial": (8, 8), "filter": (3, 3), **kwargs}
    with pytest.raises(ProblemError, match=message.replace("(", r"\(")):
        ConvProblem(**args)


@pytest.mark.parametrize(("key", "message"), [
    ("1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-X", "direction 'X'"),
    ("1024-14-14-1x1-2048-8-8-128-0x0-2x2-1x1-0-NCHW-FP32-F", "inconsistent"),
    ("1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP99-F", "data type field 'FP99'"),
    ("1024-14-14-1x1-2048-7-7", "not a MIOpen problem key"),
    ("1024-14-14-1x1-2048-7-7-128-0x0-2x2-1-0-NCHW-FP32-F", "dilation field '1'"),
])
def test_malformed_keys_are_rejected(key, message):
    with pytest.raises(ProblemError, match=message):
        ConvProblem.from_key(key)


def test_parse_takes_a_key_or_a_driver_line():
    key = "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"
    assert parse_problems(key) == [ConvProblem.from_key(key)]
    line = "conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 1"
    assert [p.key() for p in parse_problems(line)] == [key]


def test_hash_is_kept_per_object_and_never_pickled() -> None:
    import pickle
    from dataclasses import replace

    p = ConvProblem(n=2, c=8, k=16, in_spatial=(9, 9), filter=(3, 3), in_layout="NHWC")
    assert hash(p) == hash(replace(p)) and {p: 1}[replace(p)] == 1
    assert "__record_hash__" in p.__dict__
    # String hashes differ between processes: the state a worker receives holds no hash.
    assert "__record_hash__" not in p.__getstate__()
    q = pickle.loads(pickle.dumps(p))
    assert q == p and hash(q) == hash(p)
