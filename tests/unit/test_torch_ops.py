"""miopenkernels.torch on the null backend with torch's CPU build: the ops against
torch.nn.functional (values and gradients), opcheck, torch.compile without graph breaks,
autocast, the modules, `convert` on small ResNet- and MobileNet-v2-style models, and the page
docs/torch.md.

The handles run the real runtime (ranking, invokers, launches recorded by the null backend,
which writes the float64 reference into the output) over a compiler and solver double, so no
toolchain is needed; the docs test alone compiles real kernels (hipcc, integration).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import miopenkernels.torch as mkt  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from find_doubles import SM90, FakeCompiler, FakeSolver  # noqa: E402
from miopenkernels import config  # noqa: E402
from miopenkernels.backends import NullBackend  # noqa: E402
from miopenkernels.errors import NoDeviceError, ProblemError  # noqa: E402
from miopenkernels.handle import Handle  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch_routes import Passing, count_eager_runs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FP32_TOL = {"atol": 1e-4, "rtol": 1e-4}
CL = torch.channels_last


def _bench_models() -> Any:
    spec = importlib.util.spec_from_file_location("bench_torch_models",
                                                  ROOT / "bench" / "torch_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _null_handle(mode: config.MathMode = config.MathMode.IEEE) -> Handle:
    return Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
                  solvers=[FakeSolver("Fast", 1.0), FakeSolver("Slow", 2.0)], math_mode=mode)


@pytest.fixture(scope="module")
def handles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Handle]]:
    """IEEE and TF32 null-backend handles serving CPU tensors for the module's tests (kept
    across tests: each problem is ranked once)."""
    root = tmp_path_factory.mktemp("dbs")
    saved = {k: os.environ.get(k) for k in ("MIOPEN_SYSTEM_DB_PATH", "MIOPEN_USER_DB_PATH",
                                            "MIOPEN_CUSTOM_CACHE_DIR")}
    for name in saved:
        (root / name).mkdir()
        os.environ[name] = str(root / name)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine's cores are shared; these tensors are tiny
    made = {"ieee": _null_handle(), "tf32": _null_handle(config.MathMode.TF32)}
    mkt.set_handle(made["ieee"], "cpu", math_mode="ieee")
    mkt.set_handle(made["tf32"], "cpu", math_mode="tf32")
    yield made
    mkt.set_handle(None, "cpu")
    torch.set_num_threads(threads)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _grads(fn: Any, *inputs: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(output, gradients of the inputs) for a fixed upstream gradient."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    upstream = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    out.backward(upstream)
    return out.detach(), [t.grad for t in leaves]  # type: ignore[misc]


# ---------------------------------------------------------------------------- values
CONV2D_CASES = [
    dict(x=(2, 4, 9, 9), w=(6, 4, 3, 3), stride=1, padding=1, dilation=1, groups=1),
    dict(x=(1, 4, 10, 7), w=(8, 2, 3, 2), stride=(2, 1), padding=(1, 0), dilation=1, groups=2),
    dict(x=(2, 6, 11, 11), w=(6, 1, 3, 3), stride=2, padding=2, dilation=2, groups=6),
    dict(x=(3, 5, 6, 6), w=(7, 5, 1, 1), stride=1, padding=0, dilation=1, groups=1),
]


@pytest.mark.parametrize("case", CONV2D_CASES, ids=lambda c: f"x{c['x']}-w{c['w']}")
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_conv2d_matches_torch_and_keeps_the_memory_format(handles, case, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    x = torch.randn(case["x"])
    if channels_last:
        x = x.contiguous(memory_format=CL)
    w, b = torch.randn(case["w"]), torch.randn(case["w"][0])
    geo = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    y = mkt.conv2d(x, w, b, **geo)
    torch.testing.assert_close(y, F.conv2d(x, w, b, **geo), **FP32_TOL)
    assert y.is_contiguous(memory_format=CL if channels_last else torch.contiguous_format)
    layout = "NHWC" if channels_last else "NCHW"
    assert any(p.in_shape == tuple(case["x"]) and p.in_layout == layout == p.out_layout
               for p, _ in handles["tf32"].invokers)


@pytest.mark.parametrize("padding,dilation,filt", [("same", 1, (3, 4)), ("same", 2, (2, 3)),
                                                   ("valid", 1, (3, 3))])
def test_padding_strings_pad_as_torch_does(handles, padding, dilation, filt) -> None:  # noqa: ANN001
    torch.manual_seed(1)
    x, w = torch.randn(2, 3, 8, 9), torch.randn(4, 3, *filt)
    y = mkt.conv2d(x, w, padding=padding, dilation=dilation)
    torch.testing.assert_close(y, F.conv2d(x, w, padding=padding, dilation=dilation),
                               **FP32_TOL)


@pytest.mark.parametrize("channels_last", [False, True], ids=["ncdhw", "channels_last_3d"])
def test_conv3d_matches_torch(handles, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(2)
    x, w, b = torch.randn(2, 4, 5, 6, 5), torch.randn(6, 2, 3, 3, 2), torch.randn(6)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last_3d)
    y = mkt.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2)
    torch.testing.assert_close(y, F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2),
                               **FP32_TOL)
    assert y.is_contiguous(memory_format=torch.channels_last_3d if channels_last
                           else torch.contiguous_format)


@pytest.mark.parametrize("geo", [dict(stride=2, padding=1, output_padding=1, groups=1,
                                      dilation=1),
                                 dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2),
                                      groups=2, dilation=1),
                                 dict(stride=1, padding=2, output_padding=0, groups=1,
                                      dilation=2)])
def test_conv_transpose2d_matches_torch(handles, geo) -> None:  # noqa: ANN001
    torch.manual_seed(3)
    x, w, b = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 3), torch.randn(3 * geo["groups"])
    torch.testing.assert_close(mkt.conv_transpose2d(x, w, b, **geo),
                               F.conv_transpose2d(x, w, b, **geo), **FP32_TOL)


def test_fp16_tensors_compute_an_fp16_problem(handles) -> None:  # noqa: ANN001
    torch.manual_seed(4)
    x, w = torch.randn(2, 8, 6, 6).half(), torch.randn(8, 8, 3, 3).half()
    y = mkt.conv2d(x, w, padding=1)
    assert y.dtype == torch.float16
    want = F.conv2d(x.float(), w.float(), padding=1)
    torch.testing.assert_close(y.float(), want, atol=2e-2, rtol=2e-3)
    assert any(p.in_type == "FP16" for p, _ in handles["ieee"].invokers)


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_conv2d_gradients_match_torch(handles, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(5)
    x, w, b = torch.randn(2, 6, 9, 8), torch.randn(4, 3, 3, 3), torch.randn(4)
    if channels_last:
        x = x.contiguous(memory_format=CL)
    geo = dict(stride=2, padding=1, dilation=1, groups=2)
    out, ours = _grads(lambda a, c, d: mkt.conv2d(a, c, d, **geo), x, w, b)
    ref, theirs = _grads(lambda a, c, d: F.conv2d(a, c, d, **geo), x, w, b)
    torch.testing.assert_close(out, ref, **FP32_TOL)
    for mine, want in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, want, atol=1e-3, rtol=1e-4)
    directions = {p.direction for p, _ in handles["tf32"].invokers if p.n == 2 and p.c == 6}
    assert directions == {"F", "B", "W"}


def test_conv3d_and_transposed_gradients_match_torch(handles) -> None:  # noqa: ANN001
    torch.manual_seed(6)
    x3, w3 = torch.randn(1, 2, 4, 5, 4), torch.randn(3, 2, 2, 3, 2)
    _, ours = _grads(lambda a, c: mkt.conv3d(a, c, padding=1), x3, w3)
    _, theirs = _grads(lambda a, c: F.conv3d(a, c, padding=1), x3, w3)
    for mine, want in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, want, atol=1e-3, rtol=1e-4)
    x, w = torch.randn(2, 4, 5, 5), torch.randn(4, 2, 3, 3)
    geo = dict(stride=2, padding=1, output_padding=1, groups=2)
    _, ours = _grads(lambda a, c: mkt.conv_transpose2d(a, c, **geo), x, w)
    _, theirs = _grads(lambda a, c: F.conv_transpose2d(a, c, **geo), x, w)
    for mine, want in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, want, atol=1e-3, rtol=1e-4)
    trans = {p.direction for p, _ in handles["tf32"].invokers if p.mode == "trans"}
    assert trans == {"F", "B", "W"}


def test_a_frozen_weight_runs_no_backward_weights(handles) -> None:  # noqa: ANN001
    x = torch.randn(1, 3, 7, 7, requires_grad=True)
    w = torch.randn(5, 3, 3, 3)
    mkt.conv2d(x, w).sum().backward()
    ran = {p.direction for p, _ in handles["tf32"].invokers if p.in_spatial == (7, 7)
           and p.k == 5}
    assert ran == {"F", "B"} and x.grad is not None


# ---------------------------------------------------------------------------- torch.library
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_the_ops_pass_opcheck(handles, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(7)
    x = torch.randn(2, 4, 6, 6, requires_grad=True)
    if channels_last:
        x = x.detach().contiguous(memory_format=CL).requires_grad_()
    w = torch.randn(6, 2, 3, 3, requires_grad=True)
    ops = torch.ops.miopenkernels
    geo = ([2, 2], [1, 1], [1, 1], 2, False, [0, 0])
    dy = torch.randn(2, 6, 3, 3)
    cases = [(ops.convolution.default, (x, w, *geo)),
             (ops.convolution_backward_data.default, (dy, w.detach(), [2, 4, 6, 6], *geo,
                                                      channels_last)),
             (ops.convolution_backward_weights.default, (dy, x.detach(), [6, 2, 3, 3], *geo,
                                                         channels_last)),
             (ops.convolution.default, (x, torch.randn(4, 3, 2, 2, requires_grad=True),
                                        [2, 2], [0, 0], [1, 1], 1, True, [1, 1]))]
    for op, args in cases:
        result = torch.library.opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, result


def _dispatched(call: Any) -> tuple[Any, set[str]]:
    """(result of `call`, this package's ops that torch's dispatcher saw)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = call()
    return out, {e.name for e in prof.events() if e.name.startswith("miopenkernels::")}


@pytest.fixture
def eager_runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return count_eager_runs(monkeypatch)


EAGER_CASES = [
    (mkt.conv2d, F.conv2d, (2, 4, 9, 9), (6, 4, 3, 3), dict(stride=2, padding=1), False),
    (mkt.conv2d, F.conv2d, (1, 6, 7, 7), (6, 2, 3, 3), dict(padding=(1, 1), groups=3), True),
    (mkt.conv3d, F.conv3d, (1, 4, 5, 5, 5), (4, 4, 3, 3, 3), dict(padding=1), False),
    (mkt.conv_transpose2d, F.conv_transpose2d, (1, 4, 5, 5), (4, 2, 3, 3),
     dict(stride=2, output_padding=1), True),
]


@pytest.mark.parametrize("ours,theirs,xs,ws,geo,channels_last", EAGER_CASES,
                         ids=["conv2d", "conv2d-groups-cl", "conv3d", "transposed-cl"])
def test_a_repeated_inference_call_skips_the_dispatcher_with_the_same_result(
        handles, eager_runs, ours, theirs, xs, ws, geo, channels_last) -> None:  # noqa: ANN001
    torch.manual_seed(14)
    x, w = torch.randn(xs), torch.randn(ws)
    if channels_last:  # a model moved to channels_last: its weights too (none copied per call)
        x, w = x.contiguous(memory_format=CL), w.contiguous(memory_format=CL)
    w.requires_grad_()
    b = torch.randn(w.shape[1] * geo.get("groups", 1) if ours is mkt.conv_transpose2d
                    else w.shape[0])
    with torch.no_grad():  # grad mode off: the weight's requires_grad does not count
        first, seen_first = _dispatched(lambda: ours(x, w, b, **geo))
        assert not eager_runs  # the first call takes the full path and remembers it
        again, seen_again = _dispatched(lambda: ours(x, w, b, **geo))
    assert len(eager_runs) == 1 and not seen_first and not seen_again
    torch.testing.assert_close(again, first, atol=0, rtol=0)
    assert again.stride() == first.stride() and again.dtype == first.dtype
    torch.testing.assert_close(again, theirs(x, w.detach(), b, **geo), **FP32_TOL)
    # With a gradient to record, autograd alone sees the call (the custom op's formula without
    # the dispatcher, forward and backward): the same values, and the custom op's gradients.
    graded, seen = _dispatched(lambda: _grads(lambda xx, ww: ours(xx, ww, b, **geo), x, w))
    assert not seen and len(eager_runs) == 1
    with Passing():  # a dispatch mode: the calls take the custom ops
        via_op, seen = _dispatched(lambda: _grads(lambda xx, ww: ours(xx, ww, b, **geo), x, w))
    assert seen == {f"miopenkernels::convolution{op}" for op in
                    ("", "_backward_data", "_backward_weights")} and len(eager_runs) == 1
    torch.testing.assert_close(graded[0], first, atol=0, rtol=0)
    torch.testing.assert_close(via_op[0], first, atol=0, rtol=0)
    for ours_grad, op_grad in zip(graded[1], via_op[1], strict=True):
        torch.testing.assert_close(ours_grad, op_grad, atol=0, rtol=0)


def test_a_converted_models_inference_takes_the_remembered_launches(handles,  # noqa: ANN001
                                                                     eager_runs) -> None:  # noqa: ANN001
    torch.manual_seed(17)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False))
    mkt.convert(net)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():  # the weights are Parameters that require grad: grad mode is off
        first = net(x)
        assert not eager_runs
        torch.testing.assert_close(net(x), first, atol=0, rtol=0)
    assert len(eager_runs) == 2  # one per convolution
    _, seen = _dispatched(lambda: net(x).sum().backward())  # training: autograd's formula
    assert not seen and len(eager_runs) == 2 and net[0].weight.grad is not None


def test_calls_that_need_the_dispatcher_take_the_custom_op(handles, eager_runs) -> None:  # noqa: ANN001
    from miopenkernels.torch import _eager
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.autograd import forward_ad

    torch.manual_seed(16)
    x, w = torch.randn(2, 4, 7, 7), torch.randn(8, 4, 3, 3)
    first = mkt.conv2d(x, w, padding=1)
    graded = w.clone().requires_grad_()
    assert _eager.route(x, w) == _eager.DIRECT and _eager.route(x, graded) == _eager.AUTOGRAD

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    for mode in (Ops, Functions):
        for weight in (w, graded):  # a remembered call, and one with a gradient to record
            seen: list[str] = []
            with mode():
                y = mkt.conv2d(x, weight, padding=1)
            torch.testing.assert_close(y.detach(), first, atol=0, rtol=0)
            assert any("convolution" in name for name in seen), (mode, seen)
    with forward_ad.dual_level():
        assert _eager.route(x, w) == _eager.OP
    with torch.no_grad():  # a trace records the op, not a launch it would not replay
        traced = torch.jit.trace(lambda a, b: mkt.conv2d(a, b, padding=1), (x, w),
                                 check_trace=False)
    assert "miopenkernels::convolution" in str(traced.graph)
    torch.testing.assert_close(traced(x, w), first, atol=0, rtol=0)
    batched: list[str] = []

    def per_sample(xb: torch.Tensor) -> torch.Tensor:
        batched.append(_eager.route(xb, w))
        return xb
    torch.func.vmap(per_sample)(x)
    assert batched == [_eager.OP]
    x_cl = x.contiguous(memory_format=CL)
    with FakeTensorMode() as mode:  # the fake implementation: sizes and strides, no launch
        fx, fw = mode.from_tensor(x_cl), mode.from_tensor(w)
        assert _eager.route(fx, fw) == _eager.OP
        y = mkt.conv2d(fx, fw, stride=2)
    assert isinstance(y, FakeTensor) and y.shape == (2, 8, 3, 3)
    assert y.is_contiguous(memory_format=CL)
    assert not eager_runs


@pytest.mark.parametrize("call", [
    lambda x, w: mkt.conv2d(x, w, stride=[1, 1]),  # a list: no key
    lambda x, w: mkt.conv2d(x, w, padding="same"),  # an even filter: F.pad first
    lambda x, w: mkt.conv2d(x[:, :, ::2], w),  # strided: copied into the problem's layout
    lambda x, w: mkt.conv2d(x, w.transpose(2, 3)),
], ids=["list", "padded", "copied-input", "copied-weight"])
def test_calls_that_are_not_taken_as_they_are_are_not_remembered(handles, eager_runs,
                                                                 call) -> None:  # noqa: ANN001
    from miopenkernels.torch import _handles

    x, w = torch.randn(1, 3, 8, 6), torch.randn(4, 3, 2, 2)
    before = len(_handles.fast)
    first = call(x, w)
    torch.testing.assert_close(call(x, w), first, atol=0, rtol=0)
    assert not eager_runs and len(_handles.fast) == before


def test_autocast_and_tf32_changes_are_seen_by_a_remembered_call(handles, eager_runs,  # noqa: ANN001
                                                                  monkeypatch) -> None:  # noqa: ANN001
    x, w = torch.randn(1, 2, 6, 5), torch.randn(3, 2, 1, 1)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    mkt.conv2d(x, w)
    mkt.conv2d(x, w)
    assert len(eager_runs) == 1
    with torch.autocast("cpu", dtype=torch.float16):
        assert mkt.conv2d(x, w).dtype == torch.float16
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    mkt.conv2d(x, w)  # IEEE: another handle, its own first call
    assert len(eager_runs) == 1
    assert any(p.in_spatial == (6, 5) for p, _ in handles["ieee"].invokers)


def _small_net() -> torch.nn.Module:
    return torch.nn.Sequential(
        mkt.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        mkt.Conv2d(8, 8, 3, padding=1, groups=8, padding_mode="reflect"), torch.nn.ReLU(),
        mkt.ConvTranspose2d(8, 4, 2, stride=2), torch.nn.Flatten())


def test_torch_compile_fullgraph_traces_the_ops_without_a_graph_break(handles) -> None:  # noqa: ANN001
    # fullgraph=True raises on any graph break; aot_eager runs the traced forward and
    # backward graphs (inductor's C++ compile takes minutes on the shared CI machine).
    torch.manual_seed(8)
    net = _small_net()
    x = torch.randn(2, 3, 8, 8)
    seen: list[object] = []

    def recording(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> Any:
        seen.extend(node.target for node in gm.graph.nodes)
        from torch._dynamo.backends.debugging import aot_eager

        return aot_eager(gm, inputs)

    with torch.no_grad():  # eager calls remembered for these tensors: the trace takes the op
        net(x)
        net(x)
    torch._dynamo.reset()
    compiled = torch.compile(net, fullgraph=True, backend=recording)
    out, ours = _grads(compiled, x)
    ref, theirs = _grads(net, x)
    torch.testing.assert_close(out, ref, **FP32_TOL)
    torch.testing.assert_close(ours[0], theirs[0], atol=1e-4, rtol=1e-4)
    assert sum(str(t).startswith("miopenkernels.convolution") for t in seen) == 3


@pytest.mark.integration
def test_inductor_compiles_around_the_ops_on_the_cpu(handles) -> None:  # noqa: ANN001
    # Inductor's C++ code for the layers between our ops (a minute on a 2-core machine).
    torch.manual_seed(15)
    net = _small_net()
    x = torch.randn(2, 3, 8, 8).contiguous(memory_format=CL)
    torch._dynamo.reset()
    compiled = torch.compile(net, fullgraph=True, backend="inductor")
    out, ours = _grads(compiled, x)
    ref, theirs = _grads(net, x)
    torch.testing.assert_close(out, ref, **FP32_TOL)
    torch.testing.assert_close(ours[0], theirs[0], atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------------------- types
def test_autocast_casts_to_the_regions_type(handles) -> None:  # noqa: ANN001
    torch.manual_seed(9)
    x, w, b = torch.randn(2, 4, 6, 6), torch.randn(8, 4, 3, 3), torch.randn(8)
    with torch.autocast("cpu", dtype=torch.float16):
        y = mkt.conv2d(x, w, b, padding=1)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float(), F.conv2d(x, w, b, padding=1), atol=3e-2, rtol=3e-3)
    with torch.autocast("cpu", dtype=torch.bfloat16), warnings.catch_warnings():
        # The null backend's reference writes no BF16 output: the problem's type is the point.
        warnings.simplefilter("ignore")
        y = mkt.conv2d(x, w, b, padding=1)
    assert y.dtype == torch.bfloat16
    assert any(p.in_type == "BF16" and p.in_shape == (2, 4, 6, 6)
               for p, _ in handles["ieee"].invokers)


def test_fp32_follows_cudnn_allow_tf32(handles, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert mkt.handle_for("cpu", "FP32") is handles["ieee"]
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert mkt.handle_for("cpu", "FP32") is handles["tf32"]
    assert mkt.handle_for("cpu", "FP16") is handles["ieee"]
    mkt.conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3))
    assert any(p.in_spatial == (5, 5) for p, _ in handles["tf32"].invokers)
    assert not any(p.in_spatial == (5, 5) for p, _ in handles["ieee"].invokers)


def test_one_handle_set_for_a_device_serves_both_math_modes(handles, monkeypatch) -> None:  # noqa: ANN001
    solo = _null_handle()
    mkt.set_handle(solo, "cpu")
    try:
        for allowed in (False, True):
            monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", allowed)
            assert mkt.handle_for("cpu", "FP32") is solo
        torch.testing.assert_close(mkt.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 3, 3)),
                                   torch.full((1, 1, 1, 1), 9.0))
        assert [p.in_spatial for p, _ in solo.invokers] == [(3, 3)]
    finally:
        mkt.set_handle(handles["ieee"], "cpu", math_mode="ieee")
        mkt.set_handle(handles["tf32"], "cpu", math_mode="tf32")
    assert mkt.handle_for("cpu", "FP32") is handles["tf32"]


def test_a_problem_is_ranked_once_and_its_solution_kept(handles, monkeypatch) -> None:  # noqa: ANN001
    calls: list[object] = []
    real = handles["tf32"].solutions

    def counting(problem: object) -> Any:
        calls.append(problem)
        return real(problem)

    monkeypatch.setattr(handles["tf32"], "solutions", counting)
    x, w = torch.randn(1, 3, 11, 4), torch.randn(2, 3, 1, 1)
    first = mkt.conv2d(x, w)
    for _ in range(3):
        torch.testing.assert_close(mkt.conv2d(x, w), first)
    assert len(calls) == 1
    assert mkt.solution_for(handles["tf32"], calls[0]).solver == "Fast"  # type: ignore[arg-type]


class _Backend:
    name = "cuda"


class _Handle:
    """A GPU handle: its solutions run through kept plans."""

    backend = _Backend()

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []


class _Plan:
    workspace_bytes = 64

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def run(self, x, w, y, *, workspace=None, stream=None):  # noqa: ANN001, ANN201
        self.calls.append((x, w, y, workspace, stream))

    def run_checked(self, x, w, y, device, *, workspace=None, stream=None):  # noqa: ANN001, ANN201
        self.calls.append((x, w, y, device, "checked"))


class _PlanHandle(_Handle):
    """A GPU handle with plans and the caller's stream (the runtime's agreed interface)."""

    def __init__(self) -> None:
        super().__init__()
        self.plans: list[_Plan] = []

    def plan(self, problem: object, solution: object) -> _Plan:
        self.plans.append(_Plan())
        return self.plans[-1]

    def run(self, problem, solution, x, w, y, workspace=None, *, stream=None):  # noqa: ANN001, ANN201
        raise AssertionError("a planned launch does not go through Handle.run")


def test_the_launch_adapter_hands_tensors_to_a_kept_plan_as_they_are() -> None:
    from miopenkernels.torch._launch import prepare

    x = torch.randn(2, 4, 5, 5, requires_grad=True).contiguous(memory_format=CL)
    w = torch.randn(8, 4, 3, 3).contiguous(memory_format=CL)
    y = torch.empty(2, 8, 3, 3).contiguous(memory_format=CL)
    planned = _PlanHandle()
    launch = prepare(planned, None, None)  # type: ignore[arg-type]
    launch.run(x, w, y)
    launch.run(x, w, y)
    launch.checked(x, w, y)
    assert len(planned.plans) == 1 and len(planned.plans[0].calls) == 3
    px, pw, py, ws, stream = planned.plans[0].calls[0]
    assert px is x and pw is w and py is y  # channels_last as it is: the runtime reads strides
    assert ws is None and stream is None  # the plan's per-stream workspace, the current stream
    # A layout accepted before: the plan is told the device and reads no layout again.
    assert planned.plans[0].calls[2] == (x, w, y, x.get_device(), "checked")


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,message", [
    (lambda: mkt.conv2d(torch.randn(1, 2, 5, 5, dtype=torch.float64),
                        torch.randn(2, 2, 3, 3, dtype=torch.float64)), "torch.float64"),
    (lambda: mkt.conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3).half()),
     "one type"),
    (lambda: mkt.conv2d(torch.randn(1, 3, 5, 5), torch.randn(2, 2, 3, 3)),
     "input has 3 channels"),
    (lambda: mkt.conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3), stride=2,
                        padding="same"), "stride 1"),
    (lambda: mkt.conv2d(torch.randn(2, 5, 5), torch.randn(2, 2, 3, 3)), "4-dimensional"),
    (lambda: mkt.conv_transpose2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3),
                                  output_padding=1), "output padding"),
])
def test_bad_calls_say_what_is_wrong(handles, call, message) -> None:  # noqa: ANN001
    with pytest.raises(ProblemError, match=re.escape(message)):
        call()


def test_cpu_tensors_without_a_named_gpu_say_how_to_name_one(handles) -> None:  # noqa: ANN001
    mkt.set_handle(None, "cpu")
    try:
        with pytest.raises(NoDeviceError, match="MIOPEN_DEVICE_ARCH"):
            mkt.conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3))
    finally:
        mkt.set_handle(handles["ieee"], "cpu", math_mode="ieee")
        mkt.set_handle(handles["tf32"], "cpu", math_mode="tf32")


# ---------------------------------------------------------------------------- modules
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv2d_module_loads_a_torch_state_dict_and_pads_as_torch(handles, mode) -> None:  # noqa: ANN001
    torch.manual_seed(10)
    theirs = torch.nn.Conv2d(4, 6, 3, stride=2, padding=(1, 2), padding_mode=mode)
    ours = mkt.Conv2d(4, 6, 3, stride=2, padding=(1, 2), padding_mode=mode)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 4, 9, 9)
    torch.testing.assert_close(ours(x), theirs(x), **FP32_TOL)


def test_conv3d_and_transposed_modules_compute_as_torchs(handles) -> None:  # noqa: ANN001
    torch.manual_seed(11)
    pairs = [(torch.nn.Conv3d(2, 4, 3, padding=1, padding_mode="replicate"),
              mkt.Conv3d(2, 4, 3, padding=1, padding_mode="replicate"),
              torch.randn(1, 2, 4, 5, 4), {}),
             (torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1),
              mkt.ConvTranspose2d(4, 2, 3, stride=2, padding=1), torch.randn(2, 4, 5, 5),
              {"output_size": [10, 10]})]
    for theirs, ours, x, kw in pairs:
        ours.load_state_dict(theirs.state_dict())
        y = ours(x, **kw)
        torch.testing.assert_close(y, theirs(x, **kw), **FP32_TOL)
    assert y.shape[-2:] == (10, 10)


@pytest.mark.parametrize("name", ["resnet", "mobilenet_v2"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_convert_swaps_a_models_convolutions_and_keeps_its_results(handles, name,  # noqa: ANN001
                                                                   channels_last) -> None:
    bench = _bench_models()
    torch.manual_seed(12)
    if name == "resnet":  # ResNet-50's layer list with one block per stage, 1/16 the width
        model, convs = bench.resnet(blocks=(1, 1, 1, 1), width=4, classes=10), 17
    else:  # MobileNet-v2's layer list at a quarter of the width, a small head
        model, convs = bench.mobilenet_v2(width_mult=0.25, last_channel=32, classes=10), 52
    # Batch norm with frozen statistics (and no dropout): in training mode, a 1x1 last stage
    # of two images normalises two values per channel, which turns rounding into noise.
    model.eval()
    fmt = CL if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    theirs = copy.deepcopy(model)
    report = mkt.convert(model)
    assert len(report.converted) == convs and report.left == []
    assert all(type(m) in (mkt.Conv2d,) for m in model.modules()
               if isinstance(m, torch.nn.Conv2d))
    x = torch.randn(2, 3, 32, 32).contiguous(memory_format=fmt)
    out, ours = _grads(model, x)
    ref, want = _grads(theirs, x)
    torch.testing.assert_close(out, ref, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(ours[0], want[0], atol=1e-3, rtol=1e-3)
    for (pname, p), q in zip(model.named_parameters(), theirs.parameters(), strict=True):
        scale = float(q.grad.abs().max()) or 1.0
        assert float((p.grad - q.grad).abs().max()) <= 2e-3 * scale, pname
    model.train()
    theirs.train()
    torch.manual_seed(13)  # the same dropout mask for both
    out = model(x)
    torch.manual_seed(13)
    torch.testing.assert_close(out, theirs(x), atol=1e-3, rtol=1e-3)


def test_convert_leaves_what_it_cannot_serve_and_says_why(handles) -> None:  # noqa: ANN001
    class MyConv(torch.nn.Conv2d):
        pass

    model = torch.nn.Sequential(torch.nn.Conv1d(2, 2, 3), torch.nn.Conv2d(2, 2, 3).double(),
                                MyConv(2, 2, 3), torch.nn.Conv2d(2, 2, 3),
                                torch.nn.ConvTranspose3d(2, 2, 3), torch.nn.LazyConv2d(2, 3))
    report = mkt.convert(model)
    assert report.converted == ["3"] and isinstance(model[3], mkt.Conv2d)
    why = dict(report.left)
    assert set(why) == {"0", "1", "2", "4", "5"}
    assert "Conv1d is not served" in why["0"] and "torch.float64" in why["1"]
    assert "MyConv subclasses Conv2d" in why["2"] and "ConvTranspose3d" in why["4"]
    assert "first forward" in why["5"]
    assert "converted 1 convolutions, left 5" in str(report)
    assert mkt.convert(model).converted == []  # converted ones are not converted again


# ---------------------------------------------------------------------------- packaging
def test_import_miopenkernels_does_not_import_torch() -> None:
    code = ("import sys, miopenkernels, miopenkernels.handle, miopenkernels.problem; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "False"


def _doc_blocks() -> list[str]:
    text = (ROOT / "docs" / "torch.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("hipcc") is None, reason="the page's kernels compile with hipcc")
def test_the_docs_page_runs_as_written(tmp_path) -> None:  # noqa: ANN001
    blocks = _doc_blocks()
    assert len(blocks) >= 4
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
    # The page's CPU route: the null backend standing in for a gfx906 (portable HIP solvers,
    # compiled by hipcc for real); CUDA_VISIBLE_DEVICES keeps a GPU machine on that route.
    env.update(MIOPEN_DEVICE_ARCH="gfx906", MIOPEN_DEVICE_CU="60", CUDA_VISIBLE_DEVICES="",
               MIOPEN_USER_DB_PATH=str(tmp_path / "user"),
               MIOPEN_CUSTOM_CACHE_DIR=str(tmp_path / "cache"),
               MIOPEN_SYSTEM_DB_PATH=str(tmp_path / "system"), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=900, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "converted" in proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine runs the benchmark")
def test_the_models_benchmark_refuses_a_machine_without_cuda(tmp_path) -> None:  # noqa: ANN001
    out = tmp_path / "torch_op.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "torch_models.py"), "--out",
                           str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 6 and "no CUDA GPU" in proc.stderr
    assert not out.exists()
    rows = [{"model": "resnet50", "batch": 1, "type": "FP16", "layout": "contiguous",
             "torch": {"eager_ms": 2.0, "graph_ms": 1.0},
             "miopenkernels": {"eager_ms": 2.2, "error": "RuntimeError: boom"}}]
    table = _bench_models().table(rows)
    assert "1.10" in table and "miopenkernels: RuntimeError: boom" in table


def test_the_models_benchmark_times_the_two_engines_in_turn(monkeypatch) -> None:  # noqa: ANN001
    """Eager forwards are host-bound: the engines' timed calls alternate, so that a busy
    moment of the machine falls on both, and each gets the median of its own samples."""
    calls: list[str] = []
    clock = [0.0]

    class FakeEvent:
        def __init__(self, enable_timing: bool = False) -> None:
            self.at = 0.0

        def record(self) -> None:
            self.at = clock[0]

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: FakeEvent) -> float:
            return end.at - self.at

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)

    def engine(name: str, ms: float):  # noqa: ANN202
        def call() -> None:
            calls.append(name)
            clock[0] += ms
        return call

    bench = _bench_models()
    medians = bench._interleaved_ms([engine("torch", 2.0), engine("ours", 3.0)], 5)
    assert medians == [2.0, 3.0]
    timed = calls[2 * bench.WARMUP:]
    assert timed == ["torch", "ours"] * 5
