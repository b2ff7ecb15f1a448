"""The slices solvers (solvers/triton_slices.py): which 3-D problems are 2-D problems over their
depth slices, that the 2-D problem computes the 3-D one (float64, every direction), that the
solvers launch the 2-D solver's objects on it unchanged, and where they rank first."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    SOLVERS,
    YIELDS_TO,
    all_dynamic_jobs,
    blas_1x1,
    get_solver,
    launch_jobs,
    ranks_first,
)
from miopenkernels.solvers.reference import conv_inputs, conv_output_name, conv_reference
from miopenkernels.solvers.triton_3d import ConvTriton3d
from miopenkernels.solvers.triton_slices import (
    SLICES_SOLVERS,
    ConvTritonSlices,
    sliced_problem,
    slices_first,
)
from miopenkernels.target import Target

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(direction: str = "F", **kw: object) -> ConvProblem:
    """X3D-S's 1x1x1 downsample at stride (1, 2, 2), 24 -> 48 channels, batch 32."""
    p = ConvProblem(n=32, c=24, k=48, in_spatial=(13, 40, 40), filter=(1, 1, 1),
                    stride=(1, 2, 2), direction=direction, in_type="FP16", wei_type="FP16",
                    out_type="FP16", in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    return replace(p, **kw) if kw else p


def test_sliced_problem_is_the_2d_problem_over_n_times_d_images() -> None:
    q = sliced_problem(_p())
    assert q is not None
    assert (q.n, q.c, q.k, q.in_spatial, q.filter, q.stride, q.pad) == \
        (32 * 13, 24, 48, (40, 40), (1, 1), (2, 2), (0, 0))
    assert (q.in_layout, q.wei_layout, q.out_layout, q.direction, q.in_type) == \
        ("NHWC", "NHWC", "NHWC", "F", "FP16")
    spatial = sliced_problem(_p(filter=(1, 3, 3), pad=(0, 1, 1), stride=(1, 1, 1),
                                dilation=(3, 2, 2), groups=4))
    assert spatial is not None and (spatial.filter, spatial.pad, spatial.dilation,
                                    spatial.groups) == ((3, 3), (1, 1), (2, 2), 4)
    # Not a 2-D problem over slices: a depth tap more, depth stride 2, depth padding, NCDHW
    # (an image's slices are not one stride apart), a transposed layer, a 2-D problem.
    for kw in ({"filter": (3, 1, 1), "pad": (1, 0, 0)}, {"stride": (2, 2, 2)},
               {"pad": (1, 0, 0)}, {"in_layout": "NCDHW", "wei_layout": "NCDHW",
                                    "out_layout": "NCDHW"}, {"mode": "trans"}):
        assert sliced_problem(_p(**kw)) is None, kw
    two_d = ConvProblem(n=2, c=8, k=8, in_spatial=(5, 5), filter=(1, 1), in_layout="NHWC")
    assert sliced_problem(two_d) is None


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("shape", [
    {"n": 2, "c": 6, "k": 10, "in_spatial": (3, 7, 9), "filter": (1, 3, 3),
     "pad": (0, 1, 1), "stride": (1, 2, 1)},
    {"n": 3, "c": 8, "k": 4, "in_spatial": (2, 5, 6), "filter": (1, 1, 1),
     "stride": (1, 2, 2)},
    {"n": 1, "c": 4, "k": 6, "in_spatial": (4, 6, 5), "filter": (1, 2, 3),
     "pad": (0, 2, 1), "dilation": (2, 2, 1), "groups": 2},
])
def test_the_sliced_problem_computes_the_3d_one(direction: str, shape: dict) -> None:
    """The same bytes in, the same bytes out: the float64 reference of the 2-D problem on the
    3-D problem's tensors (flattened) is the 3-D reference."""
    p = ConvProblem(direction=direction, in_type="FP32", in_layout="NDHWC",
                    wei_layout="NDHWC", out_layout="NDHWC", **shape)
    q = sliced_problem(p)
    assert q is not None
    rng = np.random.default_rng(7)
    tensors = conv_inputs(p, rng)
    want = conv_reference(p, tensors)
    from miopenkernels.solvers.reference import conv_tensor_shapes

    shapes = conv_tensor_shapes(q)
    flat = {name: np.asarray(a).reshape(shapes[name]) for name, a in tensors.items()}
    got = conv_reference(q, flat)
    assert conv_output_name(p) == conv_output_name(q)
    np.testing.assert_allclose(np.asarray(got).ravel(), np.asarray(want).ravel(), rtol=1e-12,
                               atol=1e-12)


def test_solvers_launch_the_2d_solvers_objects_on_the_sliced_problem() -> None:
    names = [s.name for s in SOLVERS]
    assert len(names) == len(set(names))
    assert {s.name for s in SLICES_SOLVERS} >= {
        f"ConvTritonImplicitGemm{m}Slices{d}" for m in ("", "Tf32", "Tf32x3", "Padded")
        for d in SUFFIX.values()}
    for direction in "FBW":
        p = _p(direction)
        q = sliced_problem(p)
        assert q is not None
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        inner = get_solver(f"ConvTritonImplicitGemm{SUFFIX[direction]}")
        assert solver.is_applicable(p, SM90) and inner.is_applicable(q, SM90)
        assert solver.ranking_name == inner.ranking_name
        params = solver.default_params(p, SM90)
        assert params == inner.default_params(q, SM90)
        assert solver.launch(p, params) == inner.launch(q, params)
        assert solver.compile_job(p, params, SM90) == inner.compile_job(q, params, SM90)
        assert solver.follow_ups(p, params, SM90) == inner.follow_ups(q, params, SM90)
        assert solver.workspace_for(p, params) == inner.workspace_for(q, params)
        assert launch_jobs(solver, p, params, SM90) == launch_jobs(inner, q, params, SM90)
        assert solver.dynamic_jobs(SM90) == []
    # Nothing new in a package: every object they launch is one the 2-D solvers ship.
    shipped = set(all_dynamic_jobs(SM90))
    for direction in "FBW":
        p = _p(direction)
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        job = solver.compile_job(p, solver.default_params(p, SM90), SM90)
        assert job in shipped
    # Channel counts that miss 8: the padded 2-D solver's copies and objects.
    odd = _p(c=54, k=24, stride=(1, 1, 1))
    padded = get_solver("ConvTritonImplicitGemmPaddedSlicesFwd")
    assert padded.is_applicable(odd, SM90)
    assert padded.lead_ins(odd, padded.default_params(odd, SM90), SM90)
    # Problems they do not take.
    assert not any(s.is_applicable(_p(stride=(2, 2, 2)), SM90) for s in SLICES_SOLVERS)
    assert not get_solver("ConvTritonImplicitGemmSlicesFwd").is_applicable(_p("B"), SM90)


def test_they_rank_first_where_the_2d_solver_would_and_the_3d_families_give_way() -> None:
    for direction in "FBW":
        p = _p(direction)
        solver = get_solver(f"ConvTritonImplicitGemmSlices{SUFFIX[direction]}")
        three_d = get_solver(f"ConvTriton3d{SUFFIX[direction]}")
        assert isinstance(solver, ConvTritonSlices) and isinstance(three_d, ConvTriton3d)
        assert three_d.is_applicable(p, SM90)
        assert ranks_first(solver, p, SM90) and slices_first(p, SM90)
        assert three_d.claims_first(p, SM90) and not ranks_first(three_d, p, SM90)
    for family in YIELDS_TO:
        if family.__module__.endswith(("triton_3d", "triton_3d_relaid", "triton_3d_taps")):
            assert ConvTritonSlices in YIELDS_TO[family], family
    # Where the 2-D problem is the GEMM library's one call (a 1x1x1 layer at stride 1, the
    # library offered), neither they nor the 3-D family rank first: the library does.
    one = _p(stride=(1, 1, 1), c=48, k=96)
    saved = blas_1x1._offered[0]
    blas_1x1._offered[0] = True
    try:
        library = blas_1x1.BLAS_SOLVERS[0]
        assert library.is_applicable(one, SM90) and ranks_first(library, one, SM90)
        assert not slices_first(one, SM90)
        assert not ranks_first(get_solver("ConvTriton3dFwd"), one, SM90)
    finally:
        blas_1x1._offered[0] = saved
