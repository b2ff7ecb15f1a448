"""Handle: target and overrides, system db discovery (nearest CU), kernel sources, caches."""

from __future__ import annotations

import numpy as np
import pytest
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env, fake_cubin
from miopenkernels.backends import NullBackend
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.handle import Handle, nearest_system_basename
from miopenkernels.target import Target


def make(monkeypatch, tmp_path, **kw):  # noqa: ANN001, ANN003, ANN201
    dirs = db_env(monkeypatch, tmp_path)
    comp = FakeCompiler()
    solvers = kw.pop("solvers", [FakeSolver("Fast", 1.0), FakeSolver("Slow", 2.0)])
    h = Handle(backend=NullBackend(SM90), compiler=comp, solvers=solvers, **kw)
    return h, comp, dirs


def test_handle_on_a_named_target_uses_the_basename_and_user_paths(monkeypatch, tmp_path) -> None:
    h, _, dirs = make(monkeypatch, tmp_path)
    assert h.basename == "sm9084"
    assert h.paths.user_finddb.parent == dirs["user"]
    assert h.paths.user_kdb == dirs["cache"] / "sm9084.ukdb"
    assert h.system_kdb is None


def test_device_overrides_change_the_target(monkeypatch, tmp_path) -> None:
    db_env(monkeypatch, tmp_path)
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "114")
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(), solvers=[])
    assert h.target == Target("sm90", 114) and h.basename == "sm9072"


def test_nearest_cu_of_the_same_arch_is_used_with_a_warning(monkeypatch, tmp_path) -> None:
    dirs = db_env(monkeypatch, tmp_path)
    (dirs["system"] / "sm9072.HIP.fdb.txt").write_text(
        f"{PROBLEM.key()}=Slow:0.5,0,miopenConvolutionFwdAlgoDirect\n")
    (dirs["system"] / "sm90_32.HIP.fdb.txt").write_text("")
    (dirs["system"] / "sm80_32.HIP.fdb.txt").write_text("")
    assert nearest_system_basename(SM90, [dirs["system"]])[0] == "sm9072"
    with pytest.warns(UserWarning, match="using sm9072"):
        h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
                   solvers=[FakeSolver("Slow", 2.0)])
    assert h.basename == "sm9084" and h.system_basename == "sm9072"
    assert h.finddb.lookup(PROBLEM).best.solver == "Slow"


def test_no_system_db_of_another_arch_is_taken(monkeypatch, tmp_path) -> None:
    dirs = db_env(monkeypatch, tmp_path)
    (dirs["system"] / "sm80_32.kdb").write_bytes(b"x" * 1000)
    assert nearest_system_basename(SM90, [dirs["system"]]) is None


def test_a_git_lfs_pointer_kdb_is_ignored(monkeypatch, tmp_path) -> None:
    dirs = db_env(monkeypatch, tmp_path)
    (dirs["system"] / "sm9084.kdb").write_text("version https://git-lfs.github.com/spec/v1\n")
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(), solvers=[])
    with pytest.warns(UserWarning, match="LFS"):  # the kdb is opened on first use
        assert h.system_kdb is None


def test_kernel_comes_from_system_kdb_without_compiling(monkeypatch, tmp_path) -> None:
    dirs = db_env(monkeypatch, tmp_path)
    solver = FakeSolver("Fast", 1.0)
    job = solver.compile_job(PROBLEM, (), SM90)
    with KernelDb(dirs["system"] / "sm9084.kdb", readonly=False, wal=False) as kdb:
        kdb.store(job.kdb_name, job.kdb_args, fake_cubin(90, [job.kernel_name]))
    comp = FakeCompiler()
    h = Handle(backend=NullBackend(SM90), compiler=comp, solvers=[solver])
    fn = h.kernel(job)
    assert fn.name == job.kernel_name
    assert h.stats.system_kdb == 1 and h.compilations == 0 and comp.jobs == []
    assert h.kernel(job) is fn and h.stats.memory == 1


def test_a_miss_is_compiled_once_and_cached_for_the_next_process(monkeypatch, tmp_path) -> None:
    h, comp, dirs = make(monkeypatch, tmp_path)
    job = h.solvers[0].compile_job(PROBLEM, (), SM90)
    h.kernel(job)
    assert h.compilations == 1 and (dirs["cache"] / "sm9084.ukdb").exists()
    h2 = Handle(backend=NullBackend(SM90), compiler=comp, solvers=h.solvers)
    h2.kernel(job)
    assert h2.compilations == 0 and h2.stats.user_kdb == 1 and len(comp.jobs) == 1


def test_disable_cache_compiles_every_process_and_writes_nothing(monkeypatch, tmp_path) -> None:
    h, comp, dirs = make(monkeypatch, tmp_path)
    monkeypatch.setenv("MIOPEN_DISABLE_CACHE", "1")
    h = Handle(backend=NullBackend(SM90), compiler=comp, solvers=h.solvers)
    job = h.solvers[0].compile_job(PROBLEM, (), SM90)
    h.kernel(job)
    assert h.compilations == 1 and not (dirs["cache"] / "sm9084.ukdb").exists()


def test_perfdb_params_are_used_when_valid(monkeypatch, tmp_path) -> None:
    tun = FakeSolver("Tun", 1.0, tunable=True, space=(1, 2, 4))
    h, _, _ = make(monkeypatch, tmp_path, solvers=[tun])
    assert h.params_for(PROBLEM, tun) == (1,)
    h.perfdb.store(PROBLEM, "Tun", "4")
    assert h.params_for(PROBLEM, tun) == (4,)
    h.perfdb.store(PROBLEM, "Tun", "3")  # not in the space: defaults
    assert h.params_for(PROBLEM, tun) == (1,)


def test_convolution_runs_numpy_tensors_through_immediate_mode(monkeypatch, tmp_path) -> None:
    h, _, _ = make(monkeypatch, tmp_path)
    x = np.ones(PROBLEM.in_shape, np.float32)
    w = np.ones(PROBLEM.wei_shape, np.float32)
    y = np.full(PROBLEM.out_shape, 7, np.float32)
    sol = h.convolution(PROBLEM, x, w, y)
    assert sol.solver == "Fast" and sol.source == "ranking"
    assert h.backend.recorded[-1].kernel == "fast_p0"
    # No kernel ran on the null backend: y is the reference result, copied back.
    from miopenkernels.solvers.reference import conv_reference

    assert np.allclose(y, conv_reference(PROBLEM, {"x": x, "w": w}), rtol=1e-6)
    assert y.any()


def test_primitives_bind_named_tensors_and_cache_their_launch(monkeypatch, tmp_path) -> None:
    from miopenkernels.errors import MIOpenKernelsError
    from miopenkernels.primitives import ActivationProblem, TensorShape

    h, comp, _ = make(monkeypatch, tmp_path)
    prob = ActivationProblem(TensorShape(2, 3, (4, 4)), "relu")
    x = np.ones((2, 3, 4, 4), np.float32)
    y = np.full_like(x, 5)
    h.primitive("Activation", prob, x=x, y=y)
    h.primitive("Activation", prob, x=x, y=y)
    rec = h.backend.recorded
    assert [r.kernel for r in rec] == ["mk_activation_fwd"] * 2 and len(comp.jobs) == 1
    assert rec[0].args[2] == ("i32", 96) and not y.any()  # output copied back
    with pytest.raises(MIOpenKernelsError, match="needs tensor 'y'"):
        h.primitive("Activation", prob, x=x)


@pytest.mark.parametrize("name", ["sm90.kdb", "sm9084.kdb"])
def test_the_arch_kdb_serves_when_there_is_no_basename_kdb(monkeypatch, tmp_path,
                                                           name: str) -> None:
    # MIOpen looks for <basename>.kdb, then <arch>.kdb (AMD ships gfx90a.kdb, gfx942.kdb).
    dirs = db_env(monkeypatch, tmp_path)
    solver = FakeSolver("Fast", 1.0)
    job = solver.compile_job(PROBLEM, (), SM90)
    with KernelDb(dirs["system"] / name, readonly=False, wal=False) as kdb:
        kdb.store(job.kdb_name, job.kdb_args, fake_cubin(90, [job.kernel_name]))
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(), solvers=[solver])
    assert h.paths.system_dir == dirs["system"]
    assert h.system_kdb is not None and h.system_kdb.path.name == name
    h.kernel(job)
    assert h.stats.system_kdb == 1 and h.compilations == 0
