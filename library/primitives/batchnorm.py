"""Batch normalisation, inference, per channel (kernels/batchnorm.hip)."""

from __future__ import annotations

from .._record import dataclass
from ..solvers.base import KernelArg, Launch
from .base import Primitive, TensorShape, elementwise_grid

__all__ = ["BatchNormProblem", "BatchNormInference"]


@dataclass(frozen=True)
class BatchNormProblem:
    """y = scale * (x - mean) / sqrt(var + epsilon) + bias; the four vectors are C floats."""

    tensor: TensorShape
    epsilon: float = 1e-5

    @property
    def data_type(self) -> str:
        return self.tensor.data_type


class BatchNormInference(Primitive):
    """Spatial batch normalisation with stored statistics."""

    name = "BatchNormInference"
    kernel_file = "batchnorm.hip"
    kernel_name = "mk_batchnorm_infer"

    def launch(self, problem: BatchNormProblem) -> Launch:
        t = problem.tensor
        grid, block = elementwise_grid(t.count)
        args = (
            KernelArg("p_x", "ptr:x"),
            KernelArg("p_y", "ptr:y"),
            KernelArg("p_scale", "ptr:scale"),
            KernelArg("p_bias", "ptr:bias"),
            KernelArg("p_mean", "ptr:mean"),
            KernelArg("p_var", "ptr:var"),
            KernelArg("count", "i32", t.count),
            KernelArg("c", "i32", t.c),
            KernelArg("c_stride", "i32", t.c_stride),
            KernelArg("epsilon", "f32", float(problem.epsilon)),
        )
        return Launch(self.kernel_name, grid, block, args)
