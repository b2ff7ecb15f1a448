"""Softmax and log-softmax over channels (kernels/softmax.hip)."""

from __future__ import annotations

from .._record import dataclass
from ..solvers._conv import ceil_div
from ..solvers.base import KernelArg, Launch
from .base import BLOCK, Primitive, TensorShape

__all__ = ["SoftmaxProblem", "Softmax"]


@dataclass(frozen=True)
class SoftmaxProblem:
    """Softmax across C at every (n, position); `log` gives log-softmax."""

    tensor: TensorShape
    log: bool = False

    @property
    def data_type(self) -> str:
        return self.tensor.data_type


class Softmax(Primitive):
    """Channel softmax, one thread per (n, position)."""

    name = "Softmax"
    kernel_file = "softmax.hip"
    kernel_name = "mk_softmax_fwd"

    def launch(self, problem: SoftmaxProblem) -> Launch:
        t = problem.tensor
        s = t.positions
        n_stride = t.c * s
        s_stride = t.c if t.channel_last else 1
        args = (
            KernelArg("p_x", "ptr:x"),
            KernelArg("p_y", "ptr:y"),
            KernelArg("n", "i32", t.n),
            KernelArg("c", "i32", t.c),
            KernelArg("spatial", "i32", s),
            KernelArg("n_stride", "i32", n_stride),
            KernelArg("c_stride", "i32", t.c_stride),
            KernelArg("s_stride", "i32", s_stride),
            KernelArg("log_mode", "i32", int(problem.log)),
        )
        return Launch(self.kernel_name, (ceil_div(t.n * s, BLOCK), 1, 1), (BLOCK, 1, 1), args)
