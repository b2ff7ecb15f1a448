"""The Triton convolution kernels, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1),
against torch in float64: every kernel, both layouts, stride, padding, dilation, groups and
split-K on problems small enough for the interpreter. Needs torch (and numpy < 2, which the
interpreter's scalar handling assumes); skipped where either is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
pytest.importorskip("triton")
if int(np.__version__.split(".")[0]) >= 2:
    pytest.skip("Triton 3.6's interpreter needs numpy < 2", allow_module_level=True)

# direction, C, H, K, R, stride, pad, dilation, groups, SPLIT_K
CASES = [
    ("F", 16, 8, 16, 3, 1, 1, 1, 2, 2),
    ("F", 16, 7, 16, 1, 1, 0, 1, 1, 3),
    ("F", 3, 9, 16, 3, 2, 1, 1, 1, 1),
    ("F", 16, 9, 16, 3, 1, 2, 2, 2, 1),
    ("B", 16, 8, 16, 3, 1, 1, 1, 2, 1),
    ("B", 16, 8, 32, 1, 2, 0, 1, 1, 1),
    ("B", 16, 9, 16, 3, 2, 1, 1, 1, 2),
    ("B", 16, 8, 16, 3, 1, 1, 1, 2, 3),
    ("B", 3, 9, 16, 3, 2, 1, 1, 1, 1),
    ("W", 16, 8, 16, 3, 1, 1, 1, 2, 2),
    ("W", 16, 8, 32, 1, 2, 0, 1, 1, 1),
    ("W", 3, 9, 16, 3, 2, 1, 1, 1, 2),
]

SCRIPT = textwrap.dedent('''
    import json, sys
    import torch, torch.nn.functional as F
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct

    d, c, h, k, r, st, pad, dil, g, split, layout = json.loads(sys.argv[1])
    n = 2
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, c * g, h, h, generator=gen)
    w = torch.randn(k * g, c, r, r, generator=gen) / (c * r * r) ** 0.5
    y64 = F.conv2d(x.double(), w.double(), None, st, pad, dil, g)
    p = y64.shape[2]
    dy = torch.randn(n, k * g, p, p, generator=gen)
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    x, w, dy = (t.contiguous(memory_format=fmt) for t in (x, w, dy))
    sizes = dict(N=n, C=c, H=h, W=h, K=k, P=p, Q=p, R=r, S=r, G=g, stride_h=st, stride_w=st,
                 pad_h=pad, pad_w=pad, dil_h=dil, dil_w=dil)
    grads = torch.ops.aten.convolution_backward(
        dy.double(), x.double(), w.double(), None, [st, st], [pad, pad], [dil, dil], False,
        [0, 0], g, [True, True, False])
    kernel = ct.kernel_for(d, sizes)
    if d == "F":
        out = torch.full_like(dy, float("nan")); tx, tw, ty, ref = x, w, out, y64
    elif d == "B":
        out = torch.full_like(x, float("nan")); tx, tw, ty, ref = out, w, dy, grads[0]
    else:
        out = torch.full_like(w, float("nan")); tx, tw, ty, ref = x, out, dy, grads[1]
    cfg = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=8, SPLIT_K=split)
    args = ct.conv_args(sizes, {"x": tx.stride(), "w": tw.stride(), "y": ty.stride()})
    ws = torch.zeros(max(ct.workspace_bytes(kernel, sizes, cfg) // 4, 1))
    _, cx = ct.triton_signature(kernel, "FP32", cfg, layout == "NHWC")
    fn = ct.JIT[kernel]
    fn[ct.grid(kernel, sizes, cfg)](**launch_arguments(
        fn, {"x_ptr": tx, "w_ptr": tw, "y_ptr": ty, "ws_ptr": ws, **args, **cx}))
    if split > 1:
        ra = dict(ct.reduce_args(kernel, args, layout == "NHWC"), SPLIT_K=split)
        ct.JIT["conv2d_bwd_weight_reduce"][(ct.cdiv(ra["TOTAL"], ct.REDUCE_BLOCK), 1, 1)](
            ws, out, *(ra[a] for a, kind in ct.REDUCE_ARGS if kind == "i32"),
            BLOCK=ct.REDUCE_BLOCK)
    print(float((out.double() - ref).norm() / ref.norm()))
''')


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_interpreted_kernels_match_float64(case: tuple, layout: str) -> None:
    import json

    env = dict(os.environ, TRITON_INTERPRET="1")
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([*case, layout])],
                         capture_output=True, text=True, env=env, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert float(run.stdout.strip().splitlines()[-1]) < 1e-5
