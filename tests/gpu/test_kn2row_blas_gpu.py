"""kn2row's library form (solvers/triton_kn2row.py: ConvBlasKn2Row{,Tf32}{Fwd,Bwd}) on the GPU:
the filters' lead-in, one call of the GEMM library into the workspace's Z and the tap sum, in
both layouts, at strides, paddings and dilations, against a float64 reference on the same
tensors; through a plan inside a CUDA graph; and immediate mode's first choice where it
claims."""

from __future__ import annotations

import pytest
from miopenkernels.problem import ConvProblem

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the GPU tests are skipped without one
    pytest.skip("torch has no CUDA here", allow_module_level=True)

from miopenkernels.backends.cublas import load  # noqa: E402

if load() is None:  # pragma: no cover
    pytest.skip("no cuBLAS here", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402, N812

TOLERANCE = {"ieee": 1e-5, "tf32": 3e-3}
#: (direction, n, C, K, size, filter, pad, stride, dilation): 1-8 output channels from many.
LAYERS = [
    ("F", 3, 32, 3, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("F", 2, 40, 8, (19, 16), (5, 5), (2, 2), (2, 2), (1, 1)),
    ("F", 2, 24, 1, (15, 15), (3, 3), (2, 2), (1, 1), (2, 2)),
    ("B", 3, 3, 48, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1)),
    ("B", 2, 4, 32, (30, 26), (7, 7), (3, 3), (2, 2), (1, 1)),
    ("B", 2, 8, 16, (21, 20), (3, 3), (2, 2), (2, 2), (2, 2)),
]


def _problem(direction: str, n: int, c: int, k: int, size: tuple, filt: tuple, pad: tuple,
             stride: tuple, dilation: tuple, layout: str) -> ConvProblem:
    return ConvProblem(n=n, c=c, k=k, in_spatial=size, filter=filt, pad=pad, stride=stride,
                       dilation=dilation, direction=direction, in_type="FP32",
                       in_layout=layout, wei_layout=layout, out_layout=layout)


def _memory(t: torch.Tensor, layout: str) -> torch.Tensor:
    return t.permute(0, 2, 3, 1).contiguous() if layout == "NHWC" else t.contiguous()


def _logical(t: torch.Tensor, layout: str) -> torch.Tensor:
    return t.permute(0, 3, 1, 2) if layout == "NHWC" else t


def _tensors(p: ConvProblem) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device="cuda").manual_seed(3)
    return tuple(torch.randn(shape, device="cuda", generator=gen)
                 for shape in ((p.n, p.c, *p.in_spatial), (p.k, p.c, *p.filter),
                               (p.n, p.k, *p.out_spatial)))


def _want(p: ConvProblem, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    args = {"stride": p.stride, "padding": p.pad, "dilation": p.dilation}
    if p.direction == "F":
        return F.conv2d(x.double(), w.double(), **args)
    return torch.nn.grad.conv2d_input(x.shape, w.double(), y.double(), **args)


@pytest.mark.parametrize("math", ["ieee", "tf32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: "-".join(map(str, c[:4])))
def test_matches_float64(handle, layer: tuple, layout: str, math: str) -> None:  # noqa: ANN001
    from miopenkernels.config import MathMode

    handle.math_mode = MathMode.TF32 if math == "tf32" else MathMode.IEEE
    p = _problem(*layer, layout=layout)
    name = f"ConvBlasKn2Row{'Tf32' if math == 'tf32' else ''}{dict(F='Fwd', B='Bwd')[layer[0]]}"
    assert name in [s.name for s in handle.applicable_solvers(p)]
    x, w, y = _tensors(p)
    want = _want(p, x, w, y)
    mem = {"x": _memory(x, layout), "w": _memory(w, layout), "y": _memory(y, layout)}
    out = "y" if p.direction == "F" else "x"
    mem[out] = torch.full_like(mem[out], float("nan"))
    handle.run(p, name, mem["x"], mem["w"], mem["y"])
    torch.cuda.synchronize()
    got = _logical(mem[out], layout).double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < TOLERANCE[math], err


def test_a_plan_in_a_cuda_graph(handle) -> None:  # noqa: ANN001
    """The lead-in, the call (its scratch the library's pool) and the tap sum captured and
    replayed, the workspace the plan's."""
    p = _problem(*LAYERS[3], layout="NCHW")
    x, w, y = _tensors(p)
    want = _want(p, x, w, y).float()
    plan = handle.plan(p, "ConvBlasKn2RowBwd")
    assert plan.workspace_bytes > 0
    dx = torch.full_like(x, float("nan"))
    plan(dx, w, y)  # once outside the capture (the library's handle made), as torch asks
    torch.cuda.synchronize()
    torch.testing.assert_close(dx, want, rtol=1e-5, atol=1e-4)
    dx.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan(dx, w, y)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(dx, want, rtol=1e-5, atol=1e-4)


def test_immediate_mode_takes_it_where_it_claims(handle) -> None:  # noqa: ANN001
    """A latent input's backward data at stride 1 (the UNet's conv_in) comes to the library
    form first; a channel-planar stem at stride 2 does not (blas_kn2row_first)."""
    from miopenkernels.config import MathMode

    handle.math_mode = MathMode.IEEE
    latent = ConvProblem(n=8, c=4, k=320, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                         direction="B", in_type="FP32")
    stem = ConvProblem(n=8, c=3, k=32, in_spatial=(224, 224), filter=(3, 3), pad=(1, 1),
                       stride=(2, 2), direction="B", in_type="FP32")
    assert handle.solutions(latent)[0].solver == "ConvBlasKn2RowBwd"
    assert handle.solutions(stem)[0].solver != "ConvBlasKn2RowBwd"
