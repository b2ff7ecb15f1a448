"""Convolutions as `torch.library` custom ops, and the functions of `torch.nn.functional`'s
signatures over them.

Three ops, each with a fake (meta) implementation so that `torch.compile` traces them without a
graph break: `miopenkernels::convolution` (forward), `::convolution_backward_data` and
`::convolution_backward_weights` (the problem's B and W directions, run by the package's own
solvers). The forward op's autograd formula calls the two backward ops (or, where nothing
but autograd would see them, their computations: `_eager.route`). Bias is added with
torch ops; `'same'`/`'valid'` padding is resolved to numbers (odd totals with one `F.pad`), as
torch does. Under `torch.autocast` the functions cast input, weight and bias to the region's
type first (torch's policy for convolutions), whichever 16-bit type the region names.
"""

# No `from __future__ import annotations`: torch.library reads the op schemas from the
# annotations at definition time.
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from ..errors import ProblemError
from ..problem import ConvProblem
from . import _eager, _handles
from ._launch import Launch, Launcher
from ._problem import conv_problem, data_type, is_channels_last, memory_format, out_spatial

__all__ = ["conv2d", "conv3d", "conv_transpose2d", "convolution"]

_Size = int | Sequence[int]
_KINDS = {2: "conv2d", 3: "conv3d"}
_BIAS_VIEWS = {4: (1, -1, 1, 1), 5: (1, -1, 1, 1, 1)}


def _prepared(direction: str, channels_last: bool, x: torch.Tensor, x_size: Sequence[int],
              w_size: Sequence[int], geometry: tuple[Any, ...], type_name: str
              ) -> tuple[ConvProblem, Launch]:
    """The problem of a call and its launchers, kept per call signature (a repeated call pays
    one dict lookup: no ConvProblem is built, no handle looked up)."""
    stride, padding, dilation, groups, transposed, output_padding = geometry
    tf32 = type_name == "FP32" and _handles.allow_tf32()
    key = (x.device, direction, channels_last, type_name, tf32, tuple(x_size), tuple(w_size),
           tuple(stride), tuple(padding), tuple(dilation), groups, transposed,
           tuple(output_padding))
    entry = _handles.calls.get(key)
    if entry is None:
        problem = conv_problem(x_size, w_size, *geometry, direction=direction,
                               channels_last=channels_last, type_name=type_name)
        handle = _handles.handle_for(x.device, type_name)
        entry = _handles.calls[key] = (problem, _handles.launcher_for(handle, problem)[1])
    return entry


def _check_device(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.device != b.device:
        raise ProblemError(f"tensors on {a.device} and {b.device}: a convolution takes its "
                           "tensors on one device")


# ---------------------------------------------------------------------------- forward
def _forward(x: torch.Tensor, weight: torch.Tensor, stride: list[int], padding: list[int],
             dilation: list[int], groups: int, transposed: bool, output_padding: list[int]
             ) -> tuple[torch.Tensor, Launcher | None]:
    """The forward op's computation (also called directly by calls that skip the
    dispatcher): y, and the launcher a repeated call may take with tensors of the same sizes,
    strides, types and device (None where x or the weight had to be copied into the problem's
    layout, or nothing was launched)."""
    _check_device(x, weight)
    type_name = data_type(x, weight)
    cl = is_channels_last(x)
    fmt = memory_format(x.dim(), cl)
    xc = x.contiguous(memory_format=fmt)
    w = weight.contiguous(memory_format=fmt)
    geometry = (stride, padding, dilation, groups, transposed, output_padding)
    problem, launch = _prepared("F", cl, xc, xc.shape, w.shape, geometry, type_name)
    y = torch.empty(problem.out_shape, dtype=x.dtype, device=x.device, memory_format=fmt)
    if not (y.numel() and x.numel()):
        return y, None
    launch.run(xc, w, y)
    return y, launch.checked if xc is x and w is weight else None


@torch.library.custom_op("miopenkernels::convolution", mutates_args=())
def convolution(x: torch.Tensor, weight: torch.Tensor, stride: list[int], padding: list[int],
                dilation: list[int], groups: int, transposed: bool,
                output_padding: list[int]) -> torch.Tensor:
    """y of a convolution (transposed: of a transposed one) without bias; the layout is the
    input's (channels_last: NHWC), the type the tensors' own."""
    return _forward(x, weight, stride, padding, dilation, groups, transposed,
                    output_padding)[0]


@convolution.register_fake
def _(x: torch.Tensor, weight: torch.Tensor, stride: list[int], padding: list[int],
      dilation: list[int], groups: int, transposed: bool,
      output_padding: list[int]) -> torch.Tensor:
    k = weight.shape[1] * groups if transposed else weight.shape[0]
    spatial = out_spatial(x.shape[2:], weight.shape[2:], padding, stride, dilation, transposed,
                          output_padding)
    fmt = memory_format(x.dim(), is_channels_last(x))
    return x.new_empty((x.shape[0], k, *spatial)).contiguous(memory_format=fmt)


# ---------------------------------------------------------------------------- backward
def _backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                    input_size: list[int], stride: list[int], padding: list[int],
                    dilation: list[int], groups: int, transposed: bool,
                    output_padding: list[int], channels_last: bool) -> torch.Tensor:
    """dx of a convolution from dy and w (the problem's backward-data direction)."""
    _check_device(grad_output, weight)
    type_name = data_type(grad_output, weight)
    fmt = memory_format(grad_output.dim(), channels_last)
    dy = grad_output.contiguous(memory_format=fmt)
    w = weight.contiguous(memory_format=fmt)
    dx = torch.empty(input_size, dtype=dy.dtype, device=dy.device, memory_format=fmt)
    if dx.numel() == 0 or dy.numel() == 0:
        return dx.zero_()
    geometry = (stride, padding, dilation, groups, transposed, output_padding)
    launch = _prepared("B", channels_last, dy, input_size, w.shape, geometry, type_name)[1]
    launch.run(dx, w, dy)
    return dx


convolution_backward_data = torch.library.custom_op(
    "miopenkernels::convolution_backward_data", _backward_data, mutates_args=())


@convolution_backward_data.register_fake
def _(grad_output: torch.Tensor, weight: torch.Tensor, input_size: list[int],
      stride: list[int], padding: list[int], dilation: list[int], groups: int,
      transposed: bool, output_padding: list[int], channels_last: bool) -> torch.Tensor:
    fmt = memory_format(grad_output.dim(), channels_last)
    return grad_output.new_empty(input_size).contiguous(memory_format=fmt)


def _backward_weights(grad_output: torch.Tensor, x: torch.Tensor, weight_size: list[int],
                      stride: list[int], padding: list[int], dilation: list[int],
                      groups: int, transposed: bool, output_padding: list[int],
                      channels_last: bool) -> torch.Tensor:
    """dw of a convolution from x and dy (the problem's backward-weights direction)."""
    _check_device(grad_output, x)
    type_name = data_type(x, grad_output)
    fmt = memory_format(x.dim(), channels_last)
    dy = grad_output.contiguous(memory_format=fmt)
    x = x.contiguous(memory_format=fmt)
    dw = torch.empty(weight_size, dtype=x.dtype, device=x.device, memory_format=fmt)
    if x.numel() == 0 or dy.numel() == 0:
        return dw.zero_()
    geometry = (stride, padding, dilation, groups, transposed, output_padding)
    launch = _prepared("W", channels_last, x, x.shape, weight_size, geometry, type_name)[1]
    launch.run(x, dw, dy)
    return dw


convolution_backward_weights = torch.library.custom_op(
    "miopenkernels::convolution_backward_weights", _backward_weights, mutates_args=())


@convolution_backward_weights.register_fake
def _(grad_output: torch.Tensor, x: torch.Tensor, weight_size: list[int], stride: list[int],
      padding: list[int], dilation: list[int], groups: int, transposed: bool,
      output_padding: list[int], channels_last: bool) -> torch.Tensor:
    fmt = memory_format(x.dim(), channels_last)
    return x.new_empty(weight_size).contiguous(memory_format=fmt)


# ---------------------------------------------------------------------------- autograd
def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    x, weight, stride, padding, dilation, groups, transposed, output_padding = inputs
    ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                          weight if ctx.needs_input_grad[0] else None)
    ctx.geometry = (stride, padding, dilation, groups, transposed, output_padding)
    ctx.sizes = (list(x.shape), list(weight.shape))
    ctx.channels_last = is_channels_last(x)


def _backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    """dx and dw through the backward ops, or straight to their computations where nothing
    but this backward would see them (as `_eager.route` decides for a forward call)."""
    x, weight = ctx.saved_tensors
    x_size, w_size = ctx.sizes
    args = (*ctx.geometry, ctx.channels_last)
    ops = torch.ops.miopenkernels
    dx = dw = None
    if ctx.needs_input_grad[0]:
        direct = _eager.route(grad, weight) is _eager.DIRECT
        data = _backward_data if direct else ops.convolution_backward_data
        dx = data(grad, weight, x_size, *args)
    if ctx.needs_input_grad[1]:
        direct = _eager.route(grad, x) is _eager.DIRECT
        weights = _backward_weights if direct else ops.convolution_backward_weights
        dw = weights(grad, x, w_size, *args)
    return dx, dw, None, None, None, None, None, None


convolution.register_autograd(_backward, setup_context=_setup_context)


class _Convolution(torch.autograd.Function):
    """The forward op's autograd formula for eager calls that only autograd needs to see:
    the custom op's own formula and computation, without the dispatcher's round trip."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor,  # type: ignore[override]
                *geometry: Any) -> torch.Tensor:
        y = _forward(x, weight, *geometry)[0]
        _setup_context(ctx, (x, weight, *geometry), y)
        return y

    backward = staticmethod(_backward)  # type: ignore[assignment]


# ---------------------------------------------------------------------------- functions
def _ntuple(value: _Size, dims: int, name: str) -> list[int]:
    if isinstance(value, int):
        return [value] * dims
    out = [int(v) for v in value]
    if len(out) == 1:
        return out * dims
    if len(out) != dims:
        raise ProblemError(f"{name} {tuple(out)} has {len(out)} values; a {dims}D "
                           f"convolution takes 1 or {dims}")
    return out


def _autocast(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The tensors cast to the autocast region's type, if a region is active for their
    device (torch casts convolutions to the lower precision type)."""
    device = x.device.type
    if not torch.is_autocast_enabled(device):
        return x, weight, bias
    dtype = torch.get_autocast_dtype(device)
    return x.to(dtype), weight.to(dtype), None if bias is None else bias.to(dtype)


def _padding(x: torch.Tensor, weight: torch.Tensor, padding: str | _Size, stride: list[int],
             dilation: list[int], dims: int) -> tuple[torch.Tensor, list[int]]:
    """(input, symmetric padding): 'valid' is none; 'same' pads dilation * (filter - 1) in
    all, an odd total's extra element at the end through F.pad (as torch does)."""
    if not isinstance(padding, str):
        return x, _ntuple(padding, dims, "padding")
    if padding == "valid":
        return x, [0] * dims
    if padding != "same":
        raise ProblemError(f"padding {padding!r} is not 'same', 'valid' or a number")
    if any(s != 1 for s in stride):
        raise ProblemError("padding='same' needs stride 1 (as in torch)")
    totals = [d * (f - 1) for d, f in zip(dilation, weight.shape[2:], strict=True)]
    left = [t // 2 for t in totals]
    extra = [t - 2 * lo for t, lo in zip(totals, left, strict=True)]
    if any(extra):
        pads: list[int] = []
        for e in reversed(extra):  # F.pad lists the last dimension first
            pads += [0, e]
        x = F.pad(x, pads)
    return x, left


def _add_bias(y: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """y plus the bias per output channel: in place where the types agree (y is the call's
    own, and torch adds its convolutions' bias so), else with torch's type promotion."""
    if bias is None:
        return y
    b = bias.view(_BIAS_VIEWS[y.dim()])
    return y.add_(b) if bias.dtype == y.dtype else y + b


def _forward_call(key: tuple[object, ...] | None, input: torch.Tensor, x: torch.Tensor,
                  weight: torch.Tensor, *geometry: Any) -> torch.Tensor:
    """The forward of `x` (the caller's `input` after autocast and padding) by its route:
    straight to its computation (remembered for the next call of `key` where it took the
    caller's input as it was), through the op's autograd formula, or through the custom op."""
    way = _eager.route(x, weight)
    if way is _eager.DIRECT:
        y, launch = _forward(x, weight, *geometry)
        if x is input:
            _eager.remember(key, y, launch)
        return y
    if way is _eager.AUTOGRAD:
        return _Convolution.apply(x, weight, *geometry)  # type: ignore[no-any-return,no-untyped-call]
    out: torch.Tensor = torch.ops.miopenkernels.convolution(x, weight, *geometry)
    return out


def _conv(dims: int, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
          stride: _Size, padding: str | _Size, dilation: _Size, groups: int) -> torch.Tensor:
    key, entry = _eager.lookup(_KINDS[dims], input, weight, (stride, padding, dilation, groups))
    if entry is not None:  # a call seen before: its output's layout and launch are at hand
        return _add_bias(_eager.run(entry, input, weight), bias)
    if input.dim() != dims + 2:
        raise ProblemError(f"conv{dims}d takes a {dims + 2}-dimensional input (batch, "
                           f"channels, spatial); got {input.dim()} dimensions")
    input, weight, bias = _autocast(input, weight, bias)
    st = _ntuple(stride, dims, "stride")
    dil = _ntuple(dilation, dims, "dilation")
    x, pad = _padding(input, weight, padding, st, dil, dims)
    y = _forward_call(key, input, x, weight, st, pad, dil, groups, False, [0] * dims)
    return _add_bias(y, bias)


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           stride: _Size = 1, padding: str | _Size = 0, dilation: _Size = 1,
           groups: int = 1) -> torch.Tensor:
    """`torch.nn.functional.conv2d` through the package's solvers."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           stride: _Size = 1, padding: str | _Size = 0, dilation: _Size = 1,
           groups: int = 1) -> torch.Tensor:
    """`torch.nn.functional.conv3d` through the package's solvers."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input: torch.Tensor, weight: torch.Tensor,
                     bias: torch.Tensor | None = None, stride: _Size = 1, padding: _Size = 0,
                     output_padding: _Size = 0, groups: int = 1,
                     dilation: _Size = 1) -> torch.Tensor:
    """`torch.nn.functional.conv_transpose2d` through the package's solvers."""
    key, entry = _eager.lookup("conv_transpose2d", input, weight,
                               (stride, padding, output_padding, groups, dilation))
    if entry is not None:
        return _add_bias(_eager.run(entry, input, weight), bias)
    if input.dim() != 4:
        raise ProblemError(f"conv_transpose2d takes a 4-dimensional input; got {input.dim()}")
    x, weight, bias = _autocast(input, weight, bias)
    y = _forward_call(key, input, x, weight, _ntuple(stride, 2, "stride"),
                      _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation"), groups,
                      True, _ntuple(output_padding, 2, "output padding"))
    return _add_bias(y, bias)
