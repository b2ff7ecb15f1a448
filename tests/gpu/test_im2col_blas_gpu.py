"""The im2col solvers (solvers/blas_im2col.py: ConvBlasIm2col{,Tf32}{Fwd,Bwd,Wrw}) on the GPU: the
gathered side's column matrix written into the workspace, then one call of the GEMM library
writing the layer's output, 2-D and 3-D, both layouts, at strides, paddings and dilations, against a
float64 reference on the same tensors (16-bit forward too); and through a plan inside a CUDA
graph."""

from __future__ import annotations

import pytest
from miopenkernels.problem import ConvProblem

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the GPU tests are skipped without one
    pytest.skip("torch has no CUDA here", allow_module_level=True)

from miopenkernels.backends.cublas import load  # noqa: E402

if load() is None:  # pragma: no cover
    pytest.skip("no cuBLAS here", allow_module_level=True)

TOLERANCE = {"ieee": 1e-5, "tf32": 3e-3, "FP16": 2e-3, "BF16": 1.6e-2}
#: (n, C, K, size, filter, pad, stride, dilation): few input channels, few filters, then
#: plain layers (x gathered).
LAYERS = [
    (3, 3, 32, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 3, 48, (30, 26), (6, 6), (2, 2), (2, 2), (1, 1)),
    (2, 4, 24, (16, 16), (4, 4), (0, 0), (4, 4), (1, 1)),
    (2, 3, 16, (19, 16), (3, 3), (2, 2), (1, 1), (2, 2)),
    (3, 40, 4, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 32, 3, (21, 20), (5, 5), (2, 2), (2, 2), (1, 1)),
    (3, 48, 48, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 64, 24, (21, 20), (3, 3), (2, 1), (1, 1), (2, 1)),
    (2, 24, 40, (21, 20), (3, 3), (1, 1), (2, 2), (1, 1)),
]


def _problem(n: int, c: int, k: int, size: tuple, filt: tuple, pad: tuple, stride: tuple,
             dilation: tuple, direction: str = "W", data_type: str = "FP32",
             layout: str = "NHWC") -> ConvProblem:
    return ConvProblem(n=n, c=c, k=k, in_spatial=size, filter=filt, pad=pad, stride=stride,
                       dilation=dilation, direction=direction, in_type=data_type,
                       in_layout=layout, wei_layout=layout, out_layout=layout)


def _last(t: torch.Tensor) -> torch.Tensor:
    return t.permute(0, 2, 3, 1).contiguous()


def _tensors(p: ConvProblem) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device="cuda").manual_seed(3)
    return tuple(torch.randn(shape, device="cuda", generator=gen)
                 for shape in ((p.n, p.c, *p.in_spatial), (p.k, p.c, *p.filter),
                               (p.n, p.k, *p.out_spatial)))


def _want(p: ConvProblem, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.nn.grad.conv2d_weight(x.double(), w.shape, y.double(), stride=p.stride,
                                       padding=p.pad, dilation=p.dilation)


@pytest.mark.parametrize("math", ["ieee", "tf32"])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda c: "-".join(map(str, c[:3])))
def test_matches_float64(handle, layer: tuple, math: str) -> None:  # noqa: ANN001
    from miopenkernels.config import MathMode

    handle.math_mode = MathMode.TF32 if math == "tf32" else MathMode.IEEE
    p = _problem(*layer)
    name = f"ConvBlasIm2col{'Tf32' if math == 'tf32' else ''}Wrw"
    assert name in [s.name for s in handle.applicable_solvers(p)]
    x, w, y = _tensors(p)
    want = _want(p, x, w, y)
    dw = torch.full_like(_last(w), float("nan"))
    handle.run(p, name, _last(x), dw, _last(y))
    torch.cuda.synchronize()
    got = dw.permute(0, 3, 1, 2).double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < TOLERANCE[math], err


@pytest.mark.parametrize("data_type", ["FP16", "BF16"])
@pytest.mark.parametrize("layer", [LAYERS[0], LAYERS[4], LAYERS[6], LAYERS[7]],
                         ids=lambda c: "-".join(map(str, c[:3])))
def test_sixteen_bit_backward_weights(handle, layer: tuple, data_type: str) -> None:  # noqa: ANN001
    p = _problem(*layer, data_type=data_type)
    assert "ConvBlasIm2colWrw" in [s.name for s in handle.applicable_solvers(p)]
    dtype = {"FP16": torch.float16, "BF16": torch.bfloat16}[data_type]
    x, w, y = (t.to(dtype) for t in _tensors(p))
    want = _want(p, x, w, y)
    dw = torch.full_like(_last(w), float("nan"))
    handle.run(p, "ConvBlasIm2colWrw", _last(x), dw, _last(y))
    torch.cuda.synchronize()
    got = dw.permute(0, 3, 1, 2).double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < TOLERANCE[data_type], err


#: Forward and backward data (unit stride) layers: (direction, (n, C, K, size, filter, pad,
#: stride, dilation)).
DATA = [
    ("F", (3, 32, 48, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1))),
    ("F", (2, 3, 32, (30, 26), (6, 6), (2, 2), (2, 2), (1, 1))),
    ("F", (2, 24, 16, (19, 16), (5, 3), (2, 0), (2, 1), (1, 2))),
    ("B", (3, 32, 48, (17, 23), (3, 3), (1, 1), (1, 1), (1, 1))),
    ("B", (2, 24, 16, (19, 16), (5, 3), (2, 0), (1, 1), (1, 2))),
    ("B", (2, 3, 64, (20, 21), (3, 3), (1, 1), (1, 1), (1, 1))),
]


@pytest.mark.parametrize("data_type", ["FP32", "TF32", "FP16", "BF16"])
@pytest.mark.parametrize("case", DATA, ids=lambda c: c[0] + "-".join(map(str, c[1][:3])))
def test_data_directions_match_float64(handle, case: tuple, data_type: str) -> None:  # noqa: ANN001
    from miopenkernels.config import MathMode

    direction, layer = case
    handle.math_mode = MathMode.TF32 if data_type == "TF32" else MathMode.IEEE
    stored = "FP32" if data_type == "TF32" else data_type
    p = _problem(*layer, direction=direction, data_type=stored)
    name = f"ConvBlasIm2col{'Tf32' if data_type == 'TF32' else ''}" + \
        {"F": "Fwd", "B": "Bwd"}[direction]
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dtype = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[stored]
    x, w, y = (t.to(dtype) for t in _tensors(p))
    if direction == "F":
        want = torch.nn.functional.conv2d(x.double(), w.double(), stride=p.stride,
                                          padding=p.pad, dilation=p.dilation)
        out = torch.full_like(_last(want.to(dtype)), float("nan"))
        handle.run(p, name, _last(x), _last(w), out)
    else:
        want = torch.nn.grad.conv2d_input(x.shape, w.double(), y.double(), stride=p.stride,
                                          padding=p.pad, dilation=p.dilation)
        out = torch.full_like(_last(x), float("nan"))
        handle.run(p, name, out, _last(w), _last(y))
    torch.cuda.synchronize()
    got = out.permute(0, 3, 1, 2).double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    tolerance = TOLERANCE["tf32" if data_type == "TF32" else
                          "ieee" if data_type == "FP32" else data_type]
    assert err < tolerance, err


#: Channel planes (a call per image; backward weights' FP32 products summed after):
#: (direction, layer).
PLANAR = [("F", DATA[0][1]), ("F", DATA[2][1]), ("B", DATA[4][1]), ("W", LAYERS[0]),
          ("W", LAYERS[4]), ("W", LAYERS[6]), ("W", LAYERS[8])]


@pytest.mark.parametrize("data_type", ["FP32", "FP16", "BF16"])
@pytest.mark.parametrize("case", PLANAR, ids=lambda c: c[0] + "-".join(map(str, c[1][:3])))
def test_channel_planes_match_float64(handle, case: tuple, data_type: str) -> None:  # noqa: ANN001
    from miopenkernels.config import MathMode

    direction, layer = case
    handle.math_mode = MathMode.IEEE
    p = _problem(*layer, direction=direction, data_type=data_type, layout="NCHW")
    name = "ConvBlasIm2col" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dtype = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[data_type]
    x, w, y = (t.to(dtype) for t in _tensors(p))
    geometry = dict(stride=p.stride, padding=p.pad, dilation=p.dilation)
    if direction == "F":
        want = torch.nn.functional.conv2d(x.double(), w.double(), **geometry)
        out = torch.full_like(y, float("nan"))
        handle.run(p, name, x, w, out)
    elif direction == "B":
        want = torch.nn.grad.conv2d_input(x.shape, w.double(), y.double(), **geometry)
        out = torch.full_like(x, float("nan"))
        handle.run(p, name, out, w, y)
    else:
        want = torch.nn.grad.conv2d_weight(x.double(), w.shape, y.double(), **geometry)
        out = torch.full_like(w, float("nan"))
        handle.run(p, name, x, out, y)
    torch.cuda.synchronize()
    got = out.double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < TOLERANCE["ieee" if data_type == "FP32" else data_type], err


def test_a_plan_in_a_cuda_graph(handle) -> None:  # noqa: ANN001
    """The gather and the call (its scratch the library's pool) captured and replayed, the
    workspace the plan's."""
    p = _problem(*LAYERS[1])
    x, w, y = _tensors(p)
    want = _want(p, x, w, y).float().permute(0, 2, 3, 1)
    plan = handle.plan(p, "ConvBlasIm2colWrw")
    assert plan.workspace_bytes > 0
    xl, yl = _last(x), _last(y)
    dw = torch.full_like(_last(w), float("nan"))
    plan(xl, dw, yl)
    torch.cuda.synchronize()
    torch.testing.assert_close(dw, want, rtol=1e-5, atol=1e-4)
    dw.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan(xl, dw, yl)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(dw, want, rtol=1e-5, atol=1e-4)


#: 3-D layers, both layouts: (direction, (n, C, K, size, filter, pad, stride, dilation)): a
#: video stem, a spatial and a temporal layer of a (2+1)-D network, a full 3x3x3 filter.
LAYERS_3D = [
    ("F", (2, 3, 32, (6, 20, 18), (3, 7, 7), (1, 3, 3), (1, 2, 2), (1, 1, 1))),
    ("F", (2, 24, 40, (6, 12, 10), (3, 1, 1), (1, 0, 0), (2, 1, 1), (1, 1, 1))),
    ("B", (2, 32, 48, (5, 12, 10), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))),
    ("B", (2, 16, 24, (5, 12, 10), (1, 3, 3), (0, 1, 1), (1, 1, 1), (1, 1, 1))),
    ("W", (2, 3, 32, (6, 20, 18), (3, 7, 7), (1, 3, 3), (1, 2, 2), (1, 1, 1))),
    ("W", (2, 32, 48, (5, 12, 10), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))),
    ("W", (2, 40, 4, (5, 12, 10), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1))),
]


def _last3(t: torch.Tensor) -> torch.Tensor:
    return t.permute(0, 2, 3, 4, 1).contiguous()


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("data_type", ["FP32", "FP16"])
@pytest.mark.parametrize("case", LAYERS_3D, ids=lambda c: c[0] + "-".join(map(str, c[1][:3])))
def test_three_d_layers_match_float64(handle, case: tuple, data_type: str,  # noqa: ANN001
                                      layout: str) -> None:
    from miopenkernels.config import MathMode

    direction, layer = case
    handle.math_mode = MathMode.IEEE
    p = _problem(*layer, direction=direction, data_type=data_type, layout=layout)
    name = "ConvBlasIm2col" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    assert name in [s.name for s in handle.applicable_solvers(p)]
    dtype = {"FP32": torch.float32, "FP16": torch.float16}[data_type]
    x, w, y = (t.to(dtype) for t in _tensors(p))
    geometry = dict(stride=p.stride, padding=p.pad, dilation=p.dilation)
    mine = _last3 if layout == "NDHWC" else (lambda t: t.contiguous())
    if direction == "F":
        want = torch.nn.functional.conv3d(x.double(), w.double(), **geometry)
        out = torch.full_like(mine(want.to(dtype)), float("nan"))
        handle.run(p, name, mine(x), mine(w), out)
    elif direction == "B":
        want = torch.nn.grad.conv3d_input(x.shape, w.double(), y.double(), **geometry)
        out = torch.full_like(mine(x), float("nan"))
        handle.run(p, name, out, mine(w), mine(y))
    else:
        want = torch.nn.grad.conv3d_weight(x.double(), w.shape, y.double(), **geometry)
        out = torch.full_like(mine(w), float("nan"))
        handle.run(p, name, mine(x), out, mine(y))
    torch.cuda.synchronize()
    got = (out.permute(0, 4, 1, 2, 3) if layout == "NDHWC" else out).double()
    assert torch.isfinite(got).all()
    err = float((got - want).norm() / want.norm())
    assert err < TOLERANCE["ieee" if data_type == "FP32" else data_type], err
