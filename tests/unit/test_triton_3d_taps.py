"""ConvTriton3dTapsWrw: 3-D backward weights with every tap along one filter axis in one
program (the kernel's TAPS, TAP_AXIS), on the aligned channels-last problems of sm90."""

from __future__ import annotations

import pytest
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, applicable_solvers, get_solver, launch_jobs
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

SM90 = Target("sm90", 132)


def _p(c: int = 64, k: int = 128, filt: tuple[int, int, int] = (3, 3, 3), layout: str = "NDHWC",
       data_type: str = "FP16", **kw: object) -> ConvProblem:
    pad = tuple(f // 2 for f in filt)
    return ConvProblem(n=8, c=c, k=k, in_spatial=(8, 16, 16), filter=filt, pad=pad,
                       direction="W", in_type=data_type, in_layout=layout, wei_layout=layout,
                       out_layout=layout, **kw)


def _consts(job) -> dict[str, str]:  # noqa: ANN001
    return dict(o[2:].split("=", 1) for o in job.options if o.startswith("-D"))


@pytest.mark.parametrize(("filt", "group"), [((3, 3, 3), (3, 2)), ((1, 3, 3), (3, 2)),
                                             ((2, 2, 2), (2, 2)), ((3, 1, 1), (3, 0))])
def test_a_program_covers_the_filters_last_axis(filt: tuple[int, int, int],
                                               group: tuple[int, int]) -> None:
    s, plain = get_solver("ConvTriton3dTapsWrw"), get_solver("ConvTriton3dWrw")
    p = _p(filt=filt)
    assert spec.taps("W", dict(zip("TRS", filt, strict=True))) == group
    assert s.is_applicable(p, SM90) and s.ranking_name == "ConvTriton3dWrw"
    params = s.default_params(p, SM90)
    assert params == plain.default_params(p, SM90)  # the 3-D solver's tile and split
    grid = s.launch(p, params).grid
    assert grid[1] * group[0] == plain.launch(p, params).grid[1] and grid[2] == params[4]
    job = s.compile_job(p, params, SM90)
    assert _consts(job)["TAPS"] == str(group[0]) and _consts(job)["TAP_AXIS"] == str(group[1])
    assert "--assume=" in " ".join(job.options)
    generic = s.unaligned_job(p, params, SM90)  # the fallback launches the same grid
    assert _consts(generic)["TAPS"] == str(group[0]) and "--assume=" not in \
        " ".join(generic.options)
    assert set(launch_jobs(s, p, params, SM90)) <= {j for x in SOLVERS
                                                    for j in x.dynamic_jobs(SM90)}
    assert set(launch_jobs(s, p, params, SM90)) <= set(s.dynamic_jobs(SM90)) | \
        set(plain.dynamic_jobs(SM90))
    # The plain solver's objects keep their keys (no TAPS constexpr: the kernel's default).
    assert "TAPS" not in _consts(plain.compile_job(p, params, SM90))


def test_where_it_applies_and_ranks_first() -> None:
    s = get_solver("ConvTriton3dTapsWrw")
    assert not s.is_applicable(_p(layout="NCDHW"), SM90)  # the Via solver's
    assert not s.is_applicable(_p(c=45), SM90)  # misses the aligned object: padded
    assert not s.is_applicable(_p(data_type="FP32"), SM90)
    assert not s.is_applicable(_p(filt=(1, 1, 1)), SM90)
    assert not s.is_applicable(_p(filt=(3, 7, 7)), SM90)  # 7 taps: one a program
    assert not s.is_applicable(_p(), Target("gfx90a", 104))  # measured on sm90 alone
    assert s.dynamic_jobs(Target("gfx90a", 104)) == []
    assert s.is_applicable(_p(data_type="BF16"), SM90)
    names = [x.name for x in applicable_solvers(_p(), SM90)]
    assert names[:2] == ["ConvTriton3dTapsWrw", "ConvTriton3dWrw"]
    assert Handle(target="sm90-132").solutions(_p())[0].solver == "ConvTriton3dTapsWrw"
    # One object per tap group beside each channels-last tile (aligned and generic).
    jobs = s.dynamic_jobs(SM90)
    assert len(jobs) == len(set(jobs)) and {_consts(j)["TAPS"] for j in jobs} == {"2", "3"}
    assert all(_consts(j)["CHANNELS_LAST"] == "1" for j in jobs)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_the_relaid_backward_weights_run_on_it_where_they_claim(layout: str) -> None:
    infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
    taps, plain = get_solver(f"ConvTriton3d{infix}TapsWrw"), get_solver(f"ConvTriton3d{infix}Wrw")
    p = _p(c=64 if layout == "NCDHW" else 45, layout=layout)
    assert taps.is_applicable(p, SM90) and plain.is_applicable(p, SM90)
    assert taps.ranking_name == plain.ranking_name == "ConvTriton3dWrw"
    assert Handle(target="sm90-132").solutions(p)[0].solver == taps.name
    params = taps.default_params(p, SM90)
    assert params == plain.default_params(p, SM90)
    q = taps._relaid(p)
    assert taps.launch(p, params).grid[1] * 3 == plain.launch(p, params).grid[1]
    assert taps.compile_job(p, params, SM90) == get_solver("ConvTriton3dTapsWrw").compile_job(
        q, params, SM90)
    # Its copies are the relaid solver's; every object ships.
    assert [j for j, _ in taps.lead_ins(p, params, SM90)] == \
        [j for j, _ in plain.lead_ins(p, params, SM90)]
    assert taps.dynamic_jobs(SM90) == []
    assert set(launch_jobs(taps, p, params, SM90)) <= {j for x in SOLVERS
                                                       for j in x.dynamic_jobs(SM90)}
    # No tap group (1x1x1), FP32 or another kind: not it.
    assert not taps.is_applicable(_p(c=64, layout=layout, filt=(1, 1, 1)), SM90)
    assert not taps.is_applicable(p, Target("gfx942", 304))
