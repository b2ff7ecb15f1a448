"""The GEMM-library 1x1 solvers (solvers/blas_1x1.py, and blas_relayout.py's channel-planar
problems through copies) on the GPU: every direction, type and layout they take, plain
and transposed, 2-D and 3-D, against a float64 reference on the same tensors; through a plan,
on a side stream and inside a CUDA graph."""

from __future__ import annotations

import pytest
from miopenkernels.problem import ConvProblem

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the GPU tests are skipped without one
    pytest.skip("torch has no CUDA here", allow_module_level=True)

from miopenkernels.backends.cublas import load  # noqa: E402

if load() is None:  # pragma: no cover
    pytest.skip("no cuBLAS here", allow_module_level=True)

DTYPES = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32,
          "TF32": torch.float32}
TOLERANCE = {"FP16": 2e-3, "BF16": 1.5e-2, "FP32": 1e-5, "TF32": 2e-3}


def _memory(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A logical (N, C, ...) tensor stored in `layout`, as the runtime takes it (memory
    order)."""
    if layout in ("NHWC", "NDHWC"):
        perm = (0, *range(2, t.dim()), 1)
        return t.permute(perm).contiguous()
    return t.contiguous()


def _logical(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout in ("NHWC", "NDHWC"):
        perm = (0, t.dim() - 1, *range(1, t.dim() - 1))
        return t.permute(perm)
    return t


CASES = [(d, t, lay, mode, dims) for d in "FBW" for t in DTYPES
         for lay in ("NCHW", "NHWC") for mode in ("conv", "trans") for dims in (2, 3)]


@pytest.mark.parametrize(("direction", "type_name", "layout", "mode", "dims"), CASES)
def test_matches_float64(handle, direction: str, type_name: str, layout: str,  # noqa: ANN001
                         mode: str, dims: int) -> None:
    _check_case(handle, direction, type_name, layout, mode, dims, False)


@pytest.mark.parametrize(("direction", "type_name", "mode", "dims"),
                         [(d, t, m, n) for d in "FB" for t in DTYPES for m in ("conv", "trans")
                          for n in (2, 3)])
def test_channel_planar_data_through_copies(handle, direction: str,  # noqa: ANN001
                                            type_name: str, mode: str, dims: int) -> None:
    """ConvBlasGemm1x1ViaNhwc{Fwd,Bwd}: NCHW forward and backward data through channels-last
    copies and one call, the output copied back (planes of 117 or 210 pixels)."""
    _check_case(handle, direction, type_name, "NCHW", mode, dims, True)


def _check_case(handle, direction: str, type_name: str, layout: str,  # noqa: ANN001
                mode: str, dims: int, copies: bool) -> None:
    if type_name == "TF32":
        from miopenkernels.config import MathMode

        handle.math_mode = MathMode.TF32
    lay = layout if dims == 2 else layout.replace("HW", "DHW")
    spatial = (9, 13) if dims == 2 else (5, 6, 7)
    stored = "FP32" if type_name == "TF32" else type_name
    p = ConvProblem(n=5, c=24, k=40, in_spatial=spatial, filter=(1,) * dims,
                    direction=direction, in_type=stored, in_layout=lay, wei_layout=lay,
                    out_layout=lay, mode=mode)
    infix = "Tf32" if type_name == "TF32" else ""
    via = "ViaNhwc" if (p.key_direction == "W" or copies) and layout == "NCHW" else ""
    name = f"ConvBlasGemm1x1{infix}{via}{dict(F='Fwd', B='Bwd', W='Wrw')[p.key_direction]}"
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dt = DTYPES[type_name]
    gen = torch.Generator(device="cuda").manual_seed(1)
    x, w, y = (torch.randn(shape, device="cuda", generator=gen).to(dt)
               for shape in (p.in_shape, p.wei_shape, p.out_shape))
    x64, y64 = x.double(), y.double()
    w2 = w.double().flatten(1)  # (K, C) plain; (C, K) transposed
    if mode == "conv":
        want = {"F": lambda: torch.einsum("nc...,kc->nk...", x64, w2),
                "B": lambda: torch.einsum("nk...,kc->nc...", y64, w2),
                "W": lambda: torch.einsum("nk...,nc...->kc", y64, x64)}[direction]()
    else:  # the layer's forward is the plain convolution's backward data, and so on
        want = {"F": lambda: torch.einsum("nc...,ck->nk...", x64, w2),
                "B": lambda: torch.einsum("nk...,ck->nc...", y64, w2),
                "W": lambda: torch.einsum("nk...,nc...->ck", y64, x64)}[direction]()
    _run_checked(handle, p, name, (x, w, y), lay, want, TOLERANCE[type_name])


def _run_checked(handle, p: ConvProblem, name: str, xwy: tuple,  # noqa: ANN001
                 layout: str, want: torch.Tensor, tolerance: float) -> None:
    """Runs `name` on logical x, w, y stored in `layout` (the output poisoned with NaN first)
    and checks the output against the float64 `want`."""
    x, w, y = xwy
    mem = {"x": _memory(x, layout), "w": _memory(w, layout), "y": _memory(y, layout)}
    out = {"F": "y", "B": "x", "W": "w"}[p.direction]
    mem[out] = torch.full_like(mem[out], float("nan"))
    handle.run(p, name, mem["x"], mem["w"], mem["y"])
    torch.cuda.synchronize()
    got = _logical(mem[out], layout).double().reshape(want.shape)
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < tolerance, err


def test_a_plan_on_a_side_stream_and_in_a_cuda_graph(handle) -> None:  # noqa: ANN001
    p = ConvProblem(n=8, c=64, k=96, in_spatial=(14, 14), filter=(1, 1), in_type="FP16",
                    in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    x = torch.randn((8, 14, 14, 64), device="cuda", dtype=torch.float16)
    w = torch.randn((96, 1, 1, 64), device="cuda", dtype=torch.float16) / 8
    y = torch.full((8, 14, 14, 96), float("nan"), device="cuda", dtype=torch.float16)
    plan = handle.plan(p, "ConvBlasGemm1x1Fwd")
    want = (x.reshape(-1, 64).float() @ w.reshape(96, 64).float().t()).reshape(y.shape)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        plan(x, w, y)  # torch's current stream: ordered after the sleep
    torch.cuda.synchronize()
    torch.testing.assert_close(y.float(), want, rtol=2e-3, atol=2e-3)
    y.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan(x, w, y)
    y.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y.float(), want, rtol=2e-3, atol=2e-3)


def test_the_copies_through_a_plan_in_a_cuda_graph(handle) -> None:  # noqa: ANN001
    """Channel-planar backward weights: the transposes into the plan's workspace (torch's
    allocator) and the call, whose scratch is the library's pool, captured and replayed."""
    p = ConvProblem(n=8, c=64, k=96, in_spatial=(14, 14), filter=(1, 1), in_type="FP16",
                    direction="W")
    x = torch.randn((8, 64, 14, 14), device="cuda", dtype=torch.float16)
    dy = torch.randn((8, 96, 14, 14), device="cuda", dtype=torch.float16) / 8
    dw = torch.full((96, 64, 1, 1), float("nan"), device="cuda", dtype=torch.float16)
    plan = handle.plan(p, "ConvBlasGemm1x1ViaNhwcWrw")
    assert plan.workspace_bytes >= (8 * 64 + 8 * 96) * 196 * 2
    want = torch.einsum("nkhw,nchw->kc", dy.float(), x.float()).reshape(dw.shape)
    plan(x, dw, dy)
    torch.cuda.synchronize()
    torch.testing.assert_close(dw.float(), want, rtol=2e-3, atol=2e-2)
    dw.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan(x, dw, dy)
    dw.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(dw.float(), want, rtol=2e-3, atol=2e-2)


def test_find_times_the_library_beside_the_kernels(handle) -> None:  # noqa: ANN001
    p = ConvProblem(n=32, c=256, k=64, in_spatial=(56, 56), filter=(1, 1), in_type="FP16",
                    in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    x = torch.randn((32, 56, 56, 256), device="cuda", dtype=torch.float16)
    w = torch.randn((64, 1, 1, 256), device="cuda", dtype=torch.float16) / 16
    y = torch.empty((32, 56, 56, 64), device="cuda", dtype=torch.float16)
    names = [s.solver for s in handle.find(p, x, w, y)]
    assert "ConvBlasGemm1x1Fwd" in names and len(names) > 1


@pytest.mark.parametrize(("direction", "type_name"),
                         [(d, t) for d in "FBW" for t in ("FP16", "BF16")])
def test_one_pixel_channel_planes_run_one_call(handle, direction: str,  # noqa: ANN001
                                               type_name: str) -> None:
    """A squeeze-and-excitation layer in NCHW (one pixel an image): the direct solver, one
    call over every image (backward weights too), against float64."""
    p = ConvProblem(n=5, c=24, k=40, in_spatial=(1, 1), filter=(1, 1), direction=direction,
                    in_type=type_name)
    name = f"ConvBlasGemm1x1{dict(F='Fwd', B='Bwd', W='Wrw')[direction]}"
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dt = DTYPES[type_name]
    gen = torch.Generator(device="cuda").manual_seed(2)
    x, w, y = (torch.randn(shape, device="cuda", generator=gen).to(dt)
               for shape in (p.in_shape, p.wei_shape, p.out_shape))
    x2, y2, w2 = x.double().flatten(1), y.double().flatten(1), w.double().flatten(1)
    want = {"F": lambda: x2 @ w2.t(), "B": lambda: y2 @ w2, "W": lambda: y2.t() @ x2}[direction]()
    out = {"F": y, "B": x, "W": w}[direction]
    out.fill_(float("nan"))
    handle.run(p, name, x, w, y)
    torch.cuda.synchronize()
    got = out.double().reshape(want.shape)
    assert torch.isfinite(got).all()
    assert float((got - want).norm() / want.norm()) < TOLERANCE[type_name]


@pytest.mark.parametrize(("direction", "type_name", "layout", "mode"),
                         [(d, t, lay, m) for d in "FBW" for t in ("FP16", "BF16", "FP32")
                          for lay in ("NCHW", "NHWC") for m in ("conv", "trans")])
def test_a_filter_over_the_whole_input_runs_one_call(handle, direction: str,  # noqa: ANN001
                                                     type_name: str, layout: str,
                                                     mode: str) -> None:
    """DCGAN's 4x4 projection of its latent (transposed) and its discriminator's 4x4 head:
    one call over the window's C*R*S elements in either layout, against float64."""
    spatial = (1, 1) if mode == "trans" else (4, 4)
    p = ConvProblem(n=6, c=40, k=24, in_spatial=spatial, filter=(4, 4), direction=direction,
                    in_type=type_name, in_layout=layout, wei_layout=layout,
                    out_layout=layout, mode=mode)
    name = f"ConvBlasGemm1x1{dict(F='Fwd', B='Bwd', W='Wrw')[p.key_direction]}"
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dt = DTYPES[type_name]
    gen = torch.Generator(device="cuda").manual_seed(4)
    x, w, y = (torch.randn(shape, device="cuda", generator=gen).to(dt)
               for shape in (p.in_shape, p.wei_shape, p.out_shape))
    x64, w64, y64 = x.double(), w.double(), y.double()
    if mode == "conv":  # x holds the window, y one pixel
        y1 = y64.flatten(1)
        want = {"F": lambda: torch.einsum("nchw,kchw->nk", x64, w64),
                "B": lambda: torch.einsum("nk,kchw->nchw", y1, w64),
                "W": lambda: torch.einsum("nk,nchw->kchw", y1, x64)}[direction]()
    else:  # x one pixel, y the window; w is (C, K, R, S)
        x1 = x64.flatten(1)
        want = {"F": lambda: torch.einsum("nc,ckhw->nkhw", x1, w64),
                "B": lambda: torch.einsum("nkhw,ckhw->nc", y64, w64),
                "W": lambda: torch.einsum("nc,nkhw->ckhw", x1, y64)}[direction]()
    _run_checked(handle, p, name, (x, w, y), layout, want, TOLERANCE[type_name])
