"""Bias add (kernels/bias.hip): y = x + bias[c], any layout."""

from __future__ import annotations

from .._record import dataclass
from ..solvers.base import KernelArg, Launch
from .base import Primitive, TensorShape, elementwise_grid

__all__ = ["BiasProblem", "BiasAdd"]


@dataclass(frozen=True)
class BiasProblem:
    """Add a per-channel bias (C elements of the tensor's type) to x."""

    tensor: TensorShape

    @property
    def data_type(self) -> str:
        return self.tensor.data_type


class BiasAdd(Primitive):
    """Per-channel bias add (in place allowed)."""

    name = "BiasAdd"
    kernel_file = "bias.hip"
    kernel_name = "mk_bias_fwd"

    def launch(self, problem: BiasProblem) -> Launch:
        t = problem.tensor
        grid, block = elementwise_grid(t.count)
        args = (
            KernelArg("p_x", "ptr:x"),
            KernelArg("p_bias", "ptr:bias"),
            KernelArg("p_y", "ptr:y"),
            KernelArg("count", "i32", t.count),
            KernelArg("c", "i32", t.c),
            KernelArg("c_stride", "i32", t.c_stride),
        )
        return Launch(self.kernel_name, grid, block, args)
