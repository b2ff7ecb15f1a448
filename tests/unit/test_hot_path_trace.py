"""The hot path goes one way: following a problem from `Handle.find` to the launch, each of
the runtime's modules is entered at most twice, and always from above.

A profiler (sys.setprofile) sees every Python call of one `find` and one `run` on the null
backend. An entry is a call into one of the hot path's modules (handle, find, invoke, plan,
kernel_store) from another of them, or from the caller; it is counted once per calling module
(a loop over candidates is one entry). Imports (module bodies) are not calls of the path.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from types import FrameType
from typing import Any

import numpy as np
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
from miopenkernels.backends import NullBackend
from miopenkernels.handle import Handle

# Top to bottom: a module may call the ones after it, never those before.
ORDER = ("handle", "find", "invoke", "plan", "kernel_store")
PATH = {f"miopenkernels.{m}": m for m in ORDER}


def _module(frame: FrameType | None) -> str | None:
    while frame is not None:
        name = PATH.get(frame.f_globals.get("__name__", ""))
        if name is not None:
            return name
        frame = frame.f_back
    return None


def trace_entries(call: Any) -> dict[str, set[str]]:
    """{hot-path module: the modules that entered it ('caller' for the test itself)}."""
    entries: dict[str, set[str]] = defaultdict(set)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        here = PATH.get(frame.f_globals.get("__name__", ""))
        if here is None:
            return
        caller = _module(frame.f_back)
        if caller != here:
            entries[here].add(caller or "caller")

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return dict(entries)


def test_find_then_run_enters_each_module_at_most_twice_and_only_from_above(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    import miopenkernels.find  # noqa: F401 - imported before the trace: imports are not calls
    import miopenkernels.invoke  # noqa: F401

    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
               solvers=[FakeSolver("Slow", 1.0), FakeSolver("Fast", 2.0)])
    x = np.ones(PROBLEM.in_shape, np.float32)
    w = np.ones(PROBLEM.wei_shape, np.float32)
    y = np.zeros(PROBLEM.out_shape, np.float32)

    def find_and_run() -> None:
        sols = h.find(PROBLEM, x, w, y)
        h.run(PROBLEM, sols[0], x, w, y)

    entries = trace_entries(find_and_run)
    assert set(entries) == set(ORDER)  # the whole path was followed, down to the kernel store
    assert y.any() and h.backend.launches == 1  # and it launched and computed
    for module, callers in entries.items():
        assert len(callers) <= 2, (module, callers)
        for caller in callers - {"caller"}:
            assert ORDER.index(caller) < ORDER.index(module), f"{caller} calls back up into " \
                f"{module}"


def test_the_trace_sees_a_call_back_up(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """The counter itself: a kernel store whose compiler asks the Handle calls back up."""
    from miopenkernels.kernel_store import KernelStore

    db_env(monkeypatch, tmp_path)
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(), solvers=[FakeSolver("A", 1)])
    store = KernelStore(h.backend, None, tmp_path / "u.ukdb", cache_disabled=True,
                        compiler=lambda job: repr(h).encode())
    job = FakeSolver("A", 1).compile_job(PROBLEM, (), SM90)
    entries = trace_entries(lambda: store.compile(job))
    assert entries["handle"] == {"kernel_store"} and "caller" in entries["kernel_store"]
