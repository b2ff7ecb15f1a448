"""Eager calls past torch's dispatcher: a call seen before goes straight to its kept launch.

Through the custom op a forward call pays torch's dispatcher, the op's autograd wrapper and
this package's argument handling before its launch: more host time than cuDNN's whole call.
A call that nothing could tell apart from the op's may skip all of that: not traced by
`torch.compile` nor `torch.jit.trace`, no gradient to record (grad mode off, or neither
input nor weight requires one), tensors that are `torch.Tensor`s or Parameters (no other
subclass), no torch function or dispatch mode, no functorch transform or forward-mode AD
level, no autocast region. Such a call is keyed on its arguments as given: the sizes,
strides, type and device of input and weight, the geometry (stride, padding, dilation,
groups...) and the TF32 flag. The first call of a key takes the full path and, where it
handed the caller's tensors to the launch as they were (no cast, no padding, no copy into
the problem's layout), `remember`s the output's sizes and strides and the launch; a repeated
call then allocates the output and launches, nothing more. The launch is the one the full
path takes, so both give the same result. A call with a gradient to record and nothing else
to see it runs the op's autograd formula directly (`route`: AUTOGRAD), past the dispatcher
too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import forward_ad

from . import _handles
from ._launch import Launcher

__all__ = ["AUTOGRAD", "DIRECT", "OP", "lookup", "remember", "route", "run"]

# Tensors that behave as torch.Tensor does: a Parameter (a module's weight) disables torch
# functions of its own. Any other subclass may mean something else, and takes the custom op.
_PLAIN_TYPES = frozenset((torch.Tensor, torch.nn.Parameter))


def _torch_flag(owner: Any, name: str, busy: object) -> Callable[[], object]:
    """torch's query `owner.name`; where this torch lacks it, one answering `busy` (the
    state in which calls take the custom op)."""
    query = getattr(owner, name, None)
    return query if query is not None else (lambda: busy)


_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_function_mode = _torch_flag(torch._C, "_is_torch_function_mode_enabled", True)
_dispatch_modes = _torch_flag(torch._C, "_len_torch_dispatch_stack", 1)
_transforms = _torch_flag(getattr(torch._C, "_functorch", None), "peek_interpreter_stack",
                          "a transform")
_autocast = _torch_flag(torch._C, "_is_any_autocast_enabled", True)
_tracing = _torch_flag(torch._C, "_get_tracing_state", "a trace")


def _plain(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Eager, plain tensors, and no mode or transform that would see the op."""
    # is_compiling first: torch.compile's tracer reads no further (it could not trace the
    # mode queries without a graph break).
    return (not _compiling()
            and type(x) in _PLAIN_TYPES and type(weight) in _PLAIN_TYPES
            and not _function_mode() and not _dispatch_modes()
            and _transforms() is None and forward_ad._current_level < 0
            and _tracing() is None)


OP, AUTOGRAD, DIRECT = "op", "autograd", "direct"


def route(x: torch.Tensor, weight: torch.Tensor) -> str:
    """How a forward call on `x` and `weight` runs: DIRECT (past the dispatcher and autograd:
    nothing would see it), AUTOGRAD (the op's autograd formula, past the dispatcher: autograd
    alone has something to record) or OP (the custom op: anything else)."""
    if not _plain(x, weight):
        return OP
    if _grad_enabled() and (x.requires_grad or weight.requires_grad):
        return AUTOGRAD
    return DIRECT


def lookup(kind: str, x: torch.Tensor, weight: torch.Tensor, geometry: tuple[object, ...]
           ) -> tuple[tuple[object, ...] | None, tuple[Any, ...] | None]:
    """(key, entry) of an eager call of `kind` ('conv2d', 'conv3d', 'conv_transpose2d') with
    `geometry` as the caller gave it: key None where the call must take the custom op or an
    argument cannot be a key (a list), entry None where no call of the key ran before."""
    if route(x, weight) is not DIRECT or _autocast():
        return None, None
    key = (kind, x.shape, x.stride(), x.dtype, x.device, weight.shape, weight.stride(),
           weight.dtype, weight.device, _handles.allow_tf32(), geometry)
    try:
        return key, _handles.fast.get(key)
    except TypeError:  # unhashable: the full path serves it every time
        return None, None


def remember(key: tuple[object, ...] | None, y: torch.Tensor, launch: Launcher | None) -> None:
    """Keep what a repeated call of `key` needs: the output's sizes and strides and the
    launch that takes the caller's tensors as they are (None: they were not)."""
    if key is not None and launch is not None:
        _handles.fast[key] = (tuple(y.shape), y.stride(), launch)


def run(entry: tuple[Any, ...], x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """A remembered call (without bias): its output allocated, and the launch."""
    shape, strides, launch = entry
    y = x.new_empty_strided(shape, strides)
    launch(x, weight, y)
    return y
