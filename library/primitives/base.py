"""What every primitive shares: the tensor it runs over, and the Primitive protocol.

Primitives use the solvers' `CompileJob` and `Launch` records. Their kernels are all dynamic
(shape and layout are kernel arguments), so one binary per (primitive, type) ships per target.
"""

from __future__ import annotations

from typing import Any

from .._record import dataclass
from ..errors import ProblemError
from ..solvers._conv import TYPE_CODES, ceil_div
from ..solvers.base import CompileJob, Launch, type_supported
from ..target import Target

__all__ = ["TensorShape", "Primitive", "elementwise_grid", "BLOCK"]

BLOCK = 256
_MAX_BLOCKS = 1 << 16  # grid-stride kernels: more blocks than this add nothing
_LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC")


@dataclass(frozen=True)
class TensorShape:
    """An activation tensor: (N, C, *spatial) stored in `layout`, of `data_type`."""

    n: int
    c: int
    spatial: tuple[int, ...]
    layout: str = "NCHW"
    data_type: str = "FP32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "spatial", tuple(int(v) for v in self.spatial))
        if self.layout not in _LAYOUTS:
            raise ProblemError(f"layout {self.layout!r} is not one of {', '.join(_LAYOUTS)}")
        if len(self.spatial) != len(self.layout) - 2:
            raise ProblemError(f"layout {self.layout} needs {len(self.layout) - 2} spatial sizes")
        if min(self.n, self.c, *self.spatial) < 1:
            raise ProblemError(f"tensor sizes must be positive: {self.shape}")

    @property
    def shape(self) -> tuple[int, ...]:
        """Logical (N, C, *spatial) shape."""
        return (self.n, self.c, *self.spatial)

    @property
    def positions(self) -> int:
        out = 1
        for v in self.spatial:
            out *= v
        return out

    @property
    def count(self) -> int:
        return self.n * self.c * self.positions

    @property
    def channel_last(self) -> bool:
        return self.layout in ("NHWC", "NDHWC")

    @property
    def c_stride(self) -> int:
        """Element distance between neighbouring channels."""
        return 1 if self.channel_last else self.positions


class Primitive:
    """One primitive family: kernel file and symbol, applicability, jobs and launch."""

    name = ""
    kernel_file = ""
    kernel_name = ""

    def type_of(self, problem: Any) -> str:
        return str(problem.data_type)

    def is_applicable(self, problem: Any, target: Target) -> bool:
        """Whether the kernel computes `problem` on `target` (type and 32-bit sizes)."""
        data_type = self.type_of(problem)
        if data_type not in TYPE_CODES or not type_supported(data_type, target):
            return False
        tensor = getattr(problem, "tensor", None)
        return tensor is None or tensor.count < 2**31

    def compile_job(self, problem: Any, target: Target) -> CompileJob:
        """The (dynamic) binary for `problem`: one per element type."""
        return self._job(self.type_of(problem), target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """One job per element type the target gets."""
        return [self._job(t, target) for t in TYPE_CODES if type_supported(t, target)]

    def launch(self, problem: Any) -> Launch:
        raise NotImplementedError

    def _job(self, data_type: str, target: Target) -> CompileJob:
        options = (f"-DMK_BLOCK={BLOCK}", f"-DMK_TYPE={TYPE_CODES[data_type]}")
        return CompileJob(self.kernel_file, options, self.kernel_name, target)

    def __repr__(self) -> str:
        return f"<Primitive {self.name}>"


def elementwise_grid(count: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block for a grid-stride loop over `count` elements."""
    return (max(1, min(ceil_div(count, BLOCK), _MAX_BLOCKS)), 1, 1), (BLOCK, 1, 1)
