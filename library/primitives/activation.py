"""Activations (kernels/activation.hip): relu, leaky relu, clipped relu, tanh, sigmoid."""

from __future__ import annotations

from .._record import dataclass
from ..errors import ProblemError
from ..solvers.base import KernelArg, Launch
from .base import Primitive, TensorShape, elementwise_grid

__all__ = ["ActivationProblem", "Activation", "ACTIVATION_MODES"]

# Mode name -> the kernel's mode code.
ACTIVATION_MODES = {"relu": 0, "leaky_relu": 1, "clipped_relu": 2, "tanh": 3, "sigmoid": 4}


@dataclass(frozen=True)
class ActivationProblem:
    """y = f(x) element-wise; `alpha` is leaky relu's slope or clipped relu's ceiling."""

    tensor: TensorShape
    mode: str = "relu"
    alpha: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in ACTIVATION_MODES:
            raise ProblemError(
                f"activation {self.mode!r} is not one of {', '.join(ACTIVATION_MODES)}"
            )

    @property
    def data_type(self) -> str:
        return self.tensor.data_type


class Activation(Primitive):
    """Element-wise activation over a packed tensor (in place allowed)."""

    name = "Activation"
    kernel_file = "activation.hip"
    kernel_name = "mk_activation_fwd"

    def launch(self, problem: ActivationProblem) -> Launch:
        grid, block = elementwise_grid(problem.tensor.count)
        args = (
            KernelArg("p_x", "ptr:x"),
            KernelArg("p_y", "ptr:y"),
            KernelArg("count", "i32", problem.tensor.count),
            KernelArg("mode", "i32", ACTIVATION_MODES[problem.mode]),
            KernelArg("alpha", "f32", float(problem.alpha)),
        )
        return Launch(self.kernel_name, grid, block, args)
