"""Smoke check of the CUDA backend: compile a kernel with NVRTC, load it, launch, time it."""

from __future__ import annotations

import json
import time

import numpy as np

t0 = time.perf_counter()
from miopenkernels.backends.base import Arg  # noqa: E402
from miopenkernels.backends.cuda import CudaBackend  # noqa: E402

SRC = b'extern "C" __global__ void copy(float* y, const float* x, int n) {' \
      b' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }'


def main() -> None:
    from cuda.bindings import nvrtc

    be = CudaBackend(0)
    t_init = time.perf_counter() - t0
    err, prog = nvrtc.nvrtcCreateProgram(SRC, b"c.cu", 0, [], [])
    t = time.perf_counter()
    nvrtc.nvrtcCompileProgram(prog, 1, [f"-arch=sm_{be.target.sm}".encode()])
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(size)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    t_compile = time.perf_counter() - t
    t = time.perf_counter()
    fn = be.load(bytes(cubin)).function("copy")
    t_load = time.perf_counter() - t
    n = 64 << 20
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    xb, yb = be.alloc(x.nbytes), be.alloc(x.nbytes)
    be.copy_in(xb, x)
    launch = be.prepare(fn, (n // 256,), (256,), [Arg("ptr:y", yb.ptr), Arg("ptr:x", xb.ptr),
                                                  Arg("i32", n)])
    for _ in range(3):
        launch()
    ms = sorted(be.time_ms(launch, 20))[10]
    y = np.empty_like(x)
    be.copy_out(y, yb)
    t = time.perf_counter()
    for _ in range(1000):
        launch()
    be.synchronize()
    per_launch_us = (time.perf_counter() - t) * 1e3
    out = {
        "device": be.device_name, "target": be.target.name, "driver": be.driver_version,
        "init_s": t_init, "nvrtc_compile_s": t_compile, "load_s": t_load,
        "copy_256MiB_ms": ms, "copy_GBps": 2 * x.nbytes / ms / 1e6,
        "host_us_per_launch_1000": per_launch_us, "correct": bool(np.array_equal(x, y)),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
