"""The CUDA backend on a real GPU: load from bytes, launch, copy, time, errors, zero-copy."""

from __future__ import annotations

import numpy as np
import pytest
from miopenkernels.backends.base import Arg
from miopenkernels.errors import BackendError, CodeObjectError
from miopenkernels.target import Target
from miopenkernels.tensor import as_device

SRC = b"""
extern "C" __global__ void axpb(float* y, const float* x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
"""


def nvrtc_cubin(src: bytes, arch: str) -> bytes:
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(src, b"t.cu", 0, [], [])
    (err,) = nvrtc.nvrtcCompileProgram(prog, 1, [f"-arch={arch}".encode()])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, size = nvrtc.nvrtcGetCUBINSize(prog)
    out = bytearray(size)
    nvrtc.nvrtcGetCUBIN(prog, out)
    return bytes(out)


@pytest.fixture(scope="module")
def cubin(backend) -> bytes:
    return nvrtc_cubin(SRC, f"sm_{backend.target.sm}")


def test_device_identity(backend) -> None:
    assert backend.target.vendor == "nvidia"
    assert backend.target.cu > 0
    assert backend.device_name


def test_launch_computes_and_writes_every_element(backend, cubin, rng) -> None:
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    xb, yb = backend.alloc(x.nbytes), backend.alloc(x.nbytes)
    backend.copy_in(xb, x)
    backend.memset(yb, 0xFF)  # NaN everywhere
    fn = backend.load(cubin).function("axpb")
    launch = backend.prepare(fn, ((n + 255) // 256,), (256,),
                             [Arg("ptr:y"), Arg("ptr:x"), Arg("f32", 2.5), Arg("f32", -1.0),
                              Arg("i32", n)])
    launch.set("y", yb.ptr)
    launch.set("x", xb.ptr)
    launch()
    y = np.empty_like(x)
    backend.synchronize()
    backend.copy_out(y, yb)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, 2.5 * x - 1.0, rtol=1e-6, atol=1e-6)
    times = backend.time_ms(launch, repeats=5)
    assert len(times) == 5 and all(0 < t < 100 for t in times)
    xb.free()
    yb.free()


def test_missing_symbol_is_backend_error_with_driver_words(backend, cubin) -> None:
    mod = backend.load(cubin)
    with pytest.raises(BackendError, match="CUDA_ERROR_NOT_FOUND"):
        mod.function("no_such_kernel")


def test_foreign_code_object_is_refused(backend) -> None:
    other = 80 if backend.target.sm != 80 else 90
    blob = nvrtc_cubin(SRC, f"sm_{other}")
    with pytest.raises(CodeObjectError, match=f"sm_{other}"):
        backend.load(blob)


def test_torch_tensor_zero_copy(backend, cubin, rng) -> None:
    torch = pytest.importorskip("torch")
    n = 4096
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    y = torch.full((n,), float("nan"), device="cuda")
    tx, ty = as_device(x, backend), as_device(y, backend)
    assert not tx.copied and tx.ptr == x.data_ptr() and ty.ptr == y.data_ptr()
    fn = backend.load(cubin).function("axpb")
    torch.cuda.synchronize()
    backend.launch(fn, (n // 256,), (256,), [Arg("ptr:y", ty.ptr), Arg("ptr:x", tx.ptr),
                                           Arg("f32", 1.0), Arg("f32", 3.0), Arg("i32", n)])
    backend.synchronize()
    assert torch.allclose(y, x + 3.0)


def test_cupy_dlpack_zero_copy(backend) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(16, dtype=torch.float16, device="cuda")

    class OnlyDlpack:
        def __dlpack__(self, **kw):  # noqa: ANN001, ANN204
            return t.__dlpack__(**kw)

        def __dlpack_device__(self):  # noqa: ANN204
            return t.__dlpack_device__()

    dt = as_device(OnlyDlpack(), backend)
    assert dt.ptr == t.data_ptr() and dt.type_name == "FP16" and dt.nbytes == 32


def test_target_matches_a_known_form(backend) -> None:
    assert Target.parse(backend.target.name) == backend.target


def test_time_ms_times_the_kernel_not_the_host_gap(backend, cubin) -> None:
    """Launches queued behind the spin kernel: a 100 us spin times as 100 us, and a kernel of
    one block times far below the host's per-launch cost, which timing single launches between
    two events cannot go under."""
    import time

    times = backend.time_ms(lambda: backend._spin_for(100e-6), repeats=5)
    assert all(0.095 < t < 0.13 for t in times), times
    buf = backend.alloc(4 * 256)
    fn = backend.load(cubin).function("axpb")
    launch = backend.prepare(fn, (1,), (256,), [Arg("ptr:y"), Arg("ptr:x"), Arg("f32", 1.0),
                                                Arg("f32", 0.0), Arg("i32", 256)])
    launch.set("y", buf.ptr)
    launch.set("x", buf.ptr)
    t0 = time.perf_counter()
    for _ in range(200):
        launch()
    backend.synchronize()
    host_us = (time.perf_counter() - t0) / 200 * 1e6
    tiny = sorted(backend.time_ms(launch, repeats=21))[10] * 1e3
    assert tiny < 4.0 and tiny < host_us, (tiny, host_us)
    buf.free()
