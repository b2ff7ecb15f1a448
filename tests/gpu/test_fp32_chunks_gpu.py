"""ESRGAN's output layer (64 -> 3, 3x3 at 2048x2048) in FP32 at batch 8, on the GPU: x and dx
hold 2**31 elements or more. Its forward comes to kn2row's library form (the library reads x
with 64-bit offsets; Z and y stay within 32 bits), its backward data to the few-channel
forward's chunk solver (ConvTritonFmaChunksBwd), each immediate mode's first choice at IEEE
accuracy, against float64 on the first and last images (the last one's offsets past 2**31)."""

from __future__ import annotations

import pytest
from miopenkernels.problem import ConvProblem

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the GPU tests are skipped without one
    pytest.skip("torch has no CUDA here", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402, N812

N, C, K, SIZE = 8, 64, 3, 2048


def _problem(direction: str, layout: str) -> ConvProblem:
    return ConvProblem(n=N, c=C, k=K, in_spatial=(SIZE, SIZE), filter=(3, 3), pad=(1, 1),
                       direction=direction, in_type="FP32", in_layout=layout,
                       wei_layout=layout, out_layout=layout)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(("direction", "solver"), [("F", "ConvBlasKn2RowFwd"),
                                                   ("B", "ConvTritonFmaChunksBwd")])
def test_the_first_choice_matches_float64(handle, direction: str, solver: str,  # noqa: ANN001
                                          layout: str) -> None:
    from miopenkernels.backends.cublas import load
    from miopenkernels.config import MathMode

    if direction == "F" and load() is None:  # pragma: no cover
        pytest.skip("no cuBLAS here")
    handle.math_mode = MathMode.IEEE
    p = _problem(direction, layout)
    assert handle.solutions(p)[0].solver == solver
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    gen = torch.Generator(device="cuda").manual_seed(5)
    w = torch.randn((K, C, 3, 3), device="cuda", generator=gen) / 8
    x = torch.randn((N, C, SIZE, SIZE), device="cuda", generator=gen)
    y = torch.randn((N, K, SIZE, SIZE), device="cuda", generator=gen)
    if direction == "F":
        y.fill_(float("nan"))
    else:
        x.fill_(float("nan"))
    x, w, y = (t.contiguous(memory_format=fmt) for t in (x, w, y))

    def stored(t: torch.Tensor) -> torch.Tensor:
        return t.permute(0, 2, 3, 1) if layout == "NHWC" else t

    handle.run(p, solver, stored(x), stored(w), stored(y))
    torch.cuda.synchronize()
    for image in (0, N - 1):
        if direction == "F":
            got = y[image:image + 1]
            want = F.conv2d(x[image:image + 1].double(), w.double(), padding=1)
        else:
            got = x[image:image + 1]
            want = torch.nn.grad.conv2d_input((1, C, SIZE, SIZE), w.double(),
                                              y[image:image + 1].double(), padding=1)
        assert torch.isfinite(got).all(), image
        err = float((got.double() - want).norm() / want.norm())
        assert err < 1e-5, (image, err)
    out = y if direction == "F" else x
    assert torch.isfinite(out).all()  # every image written
