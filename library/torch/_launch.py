"""The one place that hands torch tensors to the runtime.

GPU tensors go to the problem's kept `Plan` as they are (channels_last ones too) on the
caller's current torch stream, with a workspace from torch's caching allocator (so a
`torch.cuda.graph` capture records no allocation of ours). CPU tensors, which the null
backend serves, always go in as numpy views in memory order (the null backend's own tensors),
so the reference result lands in the torch tensor's memory.

A `Launch` has two entries: `run` checks the tensors against the problem (once per new
layout, in the plan), `checked` trusts that a `run` accepted tensors of the same sizes,
strides, types and device before (the eager calls keyed on exactly those take it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

if TYPE_CHECKING:
    from ..handle import Handle
    from ..invoke import ConvSolution
    from ..problem import ConvProblem

__all__ = ["Launch", "Launcher", "prepare"]

Launcher = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None]
"""One launch of a prepared (problem, solution) on a call's x, w and y."""


class Launch(NamedTuple):
    """A prepared (problem, solution)'s launchers: `run` for any tensors the problem takes,
    `checked` for tensors of a layout `run` accepted before."""

    run: Launcher
    checked: Launcher


def _memory_order(t: torch.Tensor) -> torch.Tensor:
    """`t` viewed in its memory order: channels-last tensors with the channels last
    (detached: torch gives no `__cuda_array_interface__` of a tensor that requires grad)."""
    t = t.detach()
    if t.dim() >= 4 and not t.is_contiguous():
        t = t.movedim(1, -1)
    if not t.is_contiguous():
        raise AssertionError("the op hands the runtime contiguous or channels-last tensors")
    return t


def _host_view(t: torch.Tensor) -> Any:
    """A numpy view of a CPU tensor's memory in memory order (BF16 as its uint16 bits, the
    runtime's host spelling of BF16)."""
    t = _memory_order(t)
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view("uint16")
    return t.numpy()


def prepare(handle: Handle, problem: ConvProblem, solution: ConvSolution) -> Launch:
    """The launchers of `solution` for `problem` on `handle` (everything fixed between calls
    prepared now: the runtime's plan where it has one)."""
    if handle.backend.name == "null":
        def host(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
            handle.run(problem, solution, _host_view(x), _host_view(w), _host_view(y))
        return Launch(host, host)
    plan = handle.plan(problem, solution)
    run_checked = plan.run_checked

    def planned(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
        # The plan joins the current torch stream and keeps a workspace per stream from torch's
        # caching allocator (inside a capture too).
        plan.run(x, w, y)

    def checked(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
        run_checked(x, w, y, x.get_device())
    return Launch(planned, checked)
