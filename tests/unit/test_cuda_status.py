"""One decoder of cuda-bindings status codes for the backend, detection and NVRTC, and one
warm-up count for timing a kernel."""

from __future__ import annotations

import pytest
from miopenkernels._cuda_status import describe, is_success, unpack
from miopenkernels.errors import BackendError, CompileError, DetectError


def test_nvrtc_and_driver_failures_read_the_same_way() -> None:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    driver = pytest.importorskip("cuda.bindings.driver")
    bad = nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION
    with pytest.raises(CompileError, match="Program failed: NVRTC_ERROR_INVALID_OPTION"):
        unpack(nvrtc, (bad, None), "nvrtcCompileProgram", CompileError)
    assert unpack(nvrtc, (nvrtc.nvrtcResult.NVRTC_SUCCESS, 12, 0), "v", CompileError) == (12, 0)
    err = driver.CUresult.CUDA_ERROR_NOT_FOUND
    assert describe(driver, err).startswith("CUDA_ERROR_NOT_FOUND")
    with pytest.raises(BackendError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        unpack(driver, (err, None), "cuModuleGetFunction", BackendError)
    assert is_success(driver, driver.CUresult.CUDA_SUCCESS)
    assert unpack(driver, (driver.CUresult.CUDA_SUCCESS,), "x", BackendError) is None


def test_detection_names_a_failing_driver_call_through_the_same_decoder(monkeypatch) -> None:
    """Detection's own decoder only asked for the name; now the driver's words follow it."""
    import enum
    from types import SimpleNamespace

    from miopenkernels.detect import nvidia

    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = 1

    drv = SimpleNamespace(
        CUresult=CUresult,
        cuGetErrorName=lambda e: (CUresult.CUDA_SUCCESS, CUresult(e).name.encode()),
        cuGetErrorString=lambda e: (CUresult.CUDA_SUCCESS, b"invalid argument"),
        cuDeviceGetCount=lambda: (CUresult.CUDA_ERROR_INVALID_VALUE, 0),
    )
    with pytest.raises(DetectError, match="cuDeviceGetCount failed: "
                                          "CUDA_ERROR_INVALID_VALUE: invalid argument"):
        nvidia._call(drv, "cuDeviceGetCount")


def test_find_and_tuning_warm_up_the_same_number_of_times(monkeypatch, tmp_path) -> None:
    import numpy as np
    from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.backends.base import WARMUP
    from miopenkernels.find import bind, search_params
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    tun = FakeSolver("Tun", 1.0, tunable=True, space=(1, 2, 4))
    h = Handle(backend=be, compiler=FakeCompiler(), solvers=[tun])
    x = np.zeros(PROBLEM.in_shape, np.float32)
    w = np.zeros(PROBLEM.wei_shape, np.float32)
    y = np.zeros(PROBLEM.out_shape, np.float32)
    bound = bind(h, PROBLEM, x, w, y)
    before = be.launches
    search_params(h, PROBLEM, tun, bound, repeats=3)
    assert be.launches - before == 3 * (WARMUP + 3)
