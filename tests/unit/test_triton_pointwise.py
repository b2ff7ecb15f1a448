"""The pointwise row GEMMs (solvers/triton_pointwise.py, kernels/conv_triton_pointwise_spec.py):
1x1 and 1x1x1 channels-last layers narrow on one side as GEMMs over one matrix of rows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, get_solver, launch_jobs
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_pointwise_spec")

SM90 = Target("sm90", 132)
NAMES = {"F": "ConvTritonPointwiseFwd", "B": "ConvTritonPointwiseBwd",
         "W": "ConvTritonPointwiseWrw"}


def _p(c: int, k: int, spatial: tuple[int, ...], direction: str = "F", n: int = 32,
       data_type: str = "FP16", layout: str | None = None, **kw: object) -> ConvProblem:
    ones = (1,) * len(spatial)
    lay = layout or ("NHWC" if len(spatial) == 2 else "NDHWC")
    p = ConvProblem(n=n, c=c, k=k, in_spatial=spatial, filter=ones, pad=(0,) * len(spatial),
                    stride=ones, dilation=ones, direction=direction, in_type=data_type,
                    wei_type=data_type, out_type=data_type, in_layout=lay, wei_layout=lay,
                    out_layout=lay)
    return replace(p, **kw) if kw else p


#: 3D U-Net's output layer (64 -> 3 at 128^3) and a UNet's mask head (64 -> 2 at 256x256).
UNET3D_OUT = _p(64, 3, (128, 128, 128))
UNET_OUT = _p(64, 2, (256, 256))


def _sizes_strides(p: ConvProblem) -> tuple[dict, dict]:
    from miopenkernels.solvers.triton_pointwise import _view

    _, sizes, strides = _view(p)
    return sizes, strides


def test_a_bounded_claim_takes_its_row_range_on_the_narrow_side_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """(8, 32, 128, 1) on FP32 forward: a squeeze-and-excitation expansion (6 -> 144, one
    position an image) at 32 to 128 images, in NHWC and NCHW alike; not at 16 or 256, not the
    squeeze (144 -> 6: the narrow side written), not 10 channels."""
    monkeypatch.setitem(spec.FIRST, "sm90", {"FP32-F-NHWC": (8, 32, 128, 1)})
    solver = get_solver(NAMES["F"])

    def se(c: int, k: int, n: int, layout: str = "NHWC") -> ConvProblem:
        return _p(c, k, (1, 1), n=n, data_type="FP32", layout=layout)

    for n in (32, 64, 128):
        for layout in ("NHWC", "NCHW"):
            p = se(6, 144, n, layout)
            assert solver.is_applicable(p, SM90) and solver.claims_first(p, SM90), (n, layout)
    for p in (se(6, 144, 16), se(6, 144, 256), se(144, 6, 32), se(10, 240, 32),
              se(144, 6, 32, "NCHW")):
        assert not solver.claims_first(p, SM90), p
    # An NCHW layer of more than one position an image is no matrix of rows.
    assert not solver.is_applicable(_p(6, 144, (2, 1), data_type="FP32", layout="NCHW"), SM90)


def test_rows_of_packed_channels_last_and_nothing_else() -> None:
    sizes = {"N": 2, "D": 3, "H": 4, "W": 5}
    c = 6
    packed = (3 * 4 * 5 * c, 1, 4 * 5 * c, 5 * c, c)
    assert spec.rows_of(sizes, packed) == c
    # Rows padded past their channels (a channel stride of 1, rows 8 apart) are rows too.
    padded = (3 * 4 * 5 * 8, 1, 4 * 5 * 8, 5 * 8, 8)
    assert spec.rows_of(sizes, padded) == 8
    # Channel planes, a gap between images, a transposed pair of axes: no one row stride.
    assert spec.rows_of(sizes, (3 * 4 * 5 * c, 60, 20, 5, 1)) is None
    assert spec.rows_of(sizes, (3 * 4 * 5 * c + 1, 1, 4 * 5 * c, 5 * c, c)) is None
    assert spec.rows_of(sizes, (3 * 4 * 5 * c, 1, 4 * 5 * c, c, 4 * c)) is None
    # A size-1 axis's stride does not matter.
    assert spec.rows_of({"N": 1, "D": 1, "H": 4, "W": 5}, (7, 1, 99, 5 * c, c)) == c
    # One position an image: NCHW's rows are its images, c apart; one row alone is rows.
    one = {"N": 2, "D": 1, "H": 1, "W": 1}
    assert spec.rows_of(one, (c, 1, 1, 1, 1)) == c
    assert spec.rows_of(one, (c + 2, 1, 1, 1, 1)) == c + 2
    assert spec.rows_of({**one, "N": 1}, (c, 1, 1, 1, 1)) == c
    assert spec.rows_of(one, (c, 2, 1, 1, 1)) is None


def test_applies_to_narrow_pointwise_channels_last_only() -> None:
    for d, name in NAMES.items():
        solver = get_solver(name)
        for p in (UNET3D_OUT, UNET_OUT, _p(3, 64, (128, 128, 128)), _p(16, 96, (112, 112)),
                  _p(8, 8, (64, 64), data_type="FP32"), _p(4, 4, (64, 64), data_type="BF16")):
            assert solver.is_applicable(replace(p, direction=d), SM90), (name, p.key())
        refused = [
            _p(64, 32, (56, 56)),  # no side of at most 16 channels
            _p(64, 3, (56, 56), layout="NCHW"),  # channel planes
            _p(64, 3, (8, 16, 16), layout="NCDHW"),
            replace(UNET_OUT, filter=(3, 3), pad=(1, 1)),
            replace(UNET_OUT, stride=(2, 2)),
            replace(UNET_OUT, c=64, k=4, groups=2),
            replace(UNET_OUT, mode="trans"),
            replace(UNET_OUT, in_type="FP16", wei_type="FP32", out_type="FP16"),
        ]
        for p in refused:
            assert not solver.is_applicable(replace(p, direction=d), SM90), (name, p.key())
        # Measured on sm90 alone: no other target takes them.
        assert not solver.is_applicable(replace(UNET_OUT, direction=d), Target("gfx942", 304))
        assert not solver.is_applicable(replace(UNET_OUT, direction=d), Target("sm80", 108))


def test_arguments_name_the_matrices_of_each_direction() -> None:
    sizes, strides = _sizes_strides(UNET3D_OUT)
    m = 32 * 128**3
    assert spec.arg_values("F", sizes, strides) == {
        "M": m, "KD": 64, "NO": 3, "s_am": 64, "s_bi": 1, "s_bj": 64, "s_om": 3}
    assert spec.arg_values("B", sizes, strides) == {
        "M": m, "KD": 3, "NO": 64, "s_am": 3, "s_bi": 64, "s_bj": 1, "s_om": 64}
    assert spec.arg_values("W", sizes, strides) == {"M": m, "C": 64, "K": 3, "s_xm": 64,
                                                    "s_ym": 3}
    # Forward's narrow side is its output: the tile one column block wide, x's side aligned.
    assert spec.side("F", sizes) == 0 and spec.side("B", sizes) == 1
    assert spec.side("W", sizes) == 0
    for d in "FBW":
        assert spec.meets_aligned(d, sizes, spec.arg_values(d, sizes, strides), "FP16")
    odd, odd_strides = _sizes_strides(_p(12, 3, (10, 10)))
    assert not spec.meets_aligned("F", odd, spec.arg_values("F", odd, odd_strides), "FP16")
    # FP32's 16 bytes are four elements.
    assert spec.meets_aligned("F", odd, spec.arg_values("F", odd, odd_strides), "FP32")


def test_default_launches_fill_the_gpu_and_stay_in_range() -> None:
    for d, name in NAMES.items():
        solver = get_solver(name)
        for p in (UNET3D_OUT, UNET_OUT, _p(8, 8, (64, 64), n=1), _p(16, 96, (112, 112))):
            q = replace(p, direction=d)
            params = solver.default_params(q, SM90)
            assert solver.params_valid(q, SM90, params), (name, params)
            (gx, gy, gz), block = solver.launch_geometry(q, params)
            assert 0 < gx < 2**31 and 0 < gy <= 65535 and gz == 1 and block[0] in (128, 256)
            if d == "W":
                # Parts fill the GPU without passing MAX_SPLIT; the partials are the workspace.
                assert 2 <= gy <= spec.MAX_SPLIT
                assert solver.workspace_for(q, params) == gy * q.k * q.c * 4
                assert len(solver.follow_ups(q, params, SM90)) == 1
            else:
                assert gy == 1 and solver.workspace_for(q, params) == 0
                assert solver.follow_ups(q, params, SM90) == ()
    # 3D U-Net's output layer: 67M rows, 128 a program; backward weights in hundreds of parts.
    grid = get_solver(NAMES["F"]).launch_geometry(UNET3D_OUT, get_solver(
        NAMES["F"]).default_params(UNET3D_OUT, SM90))[0]
    assert grid == (32 * 128**3 // 128, 1, 1)
    w = replace(UNET3D_OUT, direction="W")
    assert get_solver(NAMES["W"]).default_params(w, SM90)[4] >= 256


def test_aligned_objects_where_the_wide_side_allows_the_generic_one_otherwise() -> None:
    solver = get_solver(NAMES["F"])
    params = solver.default_params(UNET_OUT, SM90)
    aligned = solver.compile_job(UNET_OUT, params, SM90)
    generic = solver.unaligned_job(UNET_OUT, params, SM90)
    assert aligned != generic
    assert any(o.startswith("--assume=") and "s_am:8" in o and "KD:8" in o
               for o in aligned.options)
    assert not any(o.startswith("--assume=") for o in generic.options)
    odd = _p(12, 3, (10, 10))
    assert solver.compile_job(odd, solver.default_params(odd, SM90), SM90) == \
        solver.unaligned_job(odd, solver.default_params(odd, SM90), SM90)
    # Every object a call runs is one a package ships (the closure), reduce kernels included.
    for d, name in NAMES.items():
        s = get_solver(name)
        shipped = set(s.dynamic_jobs(SM90))
        for p in (UNET3D_OUT, UNET_OUT, odd, _p(4, 4, (64, 64), data_type="FP32")):
            q = replace(p, direction=d)
            prm = s.default_params(q, SM90)
            assert set(launch_jobs(s, q, prm, SM90)) <= shipped, (name, q.key())
            assert s.unaligned_job(q, prm, SM90) in shipped


def test_objects_per_target() -> None:
    jobs = [j for s in SOLVERS if s.name in NAMES.values() for j in s.dynamic_jobs(SM90)
            if j.kernel_file == "conv_triton_pointwise.py"]
    # Three types, two tiles a direction, each generic and aligned; forward and backward
    # data share theirs.
    assert len(set(jobs)) == 3 * 2 * 2 * 2
    assert not [j for s in SOLVERS if s.name in NAMES.values()
                for j in s.dynamic_jobs(Target("gfx942", 304))]


def test_claims_only_the_cases_the_spec_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    solver = get_solver(NAMES["F"])
    for arch, cases in spec.FIRST.items():
        assert arch == "sm90"
        for case, claim in cases.items():
            most, rows = claim[:2]
            assert 1 <= most <= spec.NARROW and rows >= 0, case
            assert len(claim) == 2 or (len(claim) == 4 and claim[2] >= rows
                                       and claim[3] in (0, 1)), case
    monkeypatch.setitem(spec.FIRST, "sm90", {"FP16-F-NHWC": (8, 4096), "FP16-F-NDHWC": (4, 0)})
    assert solver.claims_first(UNET_OUT, SM90)  # 2 channels, 2M rows
    assert not solver.claims_first(replace(UNET_OUT, n=1, in_spatial=(32, 32)), SM90)  # rows
    assert not solver.claims_first(_p(64, 16, (112, 112)), SM90)  # 16 channels
    assert solver.claims_first(UNET3D_OUT, SM90)
    assert not solver.claims_first(_p(64, 8, (8, 8, 8)), SM90)
    assert not solver.claims_first(replace(UNET_OUT, in_type="BF16", wei_type="BF16",
                                           out_type="BF16"), SM90)
