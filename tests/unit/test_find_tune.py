"""Tuning on the null backend: shards named by basename, PerfDb/FindDb text, the JSON log."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
from miopenkernels.backends import NullBackend
from miopenkernels.builder.tune import select_shard, tune
from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import ProblemError
from miopenkernels.handle import Handle


def test_tune_writes_perfdb_finddb_and_log(monkeypatch, tmp_path) -> None:
    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    be.kernel_ms = {"tun_p1": 3.0, "tun_p2": 1.0, "tun_p4": 2.0, "plain_p0": 1.5}
    solvers = [FakeSolver("Tun", 1.0, tunable=True, space=(1, 2, 4, 8)),
               FakeSolver("Plain", 2.0), FakeSolver("Other", 3.0)]
    h = Handle(backend=be, compiler=FakeCompiler(broken={8}), solvers=solvers)
    probs = [PROBLEM, PROBLEM.with_direction("W")]
    res = tune(h, probs, tmp_path / "out", solver_glob="[TP]*", formats=("text", "sqlite"))
    assert res.tuned == 2 and res.perf_entries == 2
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["sm9084.HIP.fdb.txt", "sm9084.db", "sm9084.db.txt", "sm9084.tune.json"]
    perf = PerfDbFile.read(tmp_path / "out" / "sm9084.db.txt")
    assert perf.load(PROBLEM) == {"Tun": "2"}
    assert PerfDbFile.read(tmp_path / "out" / "sm9084.db").load(PROBLEM) == {"Tun": "2"}
    rec = FindDbFile.read(tmp_path / "out" / "sm9084.HIP.fdb.txt").get(PROBLEM)
    assert [s.solver for s in rec.solutions] == ["Tun", "Plain"]  # Other filtered by the glob
    log = json.loads((tmp_path / "out" / "sm9084.tune.json").read_text())
    failed = [t for t in log["timings"] if t.get("error")]
    assert failed and all(t["params"] == "8" and t["time_ms"] is None for t in failed)
    assert log["summary"]["tuned"] == 2 and log["device"] == "null device"


def test_progress_names_each_problem_s_fastest_solver(monkeypatch, tmp_path) -> None:
    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    be.kernel_ms = {"slow_p0": 3.0, "fast_p0": 1.0}
    solvers = [FakeSolver("Slow", 3.0), FakeSolver("Fast", 1.0)]  # timed in this order
    h = Handle(backend=be, compiler=FakeCompiler(), solvers=solvers)
    seen = []
    tune(h, [PROBLEM], tmp_path / "out", progress=lambda i, n, key, sols: seen.append(
        [s.solver for s in sols]))
    assert seen == [["Fast", "Slow"]]


def test_time_limit_reports_problems_not_reached(monkeypatch, tmp_path) -> None:
    db_env(monkeypatch, tmp_path)
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
               solvers=[FakeSolver("Plain", 1.0)])
    res = tune(h, [PROBLEM, PROBLEM.with_direction("B")], tmp_path / "o", time_limit_s=0.0)
    assert res.tuned == 0 and len(res.skipped) == 2


def test_shards_partition_the_problems() -> None:
    items = list(range(10))
    parts = [select_shard(items, f"{i}/3") for i in range(3)]  # type: ignore[arg-type]
    assert sorted(sum(parts, [])) == items and parts[1] == [1, 4, 7]
    with pytest.raises(ProblemError, match="I/N"):
        select_shard(items, "x")  # type: ignore[arg-type]


def test_both_math_modes_give_an_ieee_and_a_tf32_record(monkeypatch, tmp_path) -> None:
    from miopenkernels.builder.closure import db_problems
    from miopenkernels.config import MathMode

    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    be.kernel_ms = {"tun_p1": 3.0, "tun_p2": 1.0, "fast_p0": 0.5}
    tf32 = FakeSolver("Fast", 0.5)
    tf32.math = "tf32"  # type: ignore[attr-defined]
    h = Handle(backend=be, compiler=FakeCompiler(),
               solvers=[FakeSolver("Tun", 1.0, tunable=True, space=(1, 2)), tf32])
    assert [s.name for s in h.solvers] == ["Tun", "Fast"]
    fp16 = replace(PROBLEM, in_type="FP16", wei_type="FP16", out_type="FP16")
    res = tune(h, [PROBLEM, fp16], tmp_path / "out", maths=(MathMode.IEEE, MathMode.TF32))
    fdb = FindDbFile.read(tmp_path / "out" / "sm9084.HIP.fdb.txt")
    keys = sorted(fdb.records)
    assert keys == sorted([PROBLEM.key(), PROBLEM.key() + "_tf32", fp16.key()])
    assert [s.solver for s in fdb.records[PROBLEM.key()].solutions] == ["Tun"]
    # Fastest first, whatever the registry's order.
    assert [s.solver for s in fdb.records[PROBLEM.key() + "_tf32"].solutions] == ["Fast", "Tun"]
    # The IEEE solver is searched once and its PerfDb row serves both records.
    searches = [t for t in json.loads((tmp_path / "out" / "sm9084.tune.json").read_text())
                ["timings"] if t["solver"] == "Tun" and not t.get("final")]
    assert len(searches) == 4 and res.perf_entries == 2  # FP32 once, FP16 once
    assert PROBLEM in db_problems(tmp_path / "out" / "sm9084.HIP.fdb.txt")
    # Resuming past both records leaves nothing to do.
    again = tune(h, [PROBLEM], tmp_path / "again", maths=(MathMode.IEEE, MathMode.TF32),
                 done=set(keys))
    assert again.problems == 0


def test_a_lost_gpu_context_stops_tuning_and_keeps_what_was_measured(monkeypatch,
                                                                     tmp_path) -> None:
    import miopenkernels.builder.tune as tune_module
    from miopenkernels.errors import BackendError

    db_env(monkeypatch, tmp_path)
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
               solvers=[FakeSolver("Plain", 1.0)])
    real = tune_module.make_invoker
    calls = []

    def dies_on_the_second(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 2:
            raise BackendError("cuLaunchKernel(k) failed: CUDA_ERROR_ILLEGAL_ADDRESS: bad")
        return real(*args, **kwargs)

    monkeypatch.setattr(tune_module, "make_invoker", dies_on_the_second)
    probs = [PROBLEM, PROBLEM.with_direction("B"), PROBLEM.with_direction("W")]
    res = tune(h, probs, tmp_path / "o")
    assert res.tuned == 1 and "CUDA_ERROR_ILLEGAL_ADDRESS" in res.stopped
    assert res.skipped == [p.key() for p in probs[1:]] and len(calls) == 2
    assert list(FindDbFile.read(tmp_path / "o" / "sm9084.HIP.fdb.txt").records) == [PROBLEM.key()]
