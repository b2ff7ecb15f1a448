"""The primitive registry: activation, pooling, batch-norm inference, softmax, bias add.

Each entry gives `compile_job(problem, target)`, `dynamic_jobs(target)` and `launch(problem)`
with the same `CompileJob` and `Launch` records as the conv solvers.
"""

from __future__ import annotations

from ..errors import ProblemError
from ..solvers.base import CompileJob
from ..target import Target
from .activation import ACTIVATION_MODES, Activation, ActivationProblem
from .base import Primitive, TensorShape
from .batchnorm import BatchNormInference, BatchNormProblem
from .bias import BiasAdd, BiasProblem
from .pooling import POOL_MODES, Pooling
from .softmax import Softmax, SoftmaxProblem

__all__ = [
    "PRIMITIVES",
    "get_primitive",
    "all_primitive_jobs",
    "Primitive",
    "TensorShape",
    "ActivationProblem",
    "BatchNormProblem",
    "BiasProblem",
    "SoftmaxProblem",
    "ACTIVATION_MODES",
    "POOL_MODES",
]

PRIMITIVES: list[Primitive] = [Activation(), Pooling(), BatchNormInference(), Softmax(), BiasAdd()]


def get_primitive(name: str) -> Primitive:
    """The primitive called `name` (Activation, Pooling, BatchNormInference, Softmax, BiasAdd)."""
    for prim in PRIMITIVES:
        if prim.name == name:
            return prim
    raise ProblemError(
        f"unknown primitive {name!r}; known: {', '.join(p.name for p in PRIMITIVES)}"
    )


def all_primitive_jobs(target: Target) -> list[CompileJob]:
    """Every primitive's binaries for `target`, in registry order."""
    return [job for prim in PRIMITIVES for job in prim.dynamic_jobs(target)]
