"""Plans on the null backend: prepared once, layouts checked once per new layout, strides
(channels_last), the caller's stream, and the stand-alone capture."""

from __future__ import annotations

import numpy as np
import pytest
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
from miopenkernels import plan as plan_module
from miopenkernels._record import replace
from miopenkernels.backends import NullBackend
from miopenkernels.errors import BackendError, LayoutError
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers.reference import conv_reference, conv_tensor_shapes
from miopenkernels.tensor import memory_shape, stream_handle

NHWC = replace(PROBLEM, in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")


@pytest.fixture()
def h(monkeypatch, tmp_path) -> Handle:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    return Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
                  solvers=[FakeSolver("Fast", 1.0)])


def _inputs(problem: ConvProblem) -> dict[str, np.ndarray]:
    rng = np.random.default_rng()
    return {"x": rng.standard_normal(memory_shape(problem, "x")).astype(np.float32),
            "w": rng.standard_normal(memory_shape(problem, "w")).astype(np.float32),
            "y": np.zeros(memory_shape(problem, "y"), np.float32)}


def _expected(problem: ConvProblem, t: dict[str, np.ndarray]) -> np.ndarray:
    return conv_reference(problem, {"x": t["x"], "w": t["w"]})


def test_memory_shape_moves_channels_last_for_channels_last_layouts() -> None:
    assert memory_shape(PROBLEM, "x") == (2, 4, 6, 6)
    assert memory_shape(NHWC, "x") == (2, 6, 6, 4) and memory_shape(NHWC, "w") == (8, 3, 3, 4)
    assert memory_shape(NHWC, "y") == conv_tensor_shapes(NHWC)["y"]


def test_a_plan_is_kept_and_runs_numpy_tensors(h: Handle) -> None:
    sol = h.solutions(PROBLEM)[0]
    plan = h.plan(PROBLEM, sol)
    assert h.plan(PROBLEM, sol) is plan and plan.workspace_bytes == 0
    t = _inputs(PROBLEM)
    plan(t["x"], t["w"], t["y"])
    np.testing.assert_allclose(t["y"], _expected(PROBLEM, t), rtol=1e-5, atol=1e-5)
    t["y"][...] = 0
    h.run(PROBLEM, sol, t["x"], t["w"], t["y"])  # Handle.run: the same kept plan
    np.testing.assert_allclose(t["y"], _expected(PROBLEM, t), rtol=1e-5, atol=1e-5)
    assert h.backend.launches == 2


def test_layouts_are_checked_once_per_new_layout(h: Handle, monkeypatch) -> None:  # noqa: ANN001
    import miopenkernels.tensor as tensor

    seen: list[str] = []
    real = tensor.check_layout

    def counting(problem, role, *args):  # noqa: ANN001, ANN202
        seen.append(role)
        return real(problem, role, *args)

    monkeypatch.setattr(tensor, "check_layout", counting)
    plan = h.plan(PROBLEM, h.solutions(PROBLEM)[0])
    t = _inputs(PROBLEM)
    for _ in range(3):
        plan(t["x"], t["w"], t["y"])
    assert seen == ["x", "w", "y"]


def test_an_nhwc_problem_refuses_an_nchw_shaped_numpy_array(h: Handle) -> None:
    plan = h.plan(NHWC, h.solutions(NHWC)[0])
    t = _inputs(NHWC)
    with pytest.raises(LayoutError, match=r"tensor x .* has layout NCHW; the problem wants "
                                          r"NHWC.*memory_shape"):
        plan(np.zeros(NHWC.in_shape, np.float32), t["w"], t["y"])
    plan(t["x"], t["w"], t["y"])  # memory-order arrays are the problem's layout
    np.testing.assert_allclose(t["y"], _expected(NHWC, t), rtol=1e-5, atol=1e-5)


def test_a_transposed_view_and_a_wrong_type_are_layout_errors(h: Handle) -> None:
    plan = h.plan(PROBLEM, h.solutions(PROBLEM)[0])
    t = _inputs(PROBLEM)
    with pytest.raises(LayoutError, match="strided view; the problem wants NCHW"):
        plan(np.zeros((2, 4, 6, 6), np.float32).transpose(0, 1, 3, 2), t["w"], t["y"])
    with pytest.raises(LayoutError, match="tensor w is FP16; the problem says FP32"):
        plan(t["x"], t["w"].astype(np.float16), t["y"])


def test_torch_channels_last_is_accepted_for_nhwc_and_matches_torch(h: Handle) -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(NHWC.in_shape).to(memory_format=torch.channels_last)
    w = torch.randn(NHWC.wei_shape).to(memory_format=torch.channels_last)
    y = torch.zeros(NHWC.out_shape).to(memory_format=torch.channels_last)
    h.run(NHWC, h.solutions(NHWC)[0], x, w, y)
    want = torch.nn.functional.conv2d(x, w, padding=1)
    torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)
    assert y.is_contiguous(memory_format=torch.channels_last)  # written in place
    with pytest.raises(LayoutError, match="has layout NHWC; the problem wants NCHW"):
        h.run(PROBLEM, h.solutions(PROBLEM)[0], x.contiguous(memory_format=torch.channels_last),
              torch.randn(PROBLEM.wei_shape), torch.zeros(PROBLEM.out_shape))


def test_stream_handles_of_ints_and_stream_objects() -> None:
    class TorchLike:
        cuda_stream = 0x1234

    class CoreLike:
        handle = 0x99

    assert stream_handle(None) == 0 and stream_handle(7) == 7
    assert stream_handle(TorchLike()) == 0x1234 and stream_handle(CoreLike()) == 0x99
    with pytest.raises(BackendError, match="cannot use a str as a stream"):
        stream_handle("s")


def test_capture_records_calls_and_replays_them(h: Handle) -> None:
    be = h.backend
    t = _inputs(PROBLEM)
    bufs = {}
    for role, arr in t.items():
        bufs[role] = be.alloc(arr.nbytes)
        be.copy_in(bufs[role], arr)
    sol = h.solutions(PROBLEM)[0]
    h.run(PROBLEM, sol, bufs["x"], bufs["w"], bufs["y"])  # prepared before the capture
    be.memset(bufs["y"], 0)
    launches = be.launches
    with h.capture() as graph:
        h.run(PROBLEM, sol, bufs["x"], bufs["w"], bufs["y"])
        with pytest.raises(BackendError, match="inside a capture pass device tensors"):
            h.run(PROBLEM, sol, t["x"], t["w"], t["y"])
    out = np.empty_like(t["y"])
    be.copy_out(out, bufs["y"])
    assert not out.any()  # captured, not run
    graph.replay()
    graph.replay()
    be.copy_out(out, bufs["y"])
    np.testing.assert_allclose(out, _expected(PROBLEM, t), rtol=1e-5, atol=1e-5)
    assert be.launches == launches + 3  # the captured launch, then one per replay


def test_a_plan_needs_no_workspace_allocation_inside_a_capture(h: Handle) -> None:
    be = h.backend
    plan = h.plan(PROBLEM, h.solutions(PROBLEM)[0])
    plan.workspace_bytes = 64  # as a solver with scratch memory would need
    stream = be.begin_capture(5)
    try:
        with pytest.raises(BackendError, match="run the plan once on the stream first"):
            plan._workspace_ptr(stream, None)
    finally:
        be.end_capture()
    assert plan._workspace_ptr(stream, None) != 0  # outside a capture: allocated, then kept
    assert plan._workspace_ptr(stream, None) == plan._workspace_ptr(stream, None)
    assert plan_module.Plan is type(plan)


def test_the_same_torch_tensors_skip_the_layout_read_new_ones_are_checked(
        h: Handle, monkeypatch) -> None:  # noqa: ANN001
    torch = pytest.importorskip("torch")
    import miopenkernels.tensor as tensor

    reads: list[object] = []
    real = tensor.torch_layout

    def on_device_0(t):  # noqa: ANN001, ANN202 - CPU tensors standing in for cuda:0 ones
        reads.append(t)
        return (*real(t)[:3], 0)

    monkeypatch.setattr(tensor, "torch_layout", on_device_0)
    plan = h.plan(PROBLEM, h.solutions(PROBLEM)[0])
    streams: list[int] = []
    plan._go = streams.append  # the launch: which stream it went to
    plan._null = False  # as on a GPU backend
    x, w, y = (torch.zeros(s) for s in (PROBLEM.in_shape, PROBLEM.wei_shape, PROBLEM.out_shape))
    plan(x, w, y, stream=3)
    plan(x, w, y, stream=type("S", (), {"cuda_stream": 4})())
    assert streams == [3, 4] and len(reads) == 3  # read once, launched twice
    assert plan._slots is not None and plan._slots[0][0].value == x.data_ptr()
    x2, y2 = torch.ones_like(x), torch.ones_like(y)
    plan.run_checked(x2, w, y2, 0, stream=6)  # a layout `run` accepted: launched, not read
    assert streams == [3, 4, 6] and len(reads) == 3 and plan._slots[0][0].value == x2.data_ptr()
    with pytest.raises(LayoutError, match="tensor x .* strided view"):
        plan(x.transpose(2, 3), w, y, stream=3)  # a new object: read and checked
    assert streams == [3, 4, 6]


def test_find_refuses_a_stream_under_capture(h: Handle) -> None:
    t = _inputs(PROBLEM)
    with h.capture() as graph, pytest.raises(BackendError, match="before the capture"):
        h.find(PROBLEM, t["x"], t["w"], t["y"], mode="NORMAL", stream=graph.stream)
    assert not h.paths.user_finddb.exists()  # nothing benchmarked, nothing written
