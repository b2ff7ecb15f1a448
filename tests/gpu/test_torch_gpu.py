"""miopenkernels.torch on a CUDA GPU: the ops against torch/cuDNN (values and gradients, FP32,
FP16, BF16, channels_last), ResNet-50 and MobileNet-v2 converted with `convert` at batch 1 and
32, a training step, torch.compile with fullgraph, the caller's stream and CUDA graph replay.
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import miopenkernels.torch as mkt  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_routes import Passing, count_eager_runs  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA device here (a CPU build, or no GPU)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
DEV = "cuda"
TYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}
# Largest difference allowed, relative to the reference's largest magnitude.
REL_TOL = {"FP32": 2e-3, "FP16": 2e-2, "BF16": 6e-2}
# Whole models: fifty layers of rounding in either engine's own order.
MODEL_TOL = {"FP32": 5e-3, "FP16": 5e-2}


@pytest.fixture(autouse=True)
def _ieee_fp32() -> Iterator[None]:
    """FP32 in FP32 on both sides (torch's TF32 default would make cuDNN the looser one)."""
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = saved


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_torch_models",
                                                  ROOT / "bench" / "torch_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _close(ours: torch.Tensor, theirs: torch.Tensor, type_name: str,
           tol: dict[str, float] = REL_TOL) -> None:
    assert torch.isfinite(theirs).all() and torch.isfinite(ours).all()
    scale = float(theirs.float().abs().max()) or 1.0
    diff = float((ours.float() - theirs.float()).abs().max())
    assert diff <= tol[type_name] * scale, f"{type_name}: {diff} > {tol[type_name]} x {scale}"


@pytest.mark.parametrize("type_name", list(TYPES))
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_ops_and_their_gradients_match_torch(type_name, channels_last) -> None:  # noqa: ANN001
    dtype = TYPES[type_name]
    torch.manual_seed(0)
    cases = [
        (mkt.conv2d, F.conv2d, (4, 32, 28, 28), (64, 16, 3, 3),
         dict(stride=2, padding=1, groups=2)),
        (mkt.conv2d, F.conv2d, (2, 64, 14, 14), (64, 1, 3, 3), dict(padding=1, groups=64)),
        (mkt.conv2d, F.conv2d, (2, 32, 14, 14), (48, 32, 1, 1), {}),
        (mkt.conv_transpose2d, F.conv_transpose2d, (2, 32, 7, 7), (32, 16, 2, 2),
         dict(stride=2)),
    ]
    for ours_fn, torch_fn, xs, ws, geo in cases:
        x = torch.randn(xs, device=DEV, dtype=dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        w = torch.randn(ws, device=DEV, dtype=dtype) * 0.1
        got = []
        for fn in (ours_fn, torch_fn):
            xx, ww = x.clone().requires_grad_(), w.clone().requires_grad_()
            y = fn(xx, ww, **geo)
            y.backward(torch.ones_like(y))
            got.append((y.detach(), xx.grad, ww.grad))
        for mine, want in zip(got[0], got[1], strict=True):
            _close(mine, want, type_name)
        if channels_last:
            assert got[0][0].is_contiguous(memory_format=torch.channels_last)


def test_conv3d_matches_torch() -> None:
    torch.manual_seed(1)
    x = torch.randn(2, 8, 6, 10, 10, device=DEV).contiguous(memory_format=torch.channels_last_3d)
    w = torch.randn(16, 8, 3, 3, 3, device=DEV) * 0.1
    _close(mkt.conv3d(x, w, padding=1), F.conv3d(x, w, padding=1), "FP32")


def _model(name: str) -> torch.nn.Module:
    bench = _bench()
    return bench.resnet() if name == "resnet50" else bench.mobilenet_v2()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
@pytest.mark.parametrize("type_name", ["FP16", "FP32"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_converted_models_match_torch_at_batch_1_and_32(name, type_name, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(2)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    theirs = _model(name).eval().to(DEV, TYPES[type_name]).to(memory_format=fmt)
    ours = copy.deepcopy(theirs)
    report = mkt.convert(ours)
    assert report.left == [] and len(report.converted) == (53 if name == "resnet50" else 52)
    with torch.no_grad():
        for batch in (1, 32):
            x = torch.randn(batch, 3, 224, 224, device=DEV, dtype=TYPES[type_name])
            x = x.contiguous(memory_format=fmt)
            _close(ours(x), theirs(x), type_name, MODEL_TOL)


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_a_training_step_has_torchs_gradients(name) -> None:  # noqa: ANN001
    torch.manual_seed(3)
    theirs = _model(name).to(DEV).eval()  # frozen statistics: gradients without batch noise
    ours = copy.deepcopy(theirs)
    mkt.convert(ours)
    x = torch.randn(8, 3, 224, 224, device=DEV)
    for net in (ours, theirs):
        net(x).square().mean().backward()
    for (pname, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None, pname
        _close(p.grad, q.grad, "FP32", MODEL_TOL)


def test_torch_compile_has_no_graph_break_and_the_same_output() -> None:
    torch.manual_seed(4)
    model = _model("mobilenet_v2").to(DEV).eval()
    mkt.convert(model)
    x = torch.randn(4, 3, 224, 224, device=DEV)
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        _close(compiled(x), model(x), "FP32")


@pytest.mark.parametrize("type_name", ["FP16", "FP32"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_the_three_routes_give_one_result_bit_for_bit(type_name, channels_last,  # noqa: ANN001
                                                      monkeypatch) -> None:  # noqa: ANN001
    runs = count_eager_runs(monkeypatch)
    torch.manual_seed(7)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    dtype = TYPES[type_name]
    x = torch.randn(2, 64, 28, 28, device=DEV, dtype=dtype).contiguous(memory_format=fmt)
    w = (torch.randn(96, 64, 3, 3, device=DEV, dtype=dtype) * 0.05).contiguous(memory_format=fmt)
    b = torch.randn(96, device=DEV, dtype=dtype)
    with torch.no_grad():
        first = mkt.conv2d(x, w, b, padding=1)  # the full path, remembered
        again = mkt.conv2d(x.clone(), w, b, padding=1)  # the remembered launch
    assert len(runs) == 1
    graded = mkt.conv2d(x, w.clone().requires_grad_(), b, padding=1)  # the autograd route
    with Passing(), torch.no_grad():
        via_op = mkt.conv2d(x, w, b, padding=1)  # the custom op
    assert len(runs) == 1 and graded.grad_fn is not None
    for other in (again, graded.detach(), via_op):
        assert torch.equal(other, first) and other.stride() == first.stride()
    _close(first, F.conv2d(x, w, b, padding=1), type_name)


def test_calls_run_on_the_callers_stream() -> None:
    torch.manual_seed(5)
    x = torch.randn(8, 64, 56, 56, device=DEV)
    w = torch.randn(64, 64, 3, 3, device=DEV) * 0.1
    want = F.conv2d(x, w, padding=1)
    mkt.conv2d(x, w, padding=1)  # the solution found and loaded on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # the side stream busy: a launch elsewhere runs first
        x2 = x * 1.0  # queued on the side stream: our launch must come after it
        y = mkt.conv2d(x2, w, padding=1)
        total = y.sum()
    side.synchronize()
    _close(y, want, "FP32")
    assert torch.isfinite(total)


@pytest.mark.parametrize("type_name", ["FP16", "FP32"])
def test_a_captured_model_replays_bit_identically_to_eager(type_name) -> None:  # noqa: ANN001
    torch.manual_seed(6)
    model = _model("resnet50").eval().to(DEV, TYPES[type_name]).to(
        memory_format=torch.channels_last)
    mkt.convert(model)
    x = torch.randn(2, 3, 224, 224, device=DEV, dtype=TYPES[type_name]).contiguous(
        memory_format=torch.channels_last)
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = model(x)
        eager = model(x).clone()
        static.zero_()
        graph.replay()
        torch.cuda.synchronize()
    assert torch.equal(static, eager)
