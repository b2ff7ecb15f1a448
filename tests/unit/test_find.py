"""Find modes, FindDb records, find-enforce, immediate mode, invoker cache, param search."""

from __future__ import annotations

import numpy as np
import pytest
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env, fake_cubin
from miopenkernels.backends import NullBackend
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.errors import ProblemError
from miopenkernels.find import bind, find, search_params
from miopenkernels.handle import Handle


@pytest.fixture()
def env(monkeypatch, tmp_path):  # noqa: ANN001, ANN201
    return db_env(monkeypatch, tmp_path)


def handle(solvers=None, comp=None):  # noqa: ANN001, ANN201
    be = NullBackend(SM90)
    be.kernel_ms = {"fast_p0": 0.5, "slow_p0": 2.0, "tun_p1": 3.0, "tun_p2": 1.0, "tun_p4": 2.0}
    solvers = solvers or [FakeSolver("Slow", 1.0), FakeSolver("Fast", 2.0)]
    return Handle(backend=be, compiler=comp or FakeCompiler(), solvers=solvers)


def tensors(problem=PROBLEM):  # noqa: ANN001, ANN201
    rng = np.random.default_rng()
    return (rng.standard_normal(problem.in_shape).astype(np.float32),
            rng.standard_normal(problem.wei_shape).astype(np.float32),
            np.zeros(problem.out_shape, np.float32))


def test_normal_find_benchmarks_all_sorts_and_records_v2(env) -> None:
    h = handle()
    sols = find(h, PROBLEM, *tensors(), mode="NORMAL")
    assert [s.solver for s in sols] == ["Fast", "Slow"] and sols[0].time == pytest.approx(0.5)
    text = h.paths.user_finddb.read_text()
    assert text.startswith(PROBLEM.key() + "=Fast:0.5,0,miopenConvolutionFwdAlgoDirect;Slow:2,")
    # warm-up + repeats per solver, + one final run of the winner
    assert h.backend.launches == 2 * (2 + 7) + 1


def test_normal_find_compiles_specialised_kernels(env) -> None:
    comp = FakeCompiler()
    h = handle(comp=comp)
    find(h, PROBLEM, *tensors(), mode="NORMAL")
    assert comp.jobs and all(any("MK_SPEC" in o for o in j.options) for j in comp.jobs)


def test_dynamic_hybrid_miss_is_ranked_not_benchmarked(env) -> None:
    comp = FakeCompiler()
    h = handle(comp=comp)
    sols = find(h, PROBLEM, *tensors())  # default mode
    assert sols[0].source == "ranking" and sols[0].specialised is False
    assert h.backend.launches == 0 and comp.jobs == [] and not h.paths.user_finddb.exists()
    # Nothing installed: running the choice compiles its dynamic kernel, and only it.
    h.run(PROBLEM, sols[0], *tensors())
    assert len(comp.jobs) == 1 and not any("MK_SPEC" in o for o in comp.jobs[0].options)


def test_dynamic_hybrid_miss_uses_only_kernels_the_package_holds(env) -> None:
    # The system kdb holds the dynamic kernel of the solver the ranking would put second.
    slow, fast = FakeSolver("Slow", 2.0), FakeSolver("Fast", 1.0)
    job = slow.compile_job(PROBLEM, (), SM90)
    with KernelDb(env["system"] / "sm9084.kdb", readonly=False, wal=False) as kdb:
        kdb.store(job.kdb_name, job.kdb_args, fake_cubin(90, [job.kernel_name]))
    comp = FakeCompiler()
    h = handle(solvers=[slow, fast], comp=comp)
    assert h.solutions(PROBLEM)[0].solver == "Slow"
    sols = find(h, PROBLEM, *tensors())
    assert [s.solver for s in sols] == ["Slow"] and sols[0].source == "ranking"
    h.run(PROBLEM, sols[0], *tensors())
    assert comp.jobs == [] and h.stats.system_kdb == 1 and h.backend.launches == 1


def test_hybrid_miss_benchmarks(env) -> None:
    h = handle()
    sols = find(h, PROBLEM, *tensors(), mode="HYBRID")
    assert sols[0].source == "find" and sols[0].solver == "Fast" and h.backend.launches > 0


def test_fast_mode_never_benchmarks(env) -> None:
    h = handle()
    sols = find(h, PROBLEM, *tensors(), mode="FAST")
    # Solvers the model has no timings of tie; their own estimates decide (lower is better).
    assert sols[0].source == "ranking" and sols[0].solver == "Slow"
    assert h.backend.launches == 0 and not h.paths.user_finddb.exists()


def test_hybrid_uses_the_system_record(env) -> None:
    (env["system"] / "sm9084.HIP.fdb.txt").write_text(
        f"{PROBLEM.key()}=Slow:0.1,0,miopenConvolutionFwdAlgoDirect;Fast:0.2,0,"
        "miopenConvolutionFwdAlgoDirect\n")
    h = handle()
    sols = find(h, PROBLEM, *tensors(), mode=3)
    assert [s.solver for s in sols] == ["Slow", "Fast"] and sols[0].source == "finddb"
    assert h.backend.launches == 0


def test_user_record_wins_over_system(env) -> None:
    (env["system"] / "sm9084.HIP.fdb.txt").write_text(
        f"{PROBLEM.key()}=Slow:0.1,0,miopenConvolutionFwdAlgoDirect\n")
    h = handle()
    find(h, PROBLEM, *tensors(), mode="NORMAL")  # writes the user record: Fast first
    assert h.solutions(PROBLEM)[0].solver == "Fast"


def test_enforce_db_update_benchmarks_despite_a_hit(env) -> None:
    h = handle()
    find(h, PROBLEM, *tensors())
    n = h.backend.launches
    sols = find(h, PROBLEM, *tensors(), enforce="DB_UPDATE")
    assert sols[0].source == "find" and h.backend.launches > n


def test_enforce_db_clean_removes_the_user_record(env) -> None:
    h = handle()
    find(h, PROBLEM, *tensors(), mode="NORMAL")
    assert PROBLEM.key() in h.paths.user_finddb.read_text()
    find(h, PROBLEM, *tensors(), mode="FAST", enforce="DB_CLEAN")
    assert PROBLEM.key() not in h.paths.user_finddb.read_text()


def test_a_solver_that_fails_to_compile_is_left_out(env) -> None:
    h = handle(solvers=[FakeSolver("Fast", 1.0), FakeSolver("Slow", 1.0)],
               comp=FakeCompiler(broken={0}))
    with pytest.raises(ProblemError, match="no solver ran"):
        find(h, PROBLEM, *tensors(), mode="NORMAL")


def test_immediate_mode_ranks_by_heuristic_without_record(env) -> None:
    h = handle(solvers=[FakeSolver("A", 3.0), FakeSolver("B", 1.0), FakeSolver("C", 2.0)])
    assert [s.solver for s in h.solutions(PROBLEM)] == ["B", "C", "A"]
    assert h.backend.launches == 0 and h.compilations == 0
    assert h.workspace_size(PROBLEM, "B") == 0


def test_invoker_cache_makes_a_repeat_one_launch_with_new_pointers(env) -> None:
    h = handle()
    sol = h.solutions(PROBLEM)[0]
    inv = h.compile_solution(PROBLEM, sol)
    be = h.backend
    x, w, y = tensors()
    from miopenkernels.tensor import as_device

    tx, tw, ty = (as_device(a, be) for a in (x, w, y))
    h.run(PROBLEM, sol, tx, tw, ty)
    stats = h.stats.to_dict()
    n = be.launches
    tx2 = as_device(x, be)
    h.run(PROBLEM, sol, tx2, tw, ty)
    assert be.launches == n + 1 and h.stats.to_dict() == stats
    assert h.invokers[(PROBLEM, sol.solver)] is inv
    assert be.recorded[-1].args[0] == ("ptr:x", tx2.ptr) != be.recorded[-2].args[0]


def test_backward_directions_bind_dy_and_dx(env) -> None:
    h = handle()
    prob = PROBLEM.with_direction("B")
    x, w, y = tensors()
    x[:] = 5
    h.run(prob, h.solutions(prob)[0], x, w, y)
    names = [a[0] for a in h.backend.recorded[-1].args[:3]]
    assert names == ["ptr:dy", "ptr:w", "ptr:dx"]
    assert not x.any()  # dx is the output: copied back


def test_wrong_tensor_size_or_type_is_a_problem_error(env) -> None:
    h = handle()
    x, w, y = tensors()
    with pytest.raises(ProblemError, match="tensor w has"):
        h.run(PROBLEM, "Fast", x, w[:1], y)
    with pytest.raises(ProblemError, match="FP16"):
        h.run(PROBLEM, "Fast", x.astype(np.float16).repeat(2), w, y)


def test_param_search_picks_the_fastest_and_scores_failures_infinite(env) -> None:
    tun = FakeSolver("Tun", 1.0, tunable=True, space=(1, 2, 4, 8))
    h = handle(solvers=[tun], comp=FakeCompiler(broken={8}))
    bound = bind(h, PROBLEM, *tensors())
    log: list[dict] = []
    params, ms = search_params(h, PROBLEM, tun, bound, log_entries=log)
    assert params == (2,) and ms == pytest.approx(1.0)
    by = {e["params"]: e for e in log}
    assert set(by) == {"1", "2", "4", "8"} and by["8"]["time_ms"] is None and "error" in by["8"]


def test_zero_first_tensors_are_cleared_before_each_launch(env, monkeypatch) -> None:
    from miopenkernels.solvers import reference
    from miopenkernels.solvers.base import Launch

    # The null backend would fill y with the reference result after the launch; what is under
    # test is the clearing before it.
    monkeypatch.setattr(reference, "compute_reference", lambda *args: True)

    class Accumulating(FakeSolver):
        def launch(self, problem, params, specialised=False):  # noqa: ANN001, ANN201
            base = super().launch(problem, params, specialised)
            return Launch(base.kernel_name, base.grid, base.block, base.args,
                          zero_first=("y",))

    h = handle(solvers=[Accumulating("Acc", 1.0)])
    x, w, y = tensors()
    from miopenkernels.tensor import as_device

    ty = as_device(np.full_like(y, 3.0), h.backend)
    h.run(PROBLEM, "Acc", x, w, ty)
    out = np.empty_like(y)
    h.backend.copy_out(out, ty.buffer)
    assert not out.any()


def test_enforce_search_tunes_into_the_user_perfdb(env) -> None:
    tun = FakeSolver("Tun", 1.0, tunable=True, space=(1, 2, 4))
    h = handle(solvers=[tun])
    find(h, PROBLEM, *tensors(), mode="FAST", enforce="SEARCH")
    assert h.perfdb.load(PROBLEM) == {"Tun": "2"}  # tun_p2 is the fastest null kernel
    assert h.params_for(PROBLEM, tun) == (2,)


def test_find_without_a_device_timer_ranks_and_records_nothing(env) -> None:
    be = NullBackend(SM90)  # no kernel_ms: host times of emulated launches, not a device's
    h = Handle(backend=be, compiler=FakeCompiler(),
               solvers=[FakeSolver("Slow", 1.0), FakeSolver("Fast", 2.0)])
    assert not be.has_timer
    sols = find(h, PROBLEM, *tensors(), mode="NORMAL")
    assert {s.solver for s in sols} == {"Fast", "Slow"}
    find(h, PROBLEM, *tensors(), enforce="SEARCH", mode="NORMAL")
    assert not h.paths.user_finddb.exists()
    assert h.perfdb.load(PROBLEM) == {}
    assert not h.paths.user_perfdb.exists()


def test_solvers_this_runtime_lacks_are_skipped_with_one_line_per_database(
        env, caplog) -> None:  # noqa: ANN001
    import dataclasses
    import logging

    algo = "miopenConvolutionFwdAlgoDirect"
    problems = [PROBLEM, dataclasses.replace(PROBLEM, n=PROBLEM.n + 1)]
    lines = [f"{p.key()}=ConvWinograd3x3MultipassWrW<3-2>:0.1,0,{algo};"
             f"ConvAsmImplicitGemmGTCDynamicFwdXdlops:0.2,0,{algo};Fast:0.5,0,{algo}"
             for p in problems]
    (env["system"] / "sm9084.HIP.fdb.txt").write_text("\n".join(lines) + "\n")
    h = handle()
    with caplog.at_level(logging.WARNING):
        for p in problems * 3:
            assert [s.solver for s in h.solutions(p)] == ["Fast"]
    said = [r.getMessage() for r in caplog.records if "does not implement" in r.getMessage()]
    assert len(said) == 1 and "sm9084.HIP.fdb.txt" in said[0]
    # The file itself is untouched: the entries stay for MIOpen.
    assert (env["system"] / "sm9084.HIP.fdb.txt").read_text() == "\n".join(lines) + "\n"
