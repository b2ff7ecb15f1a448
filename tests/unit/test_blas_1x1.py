"""The GEMM-library 1x1 solvers without a GPU: the call `gemm_call` works out, run on numpy
with cuBLAS's column-major semantics, against the float64 reference convolution in every
direction, layout, mode and dimension it takes; what it refuses; the call's arguments as an
invoker and a plan pass them to the library; where the runtime offers the solvers."""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from blas_doubles import _Backend, _Blas, emulate
from miopenkernels.backends import cublas
from miopenkernels.plan import Plan, make_invoker
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import BLAS_SOLVERS, SOLVERS, all_dynamic_jobs, blas_1x1, library_solvers
from miopenkernels.solvers.blas_1x1 import ConvBlasGemm1x1, gemm_call
from miopenkernels.solvers.reference import (
    conv_inputs,
    conv_output_name,
    conv_reference,
    conv_tensor_shapes,
)
from miopenkernels.target import Target

SM90 = Target("sm90", 132)


def _problem(direction: str, layout: str, mode: str = "conv", dims: int = 2, **kw: Any
             ) -> ConvProblem:
    lay = layout if dims == 2 else layout.replace("HW", "DHW")
    args: dict[str, Any] = dict(n=3, c=6, k=10, in_spatial=(5, 7) if dims == 2 else (3, 4, 5),
                                filter=(1,) * dims, direction=direction, in_layout=lay,
                                wei_layout=lay, out_layout=lay, mode=mode)
    args.update(kw)
    return ConvProblem(**args)


CASES = list(itertools.product("FBW", ("NCHW", "NHWC"), ("conv", "trans"), (2, 3)))


@pytest.mark.parametrize(("direction", "layout", "mode", "dims"), CASES)
def test_the_call_computes_the_convolution(direction: str, layout: str, mode: str,
                                           dims: int) -> None:
    p = _problem(direction, layout, mode, dims)
    call = gemm_call(p)
    if direction == "W" and layout == "NCHW":  # the images' products would need a sum
        assert call is None
        return
    assert call is not None
    assert call.batch == (1 if layout == "NHWC" else p.n)
    _check_call(p, call, seed=7)


def _check_call(p: ConvProblem, call: Any, seed: int) -> None:
    """`call` run on numpy writes every element of the problem's output, as the float64
    reference convolution has it."""
    tensors = conv_inputs(p, np.random.default_rng(seed))
    out = conv_output_name(p)
    buffers = {name: np.asarray(t, dtype=np.float64).ravel().copy()
               for name, t in tensors.items()}
    buffers[out] = np.full(int(np.prod(conv_tensor_shapes(p)[out])), np.nan)
    emulate(call, buffers)
    want = conv_reference(p, tensors).ravel()
    assert not np.isnan(buffers[out]).any()  # every element written
    np.testing.assert_allclose(buffers[out], want, rtol=1e-12, atol=1e-12)


def test_mixed_layouts_batch_per_image() -> None:
    """Channels-last x with channel-planar y: one matrix per image, each side its own
    storage."""
    p = ConvProblem(n=2, c=8, k=4, in_spatial=(3, 5), filter=(1, 1), in_layout="NHWC",
                    wei_layout="NCHW", out_layout="NCHW")
    call = gemm_call(p)
    assert call is not None and call.batch == 2
    tensors = conv_inputs(p, np.random.default_rng(3))
    buffers = {name: np.asarray(t, dtype=np.float64).ravel().copy()
               for name, t in tensors.items()}
    buffers["y"] = np.full(2 * 4 * 15, np.nan)
    emulate(call, buffers)
    np.testing.assert_allclose(buffers["y"], conv_reference(p, tensors).ravel(), atol=1e-12)


@pytest.mark.parametrize("change", [
    dict(filter=(3, 3), pad=(1, 1)), dict(stride=(2, 2)), dict(pad=(1, 1)),
    dict(groups=2), dict(filter=(1, 3), pad=(0, 1)),
])
def test_refused_shapes(change: dict[str, Any]) -> None:
    p = _problem("F", "NHWC", **change)
    assert gemm_call(p) is None
    assert not BLAS_SOLVERS[0].is_applicable(p, SM90)


def test_applicability_types_vendors_and_math() -> None:
    fwd, tf32 = ConvBlasGemm1x1("F"), ConvBlasGemm1x1("F", "tf32")
    assert (fwd.name, tf32.name) == ("ConvBlasGemm1x1Fwd", "ConvBlasGemm1x1Tf32Fwd")
    assert fwd.algorithm(_problem("F", "NHWC")) == "miopenConvolutionFwdAlgoGEMM"
    for t in ("FP16", "BF16", "FP32"):
        assert fwd.is_applicable(_problem("F", "NHWC", in_type=t), SM90)
    assert tf32.is_applicable(_problem("F", "NHWC", in_type="FP32"), SM90)
    assert not tf32.is_applicable(_problem("F", "NHWC", in_type="FP16"), SM90)
    assert not fwd.is_applicable(_problem("F", "NHWC", in_type="FP16"), Target("gfx90a", 104))
    assert not fwd.is_applicable(_problem("B", "NHWC"), SM90)  # one direction a solver


def test_the_build_never_sees_them() -> None:
    """No kdb entry, no job: the build's registry does not hold them, and asking one for an
    object is an error, not a half-made job."""
    names = {s.name for s in BLAS_SOLVERS}
    assert len(names) == 6 and not names & {s.name for s in SOLVERS}
    assert all(job.kernel_file != "" for job in all_dynamic_jobs(SM90))
    fwd = BLAS_SOLVERS[0]
    assert fwd.dynamic_jobs(SM90) == []
    with pytest.raises(NotImplementedError):
        fwd.compile_job(_problem("F", "NHWC"), (), SM90)


class _Ctx:
    def __init__(self) -> None:
        self.backend = _Backend()
        self.target = SM90


def test_an_invoker_and_a_plan_pass_the_roles_addresses(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    blas = _Blas()
    monkeypatch.setattr(cublas, "load", lambda: blas)
    p = _problem("W", "NHWC", in_type="FP16")
    solver = next(s for s in BLAS_SOLVERS if s.name == "ConvBlasGemm1x1Wrw")
    ctx = _Ctx()
    inv = make_invoker(ctx, p, solver, params=())
    assert inv.workspace_bytes == 0 and not inv.first and not inv.then
    inv({"x": 0x100, "w": 0x200, "y": 0x300}, stream=77)
    call = gemm_call(p)
    assert call is not None
    address = {"x": 0x100, "dy": 0x300, "dw": 0x200}  # W: x, dy (the layer's y), dw (its w)
    got = blas.gemms[-1]
    assert got[:6] == (0x1234, int(call.transa), int(call.transb), call.m, call.n, call.k)
    assert got[6] == ctypes.addressof(blas.one)
    assert got[7:11] == (address[call.a], 2, call.lda, call.stride_a)  # 2: CUDA_R_16F
    assert got[11:15] == (address[call.b], 2, call.ldb, call.stride_b)
    assert got[15] == ctypes.addressof(blas.zero)
    assert got[16:] == (address[call.c], 2, call.ldc, call.stride_c, call.batch, 68, -1)
    # The stream and the backend's workspace of that stream, each set once.
    assert [name for name, _ in blas.lib.calls] == ["cublasSetStream_v2",
                                                    "cublasSetWorkspace_v2"]
    assert blas.lib.calls[1][1] == (0x1234, 0x7000_0000, cublas.WORKSPACE_BYTES)
    assert ctx.backend.asked == [(77, cublas.WORKSPACE_BYTES, "library")]
    plan = Plan(ctx.backend, p, inv)
    plan._launch((0x500, 0x600, 0x700, 0), 77)
    assert blas.gemms[-1][7] == {"x": 0x500, "dy": 0x700, "dw": 0x600}[call.a]
    assert blas.gemms[-1][16] == 0x600
    assert len(blas.lib.calls) == 2  # same stream, same workspace: nothing set again
    assert ctx.backend.launches == 2


def test_a_capture_without_a_workspace_runs_the_library_without_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from miopenkernels.errors import BackendError

    blas = _Blas()
    backend = _Backend()

    def no_workspace(stream: int, nbytes: int, pool: str = "plans") -> int:
        raise BackendError("inside a capture")

    backend.workspace = no_workspace  # type: ignore[method-assign]
    call = gemm_call(_problem("F", "NHWC", in_type="BF16"))
    assert call is not None
    launch = cublas.GemmLaunch(backend, blas, call.astuple(), "BF16", "ieee")
    launch(5)
    assert blas.lib.calls[-1][1] == (0x1234, None, 0)
    assert blas.gemms[-1][8] == 14  # CUDA_R_16BF


def test_offered_only_on_nvidia_where_the_library_loads(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(blas_1x1, "_offered", [False])
    monkeypatch.setattr(cublas, "load", lambda: _Blas())
    assert library_solvers(_Backend())[:len(BLAS_SOLVERS)] == BLAS_SOLVERS

    class Hip(_Backend):
        name, vendor = "hip", "amd"

    class Null(_Backend):
        name = "null"

    assert library_solvers(Hip()) == [] and library_solvers(Null()) == []
    monkeypatch.setattr(cublas, "load", lambda: None)
    assert library_solvers(_Backend()) == []


def test_the_loader_answers_none_without_cublas(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Any) -> None:
    """A path that is no library, and a library that is not cuBLAS (libc), load nothing."""
    bogus = tmp_path / "libcublas.so.13"
    bogus.write_bytes(b"not an ELF")
    monkeypatch.setattr(cublas, "library_paths", lambda: [str(bogus), "libc.so.6"])
    assert cublas._load() is None


def test_the_wheel_folder_comes_before_the_loader_path(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Any) -> None:
    lib = tmp_path / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcublas.so.13").write_bytes(b"")
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    assert cublas.library_paths()[0] == str(lib / "libcublas.so.13")
    assert cublas.library_paths()[-2:] == ["libcublas.so.13", "libcublas.so.12"]


def test_first_only_for_listed_cases_where_it_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from miopenkernels.solvers import ranks_first
    from miopenkernels.solvers.triton_conv import ConvTritonImplicitGemm

    p = _problem("F", "NHWC", in_type="FP16", n=32, c=256, k=64, in_spatial=(56, 56))
    igemm = ConvTritonImplicitGemm("F", "ieee")
    fwd = BLAS_SOLVERS[0]
    monkeypatch.setattr(blas_1x1, "BLAS_FIRST", {"sm90": {"FP16-F-NHWC": 0, "FP16-B-NCHW": 64}})
    monkeypatch.setattr(blas_1x1, "_offered", [False])
    assert not ranks_first(fwd, p, SM90)  # not offered in this process: no claim
    monkeypatch.setattr(cublas, "load", lambda: _Blas())
    assert library_solvers(_Backend())[:6] == BLAS_SOLVERS  # a CUDA runtime offers them
    assert ranks_first(fwd, p, SM90)
    assert not ranks_first(igemm, p, SM90)  # the implicit GEMM gives way
    assert not ranks_first(fwd, _problem("F", "NCHW", in_type="FP16"), SM90)
    assert not ranks_first(fwd, p, Target("sm80", 108))
    bwd = BLAS_SOLVERS[1]  # from 64 pixels per image: 8x8 claims, 7x7 does not
    assert ranks_first(bwd, _problem("B", "NCHW", in_type="FP16", c=512, k=256,
                                     in_spatial=(8, 8)), SM90)
    assert not ranks_first(bwd, _problem("B", "NCHW", in_type="FP16", c=512, k=256,
                                         in_spatial=(7, 7)), SM90)


def test_below_the_pixels_first_only_over_a_narrow_reduction(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """BLAS_FEW: below BLAS_FIRST's pixels the library claims where its product's reduction
    (dy's channels in backward data) is at most the limit."""
    from miopenkernels.solvers import ranks_first

    monkeypatch.setattr(blas_1x1, "BLAS_FIRST", {"sm90": {"FP16-B-NCHW": 64}})
    monkeypatch.setattr(blas_1x1, "BLAS_FEW", {"sm90": {"FP16-B-NCHW": 192}})
    monkeypatch.setattr(blas_1x1, "_offered", [True])
    bwd = BLAS_SOLVERS[1]

    def claims(c: int, k: int, side: int, in_type: str = "FP16") -> bool:
        p = _problem("B", "NCHW", in_type=in_type, n=32, c=c, k=k, in_spatial=(side, side))
        call = gemm_call(p)
        assert call is not None and call.k == k  # backward data sums over dy's k channels
        return ranks_first(bwd, p, SM90)

    assert claims(960, 160, 7) and claims(512, 192, 7)  # DenseNet's, MobileNet-v3's 1x1 at 7x7
    assert not claims(320, 1280, 7) and not claims(2048, 512, 7)  # MobileNet-v2's last, ResNet
    assert claims(320, 1280, 8)  # from 64 pixels a image, whatever the reduction
    assert not claims(960, 160, 7, in_type="BF16")  # a case the table does not list


def test_the_first_place_table_is_what_the_committed_runs_measured() -> None:
    """BLAS_FIRST is what bench/first_place.py fits from the committed runs (the zoo part's 1x1
    layers; held-out networks' layers are not looked at): the cases where the library ran at
    most 0.8 of the best kernel's time on at least 20 claimed layers, each from the fewest
    pixels per image where claiming pays; every listed case's results were right."""
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    spec = importlib.util.spec_from_file_location("bench_first_place", bench / "first_place.py")
    assert spec is not None and spec.loader is not None
    first_place = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(first_place)
    runs = [first_place.load_run(first_place.RESULTS / r) for r in first_place.RUNS]
    tables = first_place.tables(runs)
    listed = tables["BLAS_FIRST"]
    assert listed == blas_1x1.BLAS_FIRST["sm90"]
    assert listed["FP16-F-NCHW"] == listed["BF16-F-NCHW"] == listed["FP16-B-NCHW"] == 64
    assert len(listed) == 12 and listed["FP32-F-NHWC"] == listed["FP32-B-NHWC"] == 0
    # Below 64 pixels, FP16 NCHW backward data over a reduction of at most 192 channels,
    # fitted against the Via solver (first_place.PICKS).
    assert tables["BLAS_FEW"] == blas_1x1.BLAS_FEW["sm90"] == {"FP16-B-NCHW": 192}
    # FP32 forward NHWC up to a number of multiply-adds: the three-product kernel above it.
    assert tables["BLAS_MOST_MACS"] == blas_1x1.BLAS_MOST_MACS["sm90"]
    assert set(blas_1x1.BLAS_MOST_MACS["sm90"]) == {"FP32-F-NHWC"}
    fits = {c: e for d in runs for c, e in first_place.cases(d).items()}
    assert all(fits[c]["max_rel_err"] < 1e-3 and fits[c]["layers"] > 50 for c in listed)


@pytest.mark.parametrize(("direction", "dims"), list(itertools.product("FBW", (2, 3))))
def test_one_pixel_channel_planes_are_the_channels_last_call(direction: str, dims: int
                                                             ) -> None:
    """A channel-planar problem of one pixel an image (a squeeze-and-excitation layer) is the
    channels-last problem's bytes: one call over every image, backward weights included, and
    it computes the convolution."""
    one = (1,) * dims
    p = _problem(direction, "NCHW", dims=dims, in_spatial=one, n=5)
    twin = _problem(direction, "NHWC", dims=dims, in_spatial=one, n=5)
    call = gemm_call(p)
    assert call is not None and call == gemm_call(twin) and call.batch == 1
    _check_call(p, call, seed=3)
    # Two pixels: channel planes again (backward weights through copies, not one call).
    assert gemm_call(_problem("W", "NCHW", dims=dims, in_spatial=(1,) * (dims - 1) + (2,))) \
        is None


def test_one_pixel_channel_planes_claim_as_channels_last(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Where offered, the library ranks first on them as on the channels-last case; the zoo's
    such layers measured it there (NHWC) against the kernels in NCHW (the comment's figures,
    recomputed from the committed runs)."""
    import json
    import math
    from pathlib import Path

    from miopenkernels.solvers import ranks_first

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    for direction, solver in zip("FBW", BLAS_SOLVERS[:3], strict=True):
        p = _problem(direction, "NCHW", in_type="FP16", wei_type="FP16", out_type="FP16",
                     n=32, c=240, k=64, in_spatial=(1, 1))
        assert solver.is_applicable(p, SM90) and ranks_first(solver, p, SM90), direction
        assert not any(s.is_applicable(p, SM90) for s in library_solvers(_Backend())
                       if "Via" in s.name)
    results = Path(__file__).resolve().parents[2] / "bench" / "results"
    ratios: dict[str, list[float]] = {}
    for run in ("zoo_h200-fb-9ec5af9.json", "zoo_h200-w-9ec5af9.json"):
        for r in json.loads((results / run).read_text())["rows"]:
            f = r["key"].split("-")
            if f[1:3] == ["1", "1"] and f[5:7] == ["1", "1"] and r["case"].startswith("FP16"):
                ratios.setdefault(r["case"], []).append(r["ratio"])

    def geomean(case: str) -> float:
        v = ratios[case]
        return round(math.exp(sum(math.log(x) for x in v) / len(v)), 2)

    assert [geomean(f"FP16-{d}-NHWC") for d in "FBW"] == [0.75, 0.9, 0.82]
    assert [geomean(f"FP16-{d}-NCHW") for d in "FBW"] == [1.03, 1.38, 1.04]


WINDOW_CASES = list(itertools.product("FBW", ("NCHW", "NHWC"), ("conv", "trans"), (2, 3)))


@pytest.mark.parametrize(("direction", "layout", "mode", "dims"), WINDOW_CASES)
def test_a_filter_over_the_whole_input_is_one_call(direction: str, layout: str, mode: str,
                                                   dims: int) -> None:
    """A filter as large as its input without padding (DCGAN's 4x4 latent projection, its
    discriminator's 4x4 head) is one product over the window's C*R*S elements in either
    layout, backward weights of channel planes included, and it computes the convolution."""
    window = (4, 3) if dims == 2 else (2, 3, 2)
    # Transposed: the plain convolution's window is the transposed one's output.
    spatial = (1,) * dims if mode == "trans" else window
    p = _problem(direction, layout, mode, dims, in_spatial=spatial, filter=window, n=5)
    call = gemm_call(p)
    assert call is not None and call.batch == 1
    _check_call(p, call, seed=11)


@pytest.mark.parametrize("change", [
    dict(pad=(1, 1)), dict(in_spatial=(5, 3)), dict(groups=2, c=6, k=10),
    dict(in_layout="NHWC", out_layout="NHWC", wei_layout="NCHW"),
])
def test_a_window_that_is_not_the_whole_input_is_refused(change: dict[str, Any]) -> None:
    """Padding, an input larger than the filter (more than one output pixel), groups, and x
    and the filters holding the window in different orders: no one call."""
    p = _problem("F", "NCHW", **{"in_spatial": (4, 3), "filter": (4, 3), **change})
    assert gemm_call(p) is None


def test_a_window_problem_claims_as_channels_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where offered, DCGAN's 4x4 projection ranks the library first in both layouts: its
    case is the channels-last one (one call over the images)."""
    from miopenkernels.solvers import ranks_first

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    solvers = dict(zip("FBW", BLAS_SOLVERS[:3], strict=True))
    for layout in ("NCHW", "NHWC"):
        for direction in "FBW":
            p = _problem(direction, layout, "trans", in_type="FP16", wei_type="FP16",
                         out_type="FP16", n=32, c=100, k=512, in_spatial=(1, 1),
                         filter=(4, 4))
            solver = solvers[p.key_direction]  # its plain convolution's opposite direction
            assert solver.is_applicable(p, SM90) and ranks_first(solver, p, SM90), \
                (layout, direction)


def test_fp32_tables_are_ieee_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """BLAS_FIRST's FP32 cases were measured in IEEE math (cuBLAS against the three-TF32-product
    kernels): the TF32 library solver does not take them, and under the TF32 math the TF32
    kernels do not give way to it."""
    from miopenkernels.solvers import SOLVERS, ranks_first

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    p = _problem("F", "NHWC", in_type="FP32", n=32, c=256, k=64, in_spatial=(28, 28))
    by_name = {s.name: s for s in (*BLAS_SOLVERS, *SOLVERS)}
    assert "FP32-F-NHWC" in blas_1x1.BLAS_FIRST["sm90"]
    assert ranks_first(by_name["ConvBlasGemm1x1Fwd"], p, SM90)
    assert not ranks_first(by_name["ConvTritonImplicitGemmTf32x3Fwd"], p, SM90)  # gives way
    assert not ranks_first(by_name["ConvBlasGemm1x1Tf32Fwd"], p, SM90)
    assert blas_1x1.blas_first(p, SM90, "tf32") is False
    assert blas_1x1.blas_first(p, SM90, "tf32x3") is True  # FP32-accurate: the IEEE case


def test_fp32_forward_channels_last_up_to_a_product_size(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """BLAS_MOST_MACS: the library keeps FP32 forward NHWC problems of at most that many
    multiply-adds; the three-product kernel (which gives way to it elsewhere) takes the rest."""
    from miopenkernels.solvers import SOLVERS, ranks_first
    from miopenkernels.solvers._conv import macs

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    most = blas_1x1.BLAS_MOST_MACS["sm90"]["FP32-F-NHWC"]
    small = _problem("F", "NHWC", in_type="FP32", n=32, c=64, k=64, in_spatial=(28, 28))
    large = _problem("F", "NHWC", in_type="FP32", n=32, c=1024, k=1024, in_spatial=(14, 14))
    assert macs(small) <= most < macs(large)
    lib = BLAS_SOLVERS[0]
    tf32x3 = next(s for s in SOLVERS if s.name == "ConvTritonImplicitGemmTf32x3Fwd")
    assert ranks_first(lib, small, SM90) and not ranks_first(tf32x3, small, SM90)
    assert not ranks_first(lib, large, SM90)
    # A product of few filters keeps the library past the cap (3D U-Net's 64 -> 3 output).
    narrow = ConvProblem(n=8, c=64, k=3, in_spatial=(128, 128, 128), filter=(1, 1, 1),
                         in_type="FP32", in_layout="NDHWC", wei_layout="NDHWC",
                         out_layout="NDHWC")
    assert macs(narrow) > most and ranks_first(lib, narrow, SM90)
    assert not ranks_first(lib, replace(narrow, k=9), SM90)
    assert blas_1x1.blas_first(replace(large, in_type="FP16", wei_type="FP16",
                                       out_type="FP16"), SM90)  # a 16-bit case: no limit


def test_fp32_backward_weights_channels_last_on_the_estimate(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """BLAS_FIRST_ESTIMATED: FP32 backward weights in one call (channels-last, or one pixel
    an image in either layout) rank the library first, ahead of both the three-product and the
    IEEE implicit GEMM (triton_ieee_first's problems included); channel-planar problems of
    more pixels, other arches and the TF32 math are untouched; a measured BLAS_FIRST entry
    comes before it."""
    from miopenkernels.solvers import SOLVERS, ranks_first
    from miopenkernels.solvers.triton_ieee_first import ieee_first

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    assert "FP32-W-NHWC" not in blas_1x1.BLAS_FIRST["sm90"]  # no run timed it
    by_name = {s.name: s for s in (*BLAS_SOLVERS, *SOLVERS)}
    lib = by_name["ConvBlasGemm1x1Wrw"]
    densenet = _problem("W", "NHWC", in_type="FP32", wei_type="FP32", out_type="FP32", n=32,
                        c=128, k=32 * 4, in_spatial=(28, 28))
    se = _problem("W", "NCHW", in_type="FP32", wei_type="FP32", out_type="FP32", n=32, c=672,
                  k=168, in_spatial=(1, 1))
    for p in (densenet, se):
        assert ranks_first(lib, p, SM90), p.key()
        for kernel in ("ConvTritonImplicitGemmTf32x3Wrw", "ConvTritonImplicitGemmWrw"):
            assert not ranks_first(by_name[kernel], p, SM90), (kernel, p.key())
    wide = _problem("W", "NHWC", in_type="FP32", wei_type="FP32", out_type="FP32", n=32,
                    c=2048, k=512, in_spatial=(65, 65))
    assert ieee_first(wide, SM90) and ranks_first(lib, wide, SM90)
    assert not ranks_first(by_name["ConvTritonImplicitGemmWrw"], wide, SM90)
    planar = replace(densenet, in_layout="NCHW", wei_layout="NCHW", out_layout="NCHW")
    assert not ranks_first(lib, planar, SM90)
    assert not ranks_first(lib, densenet, Target("sm80", 108))  # another arch: not listed
    assert blas_1x1.blas_first(densenet, SM90, "tf32") is False
    monkeypatch.setattr(blas_1x1, "BLAS_FIRST", {"sm90": {"FP32-W-NHWC": 10**6}})
    assert not ranks_first(lib, densenet, SM90)  # the measured table speaks first


def test_narrow_fp32_pointwise_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    """NARROW_POINTWISE: where offered, the library leaves the IEEE forward and backward data
    of 1x1 FP32 layers of at most 4 channels a side (the SD VAE's post_quant_conv) to the
    FP32-unit kernels, which rank first in both layouts, and claims those of 5-8 channels
    (its quant_conv) in both layouts; wider layers, the TF32 math, backward weights and other
    arches keep the library's usual claims."""
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import KN2ROW_BLAS_SOLVERS, VIA_BLAS_SOLVERS

    monkeypatch.setattr(blas_1x1, "_offered", [True])
    handle = Handle(target="sm90-132", solvers=[*SOLVERS, *BLAS_SOLVERS, *VIA_BLAS_SOLVERS,
                                                *KN2ROW_BLAS_SOLVERS])
    for layout in ("NCHW", "NHWC"):
        for n in (32, 8, 1):
            post = _problem("F", layout, n=n, c=4, k=4, in_spatial=(64, 64), in_type="FP32")
            quant = replace(post, c=8, k=8)
            for direction, first in (("F", "ConvTritonFmaFwd"), ("B", "ConvTritonFmaBwd")):
                p, q = replace(post, direction=direction), replace(quant, direction=direction)
                assert blas_1x1.narrow_pointwise(p, SM90)
                assert not blas_1x1.blas_first(p, SM90), p.key()
                assert handle.solutions(p)[0].solver == first, p.key()
                assert blas_1x1.narrow_pointwise(q, SM90, library=True)
                assert not blas_1x1.narrow_pointwise(q, SM90)
                assert handle.solutions(q)[0].solver.startswith("ConvBlasGemm1x1"), q.key()
                for r in (p, q):
                    assert blas_1x1.blas_first(r, SM90, "tf32") == (
                        blas_1x1._case(r, "tf32") in blas_1x1.BLAS_FIRST["sm90"])
            for r in (post, quant):
                assert not blas_1x1.narrow_pointwise(replace(r, direction="W"), SM90, True)
                assert not blas_1x1.narrow_pointwise(r, Target("sm80", 108), True)
                assert not blas_1x1.narrow_pointwise(r, Target("sm80", 108))
            wide = replace(quant, c=9)
            assert not blas_1x1.narrow_pointwise(wide, SM90, library=True)
            assert blas_1x1.blas_first(wide, SM90) == (layout == "NHWC")  # BLAS_FIRST's
