"""ConvTriton3dTapsWrw: 3-D backward weights with every tap along one filter axis in one
program.

The 3-D backward-weights kernel (solvers/triton_3d.py) runs one tap per program row: each
program loads a dy tile and an x tile per step for its one (t, r, s), so a 3x3x3 layer loads
dy 27 times. With TAPS (kernels/conv_triton_3d.py) a program covers the filter's whole s axis
(2-3 taps; the t axis of a 3x1x1 filter), one dy tile then serving TAPS products into TAPS
accumulators; the grid's axis 1 shrinks by TAPS, the tile and split are the 3-D solver's
(`spec.taps`, TAP_GROUPS). On the H200 over the zoo's NDHWC 3-D layers in FP16 at batch 32
the kernel alone took 0.58-1.06 of one tap's time, geomean 0.78 over 25 layers
(bench/results/taps_3d_W_h200.json).

A solver of its own: its objects on TAPS_KINDS alone; FP16 and BF16 problems that take the
aligned channels-last object and whose filter has such an axis (the generic channels-last
objects ship too, for the invoker's fallback on misaligned pointers). It ranks first there,
ahead of the 3-D solver (the registry's YIELDS_TO); parameters, defaults and the ranking's
model are the 3-D solver's. ConvTriton3d{ViaNdhwc,Padded}TapsWrw are the relaid solvers
(solvers/triton_3d_relaid.py: NCDHW through NDHWC, odd channel counts padded) over it: the
copies', and the relaid problem's, the one-tap solver's; they claim where the relaid
backward weights claim, which give way to them there. The batch-chunk solvers keep the
one-tap kernel.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from .base import CompileJob, Params, Solver, family_claims
from .triton_3d import ConvTriton3d, _job, _view, spec_3d
from .triton_3d_relaid import RELAID_3D_SOLVERS, ConvTriton3dRelaid
from .triton_common import has_kernels_spec, have_kernels

__all__ = ["ConvTriton3dRelaidTaps", "ConvTriton3dTaps", "TAPS_3D_SOLVERS",
           "relaid_taps_first", "taps_first"]


class ConvTriton3dTaps(ConvTriton3d):
    """The 3-D implicit GEMM's backward weights, TAPS taps a program."""

    def __init__(self) -> None:
        super().__init__("W", "ieee")
        self.name = "ConvTriton3dTapsWrw"

    @property
    def ranking_name(self) -> str:
        return "ConvTriton3dWrw"

    generic_channels_last = True  # its problems are all channels-last

    def _tap_group(self, problem: ConvProblem) -> dict[str, int]:
        view, sizes, _, _ = _view(problem)
        count, axis = spec_3d().taps(view.direction, sizes)
        return {"TAPS": int(count), "TAP_AXIS": int(axis)}

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        spec = spec_3d()
        if problem.in_type not in spec.TAPS_TYPES or self._kind(target) not in spec.TAPS_KINDS:
            return False
        if not super().is_applicable(problem, target) or not self._aligned(problem):
            return False  # problems of the aligned channels-last object alone (measured there)
        return self._tap_group(problem)["TAPS"] > 1

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """The 3-D solver's legal sets whose TAPS x tiles a step fit the shared memory
        (`spec.taps_fit`)."""
        if not super().params_valid(problem, target, params):
            return False
        kind = self._kind(target)
        return kind is not None and bool(spec_3d().taps_fit(
            self._config(tuple(params)), problem.in_type, kind, self._tap_group(problem)["TAPS"]))

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [q for q in super().param_space(problem, target)
                if self.params_valid(problem, target, q)]

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The 3-D solver's backward-weights tiles for TAPS_TYPES, channels-last (aligned and
        generic), one object per group of TAP_GROUPS, on TAPS_KINDS; the reduce is the 3-D
        solver's."""
        spec = spec_3d()
        kind = self._kind(target)
        if kind is None or kind not in spec.TAPS_KINDS:
            return []
        return [_job("W", data_type, self.math,
                     tuple(sorted({**tile, "SPLIT_K": 1, "TAPS": count,
                                   "TAP_AXIS": axis}.items())), True, aligned, target)
                for data_type in spec.TAPS_TYPES for tile in self._tiles(data_type, kind)
                for aligned in (False, True) for count, axis in spec.TAP_GROUPS]


class ConvTriton3dRelaidTaps(ConvTriton3dRelaid):
    """A relaid backward weights (`layout`: NCDHW through NDHWC, NDHWC padded) on the
    several-taps solver."""

    inner: ConvTriton3d

    def __init__(self, layout: str) -> None:
        super().__init__("W", layout)
        self.inner = ConvTriton3dTaps()
        infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
        self.name = f"ConvTriton3d{infix}TapsWrw"

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        return []  # the copies' are the relaid solvers', the conv objects ConvTriton3dTaps's


def relaid_taps_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a relaid several-taps solver claims the problem (the registry's
    FIRST_CLAIMS)."""
    return family_claims(TAPS_3D_SOLVERS, ConvTriton3dRelaidTaps, problem, target)


def taps_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the solver claims the problem (the registry's FIRST_CLAIMS): wherever it
    applies."""
    return family_claims(TAPS_3D_SOLVERS, ConvTriton3dTaps, problem, target)


def _taps_solvers() -> list[Solver]:
    if not have_kernels() or not has_kernels_spec("conv_triton_3d_spec"):
        return []
    plain: list[Solver] = [ConvTriton3dTaps()]
    if not RELAID_3D_SOLVERS:
        return plain
    return [*plain, *(ConvTriton3dRelaidTaps(layout) for layout in ("NCDHW", "NDHWC"))]


TAPS_3D_SOLVERS: list[Solver] = _taps_solvers()
