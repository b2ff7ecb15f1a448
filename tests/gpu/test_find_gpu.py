"""Find, immediate mode and the invoker cache on the GPU, with numpy and torch tensors."""

from __future__ import annotations

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import reference as ref

PROBLEM = ConvProblem(n=4, c=32, k=48, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))


def _inputs(rng):  # noqa: ANN001, ANN202
    inputs = ref.conv_inputs(PROBLEM, rng)
    return inputs, inputs["x"].astype(np.float32), inputs["w"].astype(np.float32)


def _check(y: np.ndarray, inputs: dict) -> None:
    assert not np.isnan(y).any()
    want = ref.conv_reference(PROBLEM, inputs)
    tol = ref.tolerance("FP32", PROBLEM.c * 9)
    assert float(np.max(np.abs(y - want))) <= tol


def test_normal_find_times_every_solver_records_them_and_leaves_the_result(handle, rng) -> None:
    inputs, x, w = _inputs(rng)
    y = np.full(PROBLEM.out_shape, np.nan, np.float32)
    sols = handle.find(PROBLEM, x, w, y, mode="NORMAL")
    names = {s.name for s in handle.applicable_solvers(PROBLEM)}
    assert {s.solver for s in sols} == names and len(sols) >= 2
    times = [s.time for s in sols]
    assert times == sorted(times) and all(t > 0 for t in times)
    line = handle.paths.user_finddb.read_text().strip()
    assert line.startswith(PROBLEM.key() + "=" + sols[0].solver + ":")
    assert line.count(";") == len(sols) - 1
    _check(y, inputs)


def test_dynamic_hybrid_miss_ranks_then_hit_and_immediate_run_are_correct(handle, rng) -> None:
    inputs, x, w = _inputs(rng)
    y = np.full(PROBLEM.out_shape, np.nan, np.float32)
    # A miss in the default mode is answered by the ranking: nothing timed, nothing recorded.
    first = handle.find(PROBLEM, x, w, y)
    assert first[0].source == "ranking"
    assert not handle.paths.user_finddb.exists()
    handle.run(PROBLEM, first[0], x, w, y)
    _check(y, inputs)
    timed = handle.find(PROBLEM, x, w, y, mode="NORMAL")
    assert timed[0].source == "find" and handle.paths.user_finddb.exists()
    again = handle.find(PROBLEM, x, w, y)
    assert again[0].source == "finddb" and again[0].solver == timed[0].solver
    y[:] = np.nan
    handle.run(PROBLEM, handle.solutions(PROBLEM)[0], x, w, y)
    _check(y, inputs)


def test_repeated_run_is_one_invoker_call_on_torch_tensors_in_place(handle, rng) -> None:
    """Each run launches the solution's kernels once (the main one, and a split reduction's
    sum or transposes where the solution has them), with no lookup and no compile."""
    torch = pytest.importorskip("torch")
    inputs, x, w = _inputs(rng)
    tx, tw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
    ty = torch.full(PROBLEM.out_shape, float("nan"), device="cuda")
    sol = handle.solutions(PROBLEM)[0]
    handle.run(PROBLEM, sol, tx, tw, ty)
    stats = handle.stats.to_dict()
    launches = handle.backend.launches
    for _ in range(5):
        handle.run(PROBLEM, sol, tx, tw, ty)
    inv = handle.invokers[(PROBLEM, sol.solver)]
    per_run = 1 + len(inv.first) + len(inv.then)
    assert handle.backend.launches == launches + 5 * per_run
    assert handle.stats.to_dict() == stats  # no kernel lookup, no compile
    ptrs = {v.value for v in inv.launch.values}
    assert {tx.data_ptr(), tw.data_ptr(), ty.data_ptr()} <= ptrs
    torch.cuda.synchronize()
    _check(ty.cpu().numpy(), inputs)


def test_disable_cache_compiles_without_writing_the_user_cache(handle, monkeypatch, tmp_path,
                                                               rng) -> None:
    from miopenkernels.handle import Handle

    monkeypatch.setenv("MIOPEN_DISABLE_CACHE", "1")
    h = Handle()
    _, x, w = _inputs(rng)
    y = np.zeros(PROBLEM.out_shape, np.float32)
    sol = h.solutions(PROBLEM)[0]
    h.run(PROBLEM, sol, x, w, y)
    inv = h.invokers[(PROBLEM, sol.solver)]
    # The solution's objects (a split reduction's sum or transposes too) and nothing cached.
    assert 1 <= h.compilations <= 1 + len(inv.first) + len(inv.then)
    assert not (tmp_path / "cache").exists()
