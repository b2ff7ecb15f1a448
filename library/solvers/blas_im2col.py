"""ConvBlasIm2col{,Tf32}{Fwd,Bwd,Wrw}: a 2-D layer's forward, backward data (unit stride) or
backward weights, channels-last, as a column matrix of the gathered side and one call of the
GEMM library (the algebra: kernels/conv_triton_im2col_spec.py).

On the implicit GEMM a few-channel side is read once per filter tap and padded to a
matrix-core block, and in FP32 at IEEE accuracy the GEMM runs three TF32 products: the stems'
backward weights took 2.2-2.9x IEEE cuDNN's GPU time
(bench/results/fewk_h100-4ee2d41/zoo_fp32_bw.json); on sm90 the forward's gather feeds a
Triton GEMM that no configuration brought within 1.5x of cuBLAS on the zoo's shapes
(bench/results/README, "Warp specialisation from 2-D boxes timed"). Here:
1. a lead-in gathers x (or dy: backward data, and backward weights where dy has fewer
   channels) into the workspace as a column matrix, one row a pixel of the batch, one column
   a (channel, tap) pair (kernels/conv_triton_im2col.py, an object a type, shipped for NVIDIA
   targets);
2. the main launch is one call of the library, writing the layer's output in place:
   y = col w^T (forward), dx = col w[K*R*S, C] (backward data), dw[K, R*S*C] = dy^T col (x
   gathered), dw[(k, r, s), C] = col^T x (dy gathered).
The column matrix costs a write and a read of R*S times the gathered side: the form pays
where the product is slow beside that (FP32 at IEEE accuracy) or the implicit GEMM far from
the library.

Nothing else is compiled. The solvers are the library's (`solvers.LIBRARY_SOLVERS`): a runtime
offers them where cuBLAS loads on an NVIDIA device, find times them beside the kernels, and
they claim first place where `im2col_first` says.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..config import triton_solvers_enabled
from ..problem import ConvProblem
from ..target import Target
from ._conv import DIRECTION_SUFFIX, WORKSPACE_ALIGN, ConvView
from .base import CompileJob, Launch, Params, Solver, WorkspaceParts
from .blas_1x1 import ConvBlasGemm1x1, _activation, gemm_call, library_offered
from .blas_call import GemmCall, _Matrix, product_call
from .triton_common import (
    has_kernels_spec,
    kernel_arg,
    kernels_spec,
    scratch_args,
    spec_compile_job,
    spec_view,
    target_kind,
)

__all__ = ["ConvBlasIm2col", "IM2COL_SOLVERS", "IM2COL_FIRST", "im2col_call", "im2col_first",
           "im2col_spec"]

SPEC = "conv_triton_im2col_spec"
GATHER_FILE = "conv_triton_im2col.py"

#: Per arch and case (`<type>-<direction>-<layout>`, the TF32 math's FP32 as TF32), the least
#: channels on the side not gathered (`conv_triton_im2col_spec.other_width`) from which the
#: library's im2col form claims first place where it is offered. Empty until a GPU run times
#: it against the kernels (bench/gpu_im2col.sh).
IM2COL_FIRST: dict[str, dict[str, int]] = {}


def im2col_spec() -> Any:
    """`kernels/conv_triton_im2col_spec.py`: stdlib-only data of the transformation."""
    return kernels_spec(SPEC)


_view = spec_view


def _packed_filters_last(v: ConvView) -> bool:
    """dw channels-last and packed (KRSC): the product's output is its memory."""
    f = v.field
    c, r, s = f("c"), f("fil_h"), f("fil_w")
    return (f("ws_c"), f("ws_w"), f("ws_h"), f("ws_k")) == (1, c, s * c, r * s * c)


@lru_cache(maxsize=4096)
def im2col_call(problem: ConvProblem) -> GemmCall | None:
    """The library call of the layer's product over the column matrix (`ws_col`), or None
    where the layer is not one: not a 2-D layer of one group that the spec takes
    (`conv_triton_im2col_spec.applies`), activations not channels-last over
    the whole batch, filters not packed channels-last, or a layer that is one call of the
    library as it is (a 1x1 filter, a filter over the whole input)."""
    if len(problem.in_spatial) != 2 or not has_kernels_spec(SPEC):
        return None
    v, sizes, _ = _view(problem)
    spec = im2col_spec()
    if v.direction != problem.key_direction or \
            not spec.applies(v.direction, sizes, problem.in_type) or \
            not _packed_filters_last(v) or gemm_call(problem) is not None:
        return None
    rows, cols = spec.col_shape(v.direction, sizes)
    col = _Matrix("ws_col", rows, cols, False, cols, 0)
    k, c = sizes["K"], sizes["C"]
    if spec.gathered(v.direction, sizes) == "dy":
        x = _activation(v, "in", v.in_tensor, c, True)
        if x is None or x.rows != rows:
            return None
        if v.direction == "B":  # dx = col w', the filters taps first in the workspace
            return product_call(x, col, _Matrix("ws_w", cols, c, False, c, 0), 1)
        w = _Matrix(v.wei_tensor, cols, c, False, c, 0)  # [(k, r, s), C]
        return product_call(w, col.t(), x, 1)  # dw[(k, r, s), C] = col^T x
    y = _activation(v, "out", v.out_tensor, k, True)
    if y is None or y.rows != rows:
        return None
    w = _Matrix(v.wei_tensor, k, cols, False, cols, 0)
    if v.direction == "F":  # y = col w^T
        return product_call(y, col, w.t(), 1)
    return product_call(w, y.t(), col, 1)  # dw[K, RSC] = dy^T col


def _case(problem: ConvProblem, math_mode: str) -> str:
    data_type = "TF32" if math_mode == "tf32" and problem.in_type == "FP32" else problem.in_type
    return f"{data_type}-{problem.key_direction}-{problem.in_layout}"


def im2col_first(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether the im2col form claims first place where the library is offered
    (IM2COL_FIRST): the case is listed and the side not gathered is as wide as it says."""
    least = IM2COL_FIRST.get(target.arch, {}).get(_case(problem, math_mode))
    if least is None or not library_offered():
        return False
    v, sizes, _ = _view(problem)
    return bool(im2col_spec().other_width(v.direction, sizes) >= least)


def _gathers(target: Target) -> bool:
    """Whether the gather's objects exist for `target`: an NVIDIA target of the Triton kernels,
    the Triton solvers on (MIOPENKERNELS_TRITON)."""
    return target.vendor == "nvidia" and triton_solvers_enabled() and \
        target_kind(target.arch) is not None and has_kernels_spec(SPEC)


@lru_cache(maxsize=64)
def gather_job(data_type: str, target: Target) -> CompileJob:
    """The gather's object of a type."""
    spec = im2col_spec()
    sig, constexprs = spec.gather_signature(data_type)
    return spec_compile_job(GATHER_FILE, spec, spec.GATHER, sig, constexprs,
                            {"num_warps": spec.GATHER_WARPS, "num_stages": 1}, target, False)


def _gather_launch(spec: Any, src: str, dst: str, values: dict[str, int],
                   grid: tuple[int, int, int]) -> Launch:
    args = [kernel_arg("src_ptr", "ptr:" + src, None), kernel_arg("col_ptr", "ptr:" + dst, None)]
    args += [kernel_arg(name, "i32", int(values[name])) for name, kind in
             spec.ARGS[spec.GATHER] if kind == "i32"]
    return Launch(spec.GATHER, (int(grid[0]), int(grid[1]), 1), (spec.GATHER_WARPS * 32, 1, 1),
                  (*args, *scratch_args()), needs_meta=True)


class ConvBlasIm2col(WorkspaceParts, ConvBlasGemm1x1):
    """One direction (forward, backward data, backward weights) over a column matrix of the
    gathered side, the product one call of the GEMM library at one FP32 math."""

    def __init__(self, direction: str, math: str = "ieee") -> None:
        super().__init__(direction, math)
        infix = "Tf32" if math == "tf32" else ""
        self.name = f"ConvBlasIm2col{infix}{DIRECTION_SUFFIX[direction]}"

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or not _gathers(target):
            return False
        if not p.in_type == p.wei_type == p.out_type or \
                (self.math == "tf32" and p.in_type != "FP32"):
            return False
        return im2col_call(p) is not None

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        return im2col_first(problem, target, self.math)

    shapes = "a channels-last layer it gathers"

    def call(self, problem: ConvProblem) -> GemmCall | None:
        """The product over the column matrix (`im2col_call`): what `library_launch` runs
        after the gather and the ranking's features read."""
        return im2col_call(problem)

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        slots, total = im2col_spec().workspace_parts(problem.key_direction, _view(problem)[1],
                                                     problem.in_type, WORKSPACE_ALIGN)
        return dict(slots), int(total)

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return self._layout(problem, ())[1]

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The gathered side's column matrix into the workspace; for backward data the
        filters taps first before it (the same object)."""
        spec = im2col_spec()
        view, sizes, strides = _view(problem)
        direction = problem.key_direction
        job = gather_job(problem.in_type, target)
        source = view.in_tensor if spec.gathered(direction, sizes) == "x" else view.out_tensor
        launches = [(source, "ws_col", spec.gather_values(direction, sizes, strides),
                     spec.gather_grid(direction, sizes))]
        if direction == "B":
            launches.insert(0, (view.wei_tensor, "ws_w",
                                spec.filter_values(sizes, strides["w"]),
                                spec.filter_grid(sizes)))
        return tuple((job, _gather_launch(spec, *launch)) for launch in launches)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The gather's objects (one a type) on NVIDIA targets with the kernels: the build
        ships them though the solver itself is the library's."""
        if not _gathers(target):
            return []
        return [gather_job(t, target) for t in im2col_spec().TYPES]

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return super().heuristic_rank(problem, target) + 1.0


IM2COL_SOLVERS: list[Solver] = [ConvBlasIm2col(d, m) for m in ("ieee", "tf32")
                                 for d in ("F", "B", "W")]
