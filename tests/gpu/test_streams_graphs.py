"""Streams and graphs on the GPU: a call joins the caller's torch stream, is captured by
`torch.cuda.graph` and by `Handle.capture`, and a replay is bit-identical to eager; a
channels_last tensor serves an NHWC problem; a plan's host cost stays off the GPU's path."""

from __future__ import annotations

import pytest
from miopenkernels.errors import LayoutError
from miopenkernels.problem import ConvProblem

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the GPU tests are skipped without one
    pytest.skip("torch has no CUDA here", allow_module_level=True)

PROBLEM = ConvProblem(n=4, c=32, k=48, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))
NHWC = ConvProblem(n=4, c=32, k=48, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                   in_layout="NHWC")


def _tensors(problem: ConvProblem, fmt=torch.contiguous_format):  # noqa: ANN001, ANN202
    x = torch.randn(problem.in_shape, device="cuda").to(memory_format=fmt)
    w = torch.randn(problem.wei_shape, device="cuda").to(memory_format=fmt)
    y = torch.full(problem.out_shape, float("nan"), device="cuda").to(memory_format=fmt)
    return x, w, y


def _close(y, x, w) -> None:  # noqa: ANN001
    want = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    torch.testing.assert_close(y.double(), want, rtol=1e-3, atol=1e-3)


def test_a_call_on_a_side_stream_orders_with_torch_work_there(handle) -> None:  # noqa: ANN001
    x, w, y = _tensors(PROBLEM)
    sol = handle.solutions(PROBLEM)[0]
    handle.run(PROBLEM, sol, x, w, y)  # prepared (loaded, workspace) before the timed part
    torch.cuda.synchronize()
    src = torch.randn_like(x)
    x.zero_()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # the side stream is busy for a long while...
        x.copy_(src)  # ...before x holds the input: a launch elsewhere would read zeros
        handle.run(PROBLEM, sol, x, w, y)  # no stream named: torch's current one
        out = y.clone()
    torch.cuda.synchronize()
    _close(out, src, w)


def test_an_explicit_stream_argument_is_used(handle) -> None:  # noqa: ANN001
    x, w, y = _tensors(PROBLEM)
    sol = handle.solutions(PROBLEM)[0]
    side = torch.cuda.Stream()
    src = torch.randn_like(x)
    x.zero_()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)
        x.copy_(src)
    handle.run(PROBLEM, sol, x, w, y, stream=side)  # current stream is the default one
    side.synchronize()
    _close(y, src, w)


def test_torch_cuda_graph_captures_and_replays_bit_identically(handle) -> None:  # noqa: ANN001
    x, w, y = _tensors(PROBLEM)
    sol = handle.solutions(PROBLEM)[0]
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):  # as torch asks: warm up on a side stream
        handle.run(PROBLEM, sol, x, w, y)
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        handle.run(PROBLEM, sol, x, w, y)
    eager = torch.empty_like(y)
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        graph.replay()
        handle.run(PROBLEM, sol, x, w, eager)
        torch.cuda.synchronize()
        assert torch.equal(y, eager)
        _close(y, x, w)


def test_handle_capture_replays_bit_identically(handle) -> None:  # noqa: ANN001
    x, w, y = _tensors(PROBLEM)
    sol = handle.solutions(PROBLEM)[0]
    plan = handle.plan(PROBLEM, sol)
    stream = torch.cuda.Stream()
    plan(x, w, y, stream=stream)  # its workspace for that stream is made before the capture
    stream.synchronize()
    with handle.capture(stream) as graph:
        plan(x, w, y)  # no stream named: the capture's
    eager = torch.empty_like(y)
    x.copy_(torch.randn_like(x))
    torch.cuda.synchronize()
    graph.replay()
    handle.backend.synchronize()
    plan(x, w, eager)
    torch.cuda.synchronize()
    assert torch.equal(y, eager)
    _close(y, x, w)


def test_channels_last_serves_an_nhwc_problem_in_place(handle) -> None:  # noqa: ANN001
    x, w, y = _tensors(NHWC, torch.channels_last)
    handle.run(NHWC, handle.solutions(NHWC)[0], x, w, y)
    torch.cuda.synchronize()
    assert y.is_contiguous(memory_format=torch.channels_last)
    _close(y, x, w)
    with pytest.raises(LayoutError, match="has layout NCHW; the problem wants NHWC"):
        handle.run(NHWC, handle.solutions(NHWC)[0], x.contiguous(), w, y)


def test_find_refuses_to_run_inside_a_torch_capture(handle) -> None:  # noqa: ANN001
    from miopenkernels.errors import BackendError

    x, w, y = _tensors(PROBLEM)
    handle.run(PROBLEM, handle.solutions(PROBLEM)[0], x, w, y)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(BackendError, match="call it before the capture"), \
            torch.cuda.graph(graph):
        handle.find(PROBLEM, x, w, y, mode="NORMAL")
