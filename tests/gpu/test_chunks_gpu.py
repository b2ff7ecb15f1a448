"""Layers too large for 32-bit offsets, on the GPU: the batch-chunk solvers against torch (cuDNN)
on the same tensors, every direction, both layouts, FP16, with an aligned and an unaligned
chunking, and the 3-D ones on 3D U-Net's layers at batch 32 and its up-convolution
(bench/gpu_chunks.sh runs this with the objects compiled on first use)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA device here (a CPU build, or no GPU)",
                allow_module_level=True)

from miopenkernels.handle import Handle  # noqa: E402
from miopenkernels.problem import ConvProblem  # noqa: E402
from miopenkernels.solvers.triton_chunks import chunking  # noqa: E402

# (n, c, k, size): y holds 2**31 elements (aligned chunks of 16 images); 33 images of 1023x1023
# with 63 filters, whose chunks' offsets cannot all be 256-byte multiples; ESRGAN's 64-channel
# layer at 1024x1024, which in NCHW the Via solvers' chunk solvers take (through NHWC copies).
LAYERS = [(32, 8, 64, 1024), (33, 8, 63, 1023), (32, 64, 64, 1024)]


@pytest.fixture(scope="module")
def handle() -> Handle:
    return Handle()


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_past_32_bit_offsets_matches_torch(handle: Handle, direction: str, layout: str,
                                                   layer: tuple[int, int, int, int]) -> None:
    import torch.nn.functional as F

    n, c, k, size = layer
    p = ConvProblem(n=n, c=c, k=k, in_spatial=(size, size), filter=(3, 3), pad=(1, 1),
                    direction=direction, in_type="FP16", in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    assert chunking(p) is not None
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn((n, c, size, size), device="cuda", generator=gen, dtype=torch.float16)
    w = torch.randn((k, c, 3, 3), device="cuda", generator=gen, dtype=torch.float16) / 8
    dy = torch.randn((n, k, size, size), device="cuda", generator=gen, dtype=torch.float16)
    x, w, dy = (t.contiguous(memory_format=fmt) for t in (x, w, dy))
    solution = handle.solutions(p)[0]
    via = layout == "NCHW" and c == 64
    assert solution.solver.startswith("ConvTritonImplicitGemmViaNhwcChunks" if via else
                                      "ConvTritonImplicitGemmChunks")

    def stored(t: torch.Tensor) -> torch.Tensor:
        """The tensor in memory order (N, H, W, C for NHWC), as the runtime checks it."""
        return t.permute(0, 2, 3, 1) if layout == "NHWC" else t

    if direction == "F":
        ours = torch.full_like(dy, float("nan"))
        handle.run(p, solution, stored(x), stored(w), stored(ours))
        want = F.conv2d(x, w, padding=1)
    elif direction == "B":
        ours = torch.full_like(x, float("nan"))
        handle.run(p, solution, stored(ours), stored(w), stored(dy))
        want = torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)
    else:
        ours = torch.full_like(w, float("nan"))
        handle.run(p, solution, stored(x), stored(ours), stored(dy))
        want = torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)
    torch.cuda.synchronize()
    assert torch.isfinite(ours).all()
    err = float((ours.float() - want.float()).norm() / want.float().norm())
    assert err < 1e-2, err


# 3-D (n, c, k, size, mode): 3D U-Net's 1 -> 32 channels at 128^3 (y: 2**31 elements) and
# 384 -> 128 at 64^3 (x: 3.2e9) at batch 32, with the generic and the aligned channels-last
# objects in NDHWC; its 2x2x2/2 up-convolution 128 -> 128 channels, 64^3 -> 128^3 (y: 2**31
# elements at batch 8), through the plain convolution's opposite direction.
LAYERS_3D = [(32, 1, 32, 128, "conv"), (32, 384, 128, 64, "conv"), (8, 128, 128, 64, "trans")]


@pytest.mark.parametrize("relaid", [False, True], ids=["plain", "relaid"])
@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("layer", LAYERS_3D)
def test_a_3d_layer_past_32_bit_offsets_matches_torch(handle: Handle, direction: str,
                                                      layout: str,
                                                      layer: tuple[int, int, int, int, str],
                                                      relaid: bool) -> None:
    """The plain chunk solvers (ConvTriton3dChunks*), and those over the relaid solvers
    (NCDHW through NDHWC, the 1-channel input padded in NDHWC) where they take the layer."""
    import torch.nn.functional as F

    n, c, k, size, mode = layer
    trans = mode == "trans"
    f, stride, pad = (2, 2, 0) if trans else (3, 1, 1)
    p = ConvProblem(n=n, c=c, k=k, in_spatial=(size,) * 3, filter=(f,) * 3, pad=(pad,) * 3,
                    stride=(stride,) * 3, direction=direction, in_type="FP16",
                    in_layout=layout, wei_layout=layout, out_layout=layout, mode=mode)
    assert chunking(p) is not None
    out = size * stride if trans else size
    fmt = torch.channels_last_3d if layout == "NDHWC" else torch.contiguous_format
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn((n, c, size, size, size), device="cuda", generator=gen, dtype=torch.float16)
    w = torch.randn(p.wei_shape, device="cuda", generator=gen, dtype=torch.float16) / 8
    dy = torch.randn((n, k, out, out, out), device="cuda", generator=gen, dtype=torch.float16)
    family = ("ConvTriton3dViaNdhwcChunks" if layout == "NCDHW" else "ConvTriton3dPaddedChunks") \
        if relaid else "ConvTriton3dChunks"
    solutions = [s for s in handle.solutions(p) if s.solver.startswith(family)]
    if relaid and not solutions:
        assert layout == "NDHWC" and c % 16 == 0 == k % 16  # nothing to pad
        pytest.skip("the relaid chunk solvers do not take it (its channels need no padding)")
    solution, = solutions
    x, w, dy = (t.contiguous(memory_format=fmt) for t in (x, w, dy))

    def stored(t: torch.Tensor) -> torch.Tensor:
        """The tensor in memory order (N, D, H, W, C for NDHWC), as the runtime checks it."""
        return t.permute(0, 2, 3, 4, 1) if layout == "NDHWC" else t

    if direction == "F":
        ours = torch.full_like(dy, float("nan"))
        handle.run(p, solution, stored(x), stored(w), stored(ours))
        want = F.conv_transpose3d(x, w, stride=2) if trans else F.conv3d(x, w, padding=1)
    elif direction == "B":
        ours = torch.full_like(x, float("nan"))
        handle.run(p, solution, stored(ours), stored(w), stored(dy))
        want = F.conv3d(dy, w, stride=2) if trans else \
            torch.nn.grad.conv3d_input(x.shape, w, dy, padding=1)
    else:
        ours = torch.full_like(w, float("nan"))
        handle.run(p, solution, stored(x), stored(ours), stored(dy))
        want = torch.nn.grad.conv3d_weight(dy, w.shape, x, stride=2) if trans else \
            torch.nn.grad.conv3d_weight(x, w.shape, dy, padding=1)
    torch.cuda.synchronize()
    del x, dy
    assert torch.isfinite(ours).all()
    err = float((ours.float() - want.float()).norm() / want.float().norm())
    assert err < 1e-2, err
