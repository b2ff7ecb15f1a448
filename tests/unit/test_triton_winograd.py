"""The Winograd backward-weights solvers: F(3x3, 2x2) on tensor cores in four launches."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from find_doubles import db_env, run_recorded, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.config import package_dir
from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, get_solver, launch_jobs, ranks_first
from miopenkernels.target import Target

wspec = pytest.importorskip("miopenkernels.kernels.conv_triton_winograd_spec")

SM90 = Target("sm90", 132)
NAMES = ("ConvTritonWinogradTf32x3Wrw", "ConvTritonWinogradTf32Wrw")
# ResNet-50's 3x3 stride-1 layers (channels, image size).
LAYERS = ((64, 56), (128, 28), (256, 14), (512, 7))


def _w(c: int, hw: int, n: int = 32, layout: str = "NCHW", **kw: object) -> ConvProblem:
    p = ConvProblem(n=n, c=c, k=c, in_spatial=(hw, hw), filter=(3, 3), pad=(1, 1),
                    direction="W", in_layout=layout, wei_layout=layout, out_layout=layout)
    return replace(p, **kw) if kw else p


def _winograd_wrw(x: np.ndarray, dy: np.ndarray, pad: int) -> np.ndarray:
    """dw of one image and channel pair by the kernels' transforms (B^T, A, G^T as in
    kernels/conv_triton_winograd.py), tile by tile."""
    bt = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float)
    a = np.array([[1, 0], [1, 1], [1, -1], [0, -1]], float)
    gt = np.array([[1, .5, .5, 0], [0, .5, -.5, 0], [0, .5, .5, 1]], float)
    p, q = dy.shape
    xp = np.pad(x, pad + 4)
    dyp = np.pad(dy, ((0, 2), (0, 2)))
    m = np.zeros((4, 4))
    for th, tw in itertools.product(range(-(-p // 2)), range(-(-q // 2))):
        d = xp[2 * th + 4:2 * th + 8, 2 * tw + 4:2 * tw + 8]
        h = dyp[2 * th:2 * th + 2, 2 * tw:2 * tw + 2]
        m += (a @ h @ a.T) * (bt @ d @ bt.T)
    return gt @ m @ gt.T


@pytest.mark.parametrize(("h", "w", "pad"), [(8, 8, 1), (7, 9, 1), (5, 6, 0), (6, 5, 2)])
def test_the_transforms_compute_the_correlation(h: int, w: int, pad: int) -> None:
    rng = np.random.default_rng(h * w + pad)
    x = rng.standard_normal((h, w))
    p, q = h + 2 * pad - 2, w + 2 * pad - 2
    dy = rng.standard_normal((p, q))
    xp = np.pad(x, pad)
    want = np.array([[np.sum(dy * xp[r:r + p, s:s + q]) for s in range(3)] for r in range(3)])
    np.testing.assert_allclose(_winograd_wrw(x, dy, pad), want, atol=1e-12)


def test_applies_to_fp32_3x3_stride_1_backward_weights_on_sm90_only() -> None:
    tf32x3, tf32 = (get_solver(n) for n in NAMES)
    p = _w(256, 14)
    assert tf32x3.is_applicable(p, SM90) and tf32.is_applicable(p, SM90)
    assert tf32x3.is_applicable(_w(64, 56, layout="NHWC"), SM90)
    assert tf32x3.is_applicable(_w(32, 8, groups=4), SM90)
    for other in (replace(p, stride=(2, 2)), replace(p, dilation=(2, 2), pad=(2, 2)),
                  replace(p, filter=(1, 1), pad=(0, 0)), replace(p, filter=(5, 5)),
                  replace(p, direction="F"), replace(p, direction="B"),
                  replace(p, in_type="FP16", wei_type="FP16", out_type="FP16")):
        assert not tf32x3.is_applicable(other, SM90), other.key()
    for target in (Target("sm80", 108), Target("gfx942", 304), Target("gfx906", 60)):
        assert not tf32x3.is_applicable(p, target)
        assert tf32x3.dynamic_jobs(target) == []


def test_one_call_is_four_launches_on_disjoint_aligned_workspace_parts() -> None:
    solver = get_solver(NAMES[0])
    p = _w(256, 14)
    params = solver.default_params(p, SM90)
    assert params == (128, 128, 32, 8, 2, 8, 3)  # BIG_TILE, split to fill 132 SMs
    (data_job, data), (grad_job, grad) = solver.lead_ins(p, params, SM90)
    main = solver.launch(p, params)
    (out_job, out), = solver.follow_ups(p, params, SM90)
    assert [data.kernel_name, grad.kernel_name, main.kernel_name, out.kernel_name] == [
        "winograd_wrw_data", "winograd_wrw_grad", "winograd_wrw_gemm", "winograd_wrw_out"]
    assert data.pointer_args()[:2] == ["x", "ws_v"] and grad.pointer_args()[:2] == ["dy", "ws_u"]
    assert main.pointer_args()[:3] == ["ws_u", "ws_v", "ws_m"]
    assert out.pointer_args()[:2] == ["ws_m", "dw"]
    # 32 images of 7x7 tiles, rounded up to 1600; U and V [16][256][1600], M [2][16][256][256].
    assert data.scalars()["TP"] == 1600 and main.grid == (4, 16, 2)
    slots = solver.workspace_slots(p, params)
    sizes = {"ws_u": 16 * 256 * 1600 * 4, "ws_v": 16 * 256 * 1600 * 4,
             "ws_m": 2 * 16 * 256 * 256 * 4}
    ends = sorted((slots[k], slots[k] + n) for k, n in sizes.items())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ends))
    assert all(v % wspec.PART_ALIGN == 0 for v in slots.values())
    assert ends[-1][1] <= solver.workspace_for(p, params) == main.workspace_bytes
    # KCRS strides of dw; the output kernel sums the GEMM's two parts.
    assert [out.scalars()[k] for k in ("swk", "swc", "swr", "sws")] == [256 * 9, 9, 3, 1]
    assert "-DSPLIT_K=2" in out_job.options
    assert any(o.startswith("--assume=") for o in solver.compile_job(p, params, SM90).options)
    assert not any(o.startswith("--assume=")
                   for o in solver.unaligned_job(p, params, SM90).options)
    assert not any(o.startswith("--assume=") for o in data_job.options + grad_job.options)


def test_every_default_call_runs_shipped_objects() -> None:
    """Any problem without a record runs on objects every sm90 package holds."""
    for name in NAMES:
        solver = get_solver(name)
        shipped = set(solver.dynamic_jobs(SM90))
        for (c, hw), n, layout in itertools.product(LAYERS, (1, 32, 64, 256), ("NCHW", "NHWC")):
            p = _w(c, hw, n, layout)
            params = solver.default_params(p, SM90)
            assert solver.params_valid(p, SM90, params)
            jobs = launch_jobs(solver, p, params, SM90) + [solver.unaligned_job(p, params, SM90)]
            missing = [j.kernel_name for j in jobs if j not in shipped]
            assert not missing, (name, p.key(), params, missing)


def test_the_ranking_puts_them_first_from_batch_32_not_at_batch_1() -> None:
    tf32x3, tf32 = (get_solver(n) for n in NAMES)
    for c, hw in LAYERS:
        assert ranks_first(tf32x3, _w(c, hw), SM90)
        assert not ranks_first(tf32x3, _w(c, hw, n=1), SM90)
        assert ranks_first(tf32, _w(c, hw), SM90) == (hw <= 14)
    assert not ranks_first(tf32x3, _w(16, 56), SM90)  # few channels
    igemm = get_solver("ConvTritonImplicitGemmTf32x3Wrw")
    assert ranks_first(igemm, _w(256, 14, n=1), SM90)
    assert not ranks_first(igemm, _w(256, 14), SM90)


def test_the_invoker_runs_the_four_launches_in_order(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    solver = get_solver(NAMES[0])
    h = Handle(backend=backend, compiler=triton_compiler('u_ptr % 16 == 0'), solvers=[solver])
    p = _w(128, 28, layout="NHWC")
    params = solver.default_params(p, SM90)
    inv = make_invoker(h, p, solver, params=params)
    assert inv.workspace_bytes == solver.workspace_for(p, params)
    assert inv.alignment == (("workspace", 16),)
    launches, ptrs = run_recorded(backend, inv)
    ws = ptrs["workspace"]
    assert [r.kernel for r in launches] == ["winograd_wrw_data", "winograd_wrw_grad",
                                            "winograd_wrw_gemm", "winograd_wrw_out"]
    slots = solver.workspace_slots(p, params)
    data, grad, gemm, out = (dict(r.args) for r in launches)
    assert data["ptr:x"] == ptrs["x"] and data["ptr:ws_v"] == ws + slots["ws_v"]
    assert grad["ptr:dy"] == ptrs["y"] and grad["ptr:ws_u"] == ws + slots["ws_u"]
    assert gemm["ptr:ws_m"] == ws + slots["ws_m"]
    assert out["ptr:ws_m"] == ws + slots["ws_m"] and out["ptr:dw"] == ptrs["w"]


def test_the_shipped_databases_pick_winograd_for_the_fp32_3x3_layers() -> None:
    """Run 21's records (dbs/sm9084): the three-product Winograd solver is the fastest
    measured FP32 solution of every 3x3 stride-1 backward-weights layer at batch 32 but the
    NHWC one of 64 channels at 56x56 (where the implicit GEMM measured 0.27 ms against its
    0.31), its PerfDb parameters legal."""
    dbs = package_dir("miopenkernels.dbs") / "sm9084"
    fdb = FindDbFile.read(dbs / "sm9084.HIP.fdb.txt")
    perf = PerfDbFile.read(dbs / "sm9084.db.txt")
    solver = get_solver(NAMES[0])
    for (c, hw), layout in itertools.product(LAYERS, ("NCHW", "NHWC")):
        p = _w(c, hw, layout=layout)
        record = fdb.get(p)
        assert record is not None and record.solution(NAMES[0]) is not None, p.key()
        assert (record.best.solver == NAMES[0]) == ((c, layout) != (64, "NHWC")), p.key()
        params = perf.load(p).get(NAMES[0])
        assert params is not None and solver.params_valid(p, SM90, solver.params_from_string(
            params)), (p.key(), params)


def test_registered_once_each() -> None:
    names = [s.name for s in SOLVERS]
    assert all(names.count(n) == 1 for n in NAMES)
