"""The primitive registry: activation, pooling, batch-norm inference, softmax, bias add.

Each entry gives `compile_job(problem, target)`, `dynamic_jobs(target)` and `launch(problem)`
with the same `CompileJob` and `Launch` records as the conv solvers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProblemError
from ..solvers.base import CompileJob
from ..target import Target
from .activation import ACTIVATION_MODES, Activation, ActivationProblem
from .base import Primitive, TensorShape
from .batchnorm import BatchNormInference, BatchNormProblem
from .bias import BiasAdd, BiasProblem
from .pooling import POOL_MODES, Pooling
from .softmax import Softmax, SoftmaxProblem

if TYPE_CHECKING:
    from ..backends.base import PreparedLaunch
    from ..kernel_store import KernelStore

__all__ = [
    "PRIMITIVES",
    "get_primitive",
    "run_primitive",
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


def run_primitive(store: KernelStore, target: Target, launches: dict[Any, PreparedLaunch],
                  primitive: Primitive | str, problem: object, outputs: tuple[str, ...],
                  tensors: dict[str, object]) -> None:
    """Run a primitive on named tensors (`Handle.primitive`): the kernel from `store`, its
    packed arguments kept in `launches` per (problem, primitive)."""
    from ..errors import MIOpenKernelsError
    from ..tensor import as_device

    if isinstance(primitive, str):
        primitive = get_primitive(primitive)
    backend = store.backend
    key = (problem, primitive.name)
    launch = launches.get(key)
    if launch is None:
        if not primitive.is_applicable(problem, target):
            raise MIOpenKernelsError(f"{primitive.name} does not apply to {problem} on "
                                     f"{target.name}")
        fn = store.kernel(primitive.compile_job(problem, target))
        spec = primitive.launch(problem)
        launch = backend.prepare(fn, spec.grid, spec.block, spec.args, spec.shared_bytes)
        launches[key] = launch
    bound = {}
    try:
        for name in launch.slots:
            if name not in tensors:
                raise MIOpenKernelsError(f"{primitive.name} needs tensor {name!r}; given: "
                                         f"{', '.join(sorted(tensors))}")
            t = as_device(tensors[name], backend, upload=name not in outputs)
            t.temporary = t.temporary or (t is not tensors[name] and t.copied)
            bound[name] = t
            launch.set(name, t.ptr)
        launch()
        for name in outputs:
            if bound[name].copied:
                backend.synchronize()
                bound[name].copy_back(backend)
    finally:
        for t in bound.values():
            if t.temporary:
                t.release()
