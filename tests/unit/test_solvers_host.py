"""Every kernel run on the CPU (kernels/mk_host.h) against the numpy references.

The kernel text is compiled as C++ with -DMK_HOST=1 and the job's own -D options, launched
with the registry's Launch (grid, block, argument list), and its output compared with
solvers/reference.py. This checks each kernel's indexing, layouts, directions, types and
barriers, and that `launch()` describes the kernel's arguments correctly, without a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from miopenkernels.pooling import PoolProblem
from miopenkernels.primitives import (
    ActivationProblem,
    BatchNormProblem,
    BiasProblem,
    SoftmaxProblem,
    TensorShape,
    get_primitive,
)
from miopenkernels.primitives.pooling import pool_tensors
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, CompileJob, Launch, get_solver
from miopenkernels.solvers import reference as ref
from miopenkernels.target import Target

pytestmark = pytest.mark.integration

CXX = shutil.which("clang++-19") or shutil.which("clang++")
if CXX is None:  # pragma: no cover
    pytest.skip("no clang++ to build host emulations", allow_module_level=True)

TARGET = Target("gfx90a", 104)  # has BF16; the target does not change the kernel text
# The host emulation compiles the portable HIP C++ kernels; Triton's are checked on a GPU.
HOST_SOLVERS = [s for s in SOLVERS if s.language == "hip"]


# ----------------------------------------------------------------------------- harness
class HostBuilds:
    """Builds and caches host libraries of compile jobs (in parallel where asked).

    Each library is the kernel file compiled with -DMK_HOST=1 and the job's options, plus an
    entry `mk_host_entry(void** args)` that calls the kernel with arguments of the kinds the
    registry's Launch lists, so the Launch description itself is under test.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.libs: dict[CompileJob, ctypes.CDLL] = {}

    def _compile(self, job: CompileJob, launch: Launch) -> Path:
        kinds = tuple("p" if a.is_pointer else a.kind for a in launch.args)
        key = f"{job.kernel_file} {job.options} {kinds}"
        out = self.folder / f"{hashlib.sha1(key.encode()).hexdigest()[:16]}.so"
        if out.exists():
            return out
        cast = {"p": "*(void**)a[{i}]", "i32": "*(int*)a[{i}]", "f32": "*(float*)a[{i}]"}
        call = ", ".join(cast[k].format(i=i) for i, k in enumerate(kinds))
        wrapper = self.folder / (out.stem + ".cpp")
        wrapper.write_text(
            f'#include "{job.source_path}"\n'
            f'extern "C" void mk_host_entry(void** a) {{ {launch.kernel_name}({call}); }}\n'
            'extern "C" void mk_host_run(void** a, int gx, int gy, int gz, int bx) {\n'
            '  mk_host_launch(mk_host_entry, a, gx, gy, gz, bx);\n}\n'
        )
        cmd = [CXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-DMK_HOST=1", *job.options,
               str(wrapper), "-o", str(out)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
        return out

    def prebuild(self, items: list[tuple[CompileJob, Launch]]) -> None:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda jl: self._compile(*jl), items))

    def lib(self, job: CompileJob, launch: Launch) -> ctypes.CDLL:
        if job not in self.libs:
            self.libs[job] = ctypes.CDLL(str(self._compile(job, launch)))
        return self.libs[job]


def run_launch(lib: ctypes.CDLL, launch: Launch, tensors: dict[str, np.ndarray]) -> None:
    """Marshal `launch.args` from `tensors` by name and run every block on the CPU."""
    assert launch.block[1] == launch.block[2] == 1, "host launcher handles 1D blocks"
    holders: list[object] = []
    for arg in launch.args:
        if arg.is_pointer:
            holders.append(ctypes.c_void_p(tensors[arg.tensor].ctypes.data))
        elif arg.kind == "i32":
            holders.append(ctypes.c_int(int(arg.value or 0)))
        else:
            holders.append(ctypes.c_float(float(arg.value or 0.0)))
    argv = (ctypes.c_void_p * len(holders))(
        *(ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders)  # type: ignore
    )
    lib.mk_host_run.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 4
    lib.mk_host_run(argv, *launch.grid, launch.block[0])


def to_device(arr: np.ndarray, data_type: str) -> np.ndarray:
    """float64 values (already representable) -> the kernel's storage array."""
    if data_type == "FP32":
        return np.ascontiguousarray(arr, dtype=np.float32)
    if data_type == "FP16":
        return np.ascontiguousarray(arr, dtype=np.float16)
    bits = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32)
    return (bits >> 16).astype(np.uint16)


def from_device(arr: np.ndarray, data_type: str) -> np.ndarray:
    if data_type == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> HostBuilds:
    return HostBuilds(tmp_path_factory.mktemp("host"))


# ----------------------------------------------------------------------------- conv
CONV_PROBLEMS = [
    # plain 3x3, padding: every solver including Winograd
    dict(n=2, c=5, k=6, in_spatial=(6, 7), filter=(3, 3), pad=(1, 1)),
    # channel-last, groups, stride, dilation, asymmetric everything
    dict(n=2, c=4, k=6, in_spatial=(7, 6), filter=(3, 2), pad=(1, 0), stride=(2, 1),
         dilation=(1, 2), groups=2, in_layout="NHWC"),
    # 1x1 with stride 2 (Conv1x1Gemm), NHWC
    dict(n=2, c=6, k=5, in_spatial=(5, 6), filter=(1, 1), stride=(2, 2), in_layout="NHWC"),
    # depthwise 3x3 with padding 2 (Winograd backward needs pad <= 2)
    dict(n=1, c=4, k=4, in_spatial=(5, 5), filter=(3, 3), pad=(2, 2), groups=4),
    # 3D
    dict(n=1, c=3, k=4, in_spatial=(4, 5, 5), filter=(3, 3, 2), pad=(1, 1, 0),
         stride=(1, 2, 1)),
    # transposed, stride 2, output padding
    dict(n=1, c=4, k=3, in_spatial=(4, 3), filter=(3, 3), pad=(1, 1), stride=(2, 2),
         mode="trans", trans_output_pad=(1, 1)),
    # more channels than one Winograd chunk and one GEMM tile along M and R
    dict(n=1, c=40, k=70, in_spatial=(4, 4), filter=(3, 3), pad=(1, 1)),
]


def _cases() -> list[tuple[str, ConvProblem]]:
    cases = []
    for i, kwargs in enumerate(CONV_PROBLEMS):
        for direction in "FBW":
            problem = ConvProblem(direction=direction, **kwargs)  # type: ignore[arg-type]
            for solver in HOST_SOLVERS:
                # The last problem exists for the tiled solvers; direct backward weights would
                # emulate 25200 blocks of 256 fibers for nothing new.
                if kwargs is CONV_PROBLEMS[-1] and solver.name == "ConvDirectWrw":
                    continue
                if solver.is_applicable(problem, TARGET):
                    cases.append((f"p{i}-{direction}-{solver.name}", problem))
    return cases


CASES = _cases()


def _check_conv(builds: HostBuilds, solver_name: str, problem: ConvProblem, params=None,
                specialised: bool = False) -> None:
    solver = get_solver(solver_name)
    params = params if params is not None else solver.default_params(problem, TARGET)
    job = solver.compile_job(problem, params, TARGET, specialised)
    launch = solver.launch(problem, params, specialised)
    dtype = problem.in_type
    inputs = ref.conv_inputs(problem, np.random.default_rng(7))
    expect = ref.conv_reference(problem, inputs)
    out_name = ref.conv_output_name(problem)
    tensors = {name: to_device(a, dtype) for name, a in inputs.items()}
    # NaN-filled output: an element the kernel forgets to write fails the comparison.
    tensors[out_name] = to_device(np.full(expect.shape, np.nan), dtype)
    run_launch(builds.lib(job, launch), launch, tensors)
    got = from_device(tensors[out_name], dtype)
    terms = max(1, int(np.prod(problem.wei_shape[1:])) * problem.n)
    np.testing.assert_allclose(got, expect, rtol=0, atol=ref.tolerance(dtype, terms) * 4,
                               err_msg=f"{solver_name} {problem.key()}")


def test_every_case_exercises_every_solver():
    names = {name.split("-", 2)[2] for name, _ in CASES}
    assert names == {s.name for s in HOST_SOLVERS}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_conv_solver_matches_reference(builds: HostBuilds, case):
    name, problem = case
    solver_name = name.split("-", 2)[2]
    if len(builds.libs) == 0:  # build every case's binary at once, in parallel
        jobs = []
        for cname, prob in CASES:
            s = get_solver(cname.split("-", 2)[2])
            params = s.default_params(prob, TARGET)
            jobs.append((s.compile_job(prob, params, TARGET), s.launch(prob, params)))
        builds.prebuild(jobs)
    _check_conv(builds, solver_name, problem)


@pytest.mark.parametrize("data_type", ["FP16", "BF16"])
@pytest.mark.parametrize("solver_name", ["ConvImplicitGemmFwd", "ConvDirectWrw",
                                         "ConvWinograd3x3Bwd", "Conv1x1GemmBwd"])
def test_conv_low_precision_types(builds: HostBuilds, solver_name, data_type):
    direction = get_solver(solver_name).direction
    filt = (1, 1) if "1x1" in solver_name else (3, 3)
    pad = (0, 0) if "1x1" in solver_name else (1, 1)
    problem = ConvProblem(n=2, c=8, k=6, in_spatial=(5, 6), filter=filt, pad=pad,
                          direction=direction, in_type=data_type, in_layout="NHWC")
    _check_conv(builds, solver_name, problem)


@pytest.mark.parametrize("params", [(16, 32, 4, 1, 2), (128, 16, 16, 8, 1), (32, 64, 8, 2, 8)])
def test_igemm_tunable_tiles(builds: HostBuilds, params):
    problem = ConvProblem(n=2, c=6, k=70, in_spatial=(5, 5), filter=(3, 3), pad=(1, 1),
                          stride=(2, 2), direction="W")
    solver = get_solver("ConvImplicitGemmWrw")
    assert params in solver.param_space(problem, TARGET)
    _check_conv(builds, "ConvImplicitGemmWrw", problem, params)


@pytest.mark.parametrize("solver_name", ["ConvDirectBwd", "ConvImplicitGemmFwd",
                                         "ConvWinograd3x3Fwd"])
def test_specialised_kernels_match(builds: HostBuilds, solver_name):
    direction = get_solver(solver_name).direction
    problem = ConvProblem(n=1, c=3, k=4, in_spatial=(6, 5), filter=(3, 3), pad=(1, 1),
                          direction=direction, in_layout="NHWC")
    _check_conv(builds, solver_name, problem, specialised=True)


# ----------------------------------------------------------------------------- primitives
PRIM_TYPES = ["FP32", "FP16", "BF16"]


def _prim_run(builds, prim_name, problem, data_type, tensors):
    prim = get_primitive(prim_name)
    assert prim.is_applicable(problem, TARGET)
    job = prim.compile_job(problem, TARGET)
    launch = prim.launch(problem)
    run_launch(builds.lib(job, launch), launch, tensors)


@pytest.mark.parametrize("data_type", PRIM_TYPES)
@pytest.mark.parametrize("mode,alpha", [("relu", 0.0), ("leaky_relu", 0.1),
                                        ("clipped_relu", 0.5), ("tanh", 0.0),
                                        ("sigmoid", 0.0)])
def test_activation(builds, mode, alpha, data_type):
    t = TensorShape(2, 3, (40, 7), "NCHW", data_type)
    x = ref.quantize(np.random.default_rng(8).uniform(-6, 6, t.shape), data_type)
    tensors = {"x": to_device(x, data_type), "y": to_device(np.full(t.shape, np.nan),
                                                             data_type)}
    _prim_run(builds, "Activation", ActivationProblem(t, mode, alpha), data_type, tensors)
    expect = ref.quantize(ref.activation(x, mode, alpha), data_type)
    np.testing.assert_allclose(from_device(tensors["y"], data_type), expect,
                               atol=ref.tolerance(data_type, 1) * 8)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("data_type", PRIM_TYPES)
def test_bias_batchnorm_softmax(builds, layout, data_type):
    t = TensorShape(2, 5, (3, 4), layout, data_type)
    rng = np.random.default_rng(9)
    x = ref.quantize(rng.uniform(-3, 3, t.shape), data_type)
    xm = to_device(ref.to_layout(x, layout), data_type)

    def out() -> np.ndarray:
        return to_device(np.full(xm.shape, np.nan), data_type)

    def logical(arr: np.ndarray) -> np.ndarray:
        return ref.from_layout(from_device(arr, data_type), layout)

    tol = ref.tolerance(data_type, 1) * 8
    bias = ref.quantize(rng.uniform(-1, 1, t.c), data_type)
    tensors = {"x": xm, "bias": to_device(bias, data_type), "y": out()}
    _prim_run(builds, "BiasAdd", BiasProblem(t), data_type, tensors)
    np.testing.assert_allclose(logical(tensors["y"]), ref.bias_add(x, bias), atol=tol * 4)

    stats = {k: rng.uniform(0.5, 2.0, t.c).astype(np.float32)
             for k in ("scale", "bias", "mean", "var")}
    tensors = {"x": xm, "y": out(), **stats}
    _prim_run(builds, "BatchNormInference", BatchNormProblem(t, 1e-3), data_type, tensors)
    expect = ref.batchnorm_inference(x, stats["scale"], stats["bias"], stats["mean"],
                                     stats["var"], 1e-3)
    np.testing.assert_allclose(logical(tensors["y"]), expect, atol=tol * 8)

    for log in (False, True):
        tensors = {"x": xm, "y": out()}
        _prim_run(builds, "Softmax", SoftmaxProblem(t, log), data_type, tensors)
        np.testing.assert_allclose(logical(tensors["y"]), ref.softmax(x, log), atol=tol * 8)


@pytest.mark.parametrize("mode", ["max", "avg", "avg_in"])
@pytest.mark.parametrize("layout,spatial,window,pad,stride", [
    ("NCHW", (7, 6), (3, 3), (1, 1), (2, 2)),
    ("NHWC", (6, 6), (2, 3), (0, 1), (2, 1)),
    ("NCDHW", (4, 5, 5), (2, 3, 3), (0, 1, 1), (2, 2, 1)),
])
def test_pooling(builds, mode, layout, spatial, window, pad, stride):
    data_type = "FP16" if layout == "NHWC" else "FP32"
    p = PoolProblem(n=2, c=3, in_spatial=spatial, window=window, pad=pad, stride=stride,
                    mode=mode, layout=layout, data_type=data_type)
    xs, ys = pool_tensors(p)
    x = ref.quantize(np.random.default_rng(10).uniform(-2, 2, xs.shape), data_type)
    tensors = {"x": to_device(ref.to_layout(x, xs.layout), data_type),
               "y": to_device(np.full(ref.to_layout(np.zeros(ys.shape), ys.layout).shape,
                                      np.nan), data_type)}
    _prim_run(builds, "Pooling", p, data_type, tensors)
    got = ref.from_layout(from_device(tensors["y"], data_type), ys.layout)
    expect = ref.pooling(x, window, pad, stride, mode)
    np.testing.assert_allclose(got, expect, atol=ref.tolerance(data_type, 1) * 8)
