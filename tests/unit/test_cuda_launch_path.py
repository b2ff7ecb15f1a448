"""The CUDA backend's hot path and capture, against a stand-in driver (no GPU here): what
reaches cuLaunchKernel, on which stream, and the capture's sequence of driver calls."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest
from miopenkernels.backends import cuda
from miopenkernels.backends.base import Arg, Function, Module
from miopenkernels.errors import BackendError


class FakeDriver:
    """The few driver entry points the launch path and the capture use, recording calls."""

    class CUresult(int):
        CUDA_SUCCESS = 0

    class CUstreamCaptureStatus:
        CU_STREAM_CAPTURE_STATUS_NONE = 0
        CU_STREAM_CAPTURE_STATUS_ACTIVE = 1

    class CUstreamCaptureMode:
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1

    class CUfunction_attribute:  # noqa: N801 - the driver's name
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.capturing: set[int] = set()

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args: Any) -> tuple[Any, ...]:
            self.calls.append((name, args))
            if name == "cuStreamBeginCapture":
                self.capturing.add(args[0])
            if name == "cuStreamEndCapture":
                self.capturing.discard(args[0])
                return (0, "graph")
            if name == "cuStreamIsCapturing":
                return (0, int(args[0] in self.capturing))
            if name == "cuStreamCreate":
                return (0, 77)
            if name == "cuGraphInstantiate":
                return (0, "exec")
            return (0,)

        return call


@pytest.fixture()
def backend(monkeypatch: pytest.MonkeyPatch) -> tuple[cuda.CudaBackend, FakeDriver, list]:
    d = FakeDriver()
    monkeypatch.setattr(cuda, "_driver", d)
    launched: list[tuple[Any, ...]] = []

    def c_launch(*args: Any) -> int:
        launched.append(args)
        return 0

    monkeypatch.setattr(cuda, "_launch_kernel", lambda: c_launch)
    be = cuda.CudaBackend.__new__(cuda.CudaBackend)
    cuda.Backend.__init__(be)
    be.d, be.context, be.max_shared_optin = d, None, 227 * 1024
    be._own_streams = []
    return be, d, launched


def _launch(be: cuda.CudaBackend) -> Any:
    fn = Function("k", 0x1234, Module(be, None, b""))
    return be.prepare(fn, (4, 2), (128,), [Arg("ptr:x", 0), Arg("i32", 7), Arg("ptr:y", 0)],
                      shared=64 * 1024)


def test_a_prepared_launch_goes_to_the_driver_with_its_packed_parameters(backend) -> None:  # noqa: ANN001
    be, d, launched = backend
    launch = _launch(be)
    go = be.launcher(launch)
    assert [c[0] for c in d.calls] == ["cuFuncSetAttribute"]  # 64 KiB: opted in once, here
    launch.set("x", 0xA000)
    go(0x55)
    launch.set("x", 0xB000)
    go(0x66)
    assert [a[:8] for a in launched] == [(0x1234, 4, 2, 1, 128, 1, 1, 64 * 1024)] * 2
    assert [a[8] for a in launched] == [0x55, 0x66]  # each call on its own stream
    assert launched[0][9] == launch.params_address and launched[0][10] is None
    values = ctypes.cast(launch.params_address, ctypes.POINTER(ctypes.c_void_p))
    assert ctypes.c_uint64.from_address(values[0]).value == 0xB000  # rewritten in place
    assert be.launches == 2 and len(d.calls) == 1


def test_a_failed_launch_raises_with_the_kernel_name(backend, monkeypatch) -> None:  # noqa: ANN001
    be, d, _ = backend
    monkeypatch.setattr(cuda, "_launch_kernel", lambda: (lambda *a: 700))

    def unpack(module: Any, result: tuple[Any, ...], what: str, error: type) -> Any:
        if int(result[0]):
            raise error(f"{what} failed: {int(result[0])}")
        return result[1] if len(result) > 1 else None

    monkeypatch.setattr(cuda, "unpack", unpack)
    with pytest.raises(BackendError, match=r"cuLaunchKernel\(k\) failed: 700"):
        be.launcher(_launch(be))(0)


def test_capture_begins_on_a_stream_of_its_own_and_instantiates_a_graph(backend) -> None:  # noqa: ANN001
    be, d, _ = backend
    stream = be.begin_capture()
    assert stream == 77 and be.is_capturing(77) and not be.is_capturing(5)
    with pytest.raises(BackendError, match="already under way"):
        be.begin_capture(5)
    graph = be.end_capture()
    graph.replay()
    names = [c[0] for c in d.calls]
    assert names == ["cuCtxSetCurrent", "cuStreamCreate", "cuStreamBeginCapture",
                     "cuStreamIsCapturing", "cuStreamIsCapturing", "cuStreamEndCapture",
                     "cuGraphInstantiate", "cuGraphLaunch"]
    assert d.calls[-1][1] == ("exec", 77) and be.capture_stream is None
    with pytest.raises(BackendError, match="default stream cannot be captured"):
        be.begin_capture(0)
