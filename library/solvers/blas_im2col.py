"""ConvBlasIm2col{,Tf32}{Fwd,Bwd,Wrw}: a 2-D or 3-D layer's forward, backward data (unit
stride) or backward weights as a column matrix of the gathered side and one call of the GEMM
library
(the algebra: kernels/conv_triton_im2col_spec.py): over the batch where the activations are
channels-last, a strided batch of a product per image where they are in channel planes
(backward weights' FP32 products then summed into dw by the reduce kernel).

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
   y = col w^T (forward), dx = col w[K*T*R*S, C] (backward data), dw[K, T*R*S*C] = dy^T col
   (x gathered), dw[(k, t, r, s), C] = col^T x (dy gathered); a 2-D layer is one of depth 1.
The column matrix costs a write and a read of T*R*S times the gathered side: the form pays
where the product is slow beside that (FP32 at IEEE accuracy) or the implicit GEMM far from
the library.

Nothing else is compiled. The solvers are the library's (`solvers.LIBRARY_SOLVERS`): a runtime
offers them where cuBLAS loads on an NVIDIA device, find times them beside the kernels, and
they claim first place where `im2col_first` says.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .._record import dataclass
from ..config import triton_solvers_enabled
from ..problem import ConvProblem
from ..target import Target
from ._conv import DIRECTION_SUFFIX, WORKSPACE_ALIGN, ConvView, conv_view
from .base import CompileJob, Launch, Params, Solver, WorkspaceParts
from .blas_1x1 import ConvBlasGemm1x1, _activation, gemm_call, library_offered
from .blas_call import GemmCall, _Matrix, product_call
from .triton_common import (
    has_kernels_spec,
    kernel_arg,
    kernels_spec,
    reduce_jobs,
    reduce_step,
    scratch_args,
    spec_compile_job,
    spec_sizes_3d,
    spec_strides_3d,
    spec_view,
    target_kind,
)

__all__ = ["ConvBlasIm2col", "IM2COL_SOLVERS", "IM2COL_FIRST", "Im2colPlan", "im2col_call",
           "im2col_first", "im2col_plan", "im2col_spec"]

SPEC = "conv_triton_im2col_spec"
GATHER_FILE = "conv_triton_im2col.py"

#: Per arch and case (`<type>-<direction>-<layout>`, the TF32 math's FP32 as TF32), where the
#: library's im2col form claims first place where it is offered: (the least channels on the
#: side not gathered, `conv_triton_im2col_spec.other_width`; the most columns of the column
#: matrix, `col_shape`, or None). Chosen by bench/im2col_claims.py from one H100 run of the
#: form beside immediate mode's first choice and the kernels (bench/gpu_im2col.sh:
#: bench/results/im2col_claims_h100-5f39bda.md), on the zoo's layers, the held-out networks'
#: apart; it claimed no case in FP16, where the gather cost more than the kernels' whole layer:
#: - FP32-W-NHWC: the stems' and latent layers' backward weights, 3x3 and 4x4 filters over 3-4
#:   channels to 64 or more (and dy's 3-4 to 64 or more), a matrix of at most 64 columns;
#:   the zoo's 72 timed layers 1.33 -> 1.04 of IEEE cuDNN's GPU time (29 claimed, 0.58 of
#:   the best other solver's time), the held-out networks' 8 none claimed;
#: - FP32-W-NDHWC: 3-D backward weights of 230 or more filters: 21 layers 1.23 -> 0.86 (16
#:   claimed), the held-out 6 0.77 -> 0.77 (4 claimed);
#: - FP32-B-NDHWC: 3-D backward data of 576 or more input channels: 15 layers 1.07 -> 1.03 (3
#:   claimed), the held-out 2 none claimed.
IM2COL_FIRST: dict[str, dict[str, tuple[int, int | None]]] = {
    "sm90": {"FP32-W-NHWC": (64, 64), "FP32-W-NDHWC": (230, None),
             "FP32-B-NDHWC": (576, None)},
}


def im2col_spec() -> Any:
    """`kernels/conv_triton_im2col_spec.py`: stdlib-only data of the transformation."""
    return kernels_spec(SPEC)


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], dict[str, tuple[int, ...]]]:
    """(view, spec sizes, spec strides): the 2-D spec's, or the 3-D families' (depth axes Z,
    D, T; strides in (n, c, d, h, w) order) for a 3-D layer."""
    if len(problem.in_spatial) == 2:
        view, sizes, strides = spec_view(problem)
        return view, sizes, dict(strides)
    view = conv_view(problem)
    return view, spec_sizes_3d(view), spec_strides_3d(view)


def _filter_order(v: ConvView) -> str | None:
    """"last" (packed K[T]RSC), "planar" (packed KC[T]RS) or None: the filters' memory, which
    is the column matrix's order of x's columns (and dw's, the product's output, in place)."""
    f = v.field
    c, t, r, s = f("c"), f("fil_d"), f("fil_h"), f("fil_w")
    strides = (f("ws_k"), f("ws_c"), f("ws_d"), f("ws_h"), f("ws_w"))
    if strides == (t * r * s * c, 1, r * s * c, s * c, c):
        return "last"
    return "planar" if strides == (c * t * r * s, t * r * s, r * s, s, 1) else None


@dataclass(frozen=True)
class Im2colPlan:
    """How a layer runs: the library's call, x's columns taps first (`filters_last`), and
    for channel-planar backward weights (`reduce`: the reduce kernel's TOTAL, C, R, S, swk,
    swc, swr, sws) each image's FP32 product summed into dw after."""

    call: GemmCall
    filters_last: bool
    reduce: tuple[tuple[str, int], ...] = ()


def _operand(v: ConvView, side: str, name: str, channels: int, n: int
             ) -> tuple[_Matrix, int] | None:
    """The pixels x channels matrix of x ("in") or y ("out") over the whole batch (a batch of
    one call) where it is channels-last, else per image (a batch of `n`), or None."""
    whole = _activation(v, side, name, channels, True)
    if whole is not None:
        return whole, 1
    each = _activation(v, side, name, channels, False)
    return (each, n) if each is not None else None


def _reduce_values(order: tuple[str, str, str, str], dims: dict[str, int],
                   strides: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The reduce's arguments for partials in dw's axes `order` (of "k", "c", "r", "s"; a
    3-D layer's depth taps folded into "r", which packed filters allow)."""
    d = [dims[a] for a in order]
    return (("TOTAL", d[0] * d[1] * d[2] * d[3]), ("C", d[1]), ("R", d[2]), ("S", d[3]),
            *zip(("swk", "swc", "swr", "sws"), (strides[a] for a in order), strict=True))


@lru_cache(maxsize=4096)
def im2col_plan(problem: ConvProblem) -> Im2colPlan | None:
    """The layer as a product over the column matrix (`ws_col`), or None where it is not one:
    not a 2-D or 3-D layer of one group that the spec takes (`conv_triton_im2col_spec.applies`),
    filters not packed (K[T]RSC, KC[T]RS), activations neither channels-last nor in channel planes,
    or a layer that is one call of the library as it is (a 1x1 filter, a filter over the
    whole input). Channels-last activations make it one call over the batch; channel planes a
    batch of a call per image, and for backward weights FP32 products summed after."""
    if len(problem.in_spatial) not in (2, 3) or not has_kernels_spec(SPEC):
        return None
    v, sizes, _ = _view(problem)
    spec = im2col_spec()
    order = _filter_order(v)
    if v.direction != problem.key_direction or order is None or \
            not spec.applies(v.direction, sizes, problem.in_type) or \
            gemm_call(problem) is not None:
        return None
    last = order == "last"
    n, k, c = sizes["N"], sizes["K"], sizes["C"]
    rows, cols = spec.col_shape(v.direction, sizes)
    side, other = ("out", (v.out_tensor, k)) if spec.gathered(v.direction, sizes) == "x" \
        else ("in", (v.in_tensor, c))
    found = _operand(v, side, *other, n)
    if found is None or found[0].rows * found[1] != rows:
        return None
    mat, batch = found
    col = _Matrix("ws_col", rows // batch, cols, False, cols, (rows // batch) * cols)
    if v.direction == "F":  # y = col w^T
        call = product_call(mat, col, _Matrix(v.wei_tensor, k, cols, False, cols, 0).t(), batch)
        return Im2colPlan(call, last) if call is not None else None
    if v.direction == "B":  # dx = col w', the filters taps first in the workspace
        call = product_call(mat, col, _Matrix("ws_w", cols, c, False, c, 0), batch)
        return Im2colPlan(call, last) if call is not None else None
    f = v.field
    dims = {"k": k, "c": c, "r": sizes.get("T", 1) * sizes["R"], "s": sizes["S"]}
    strides = {"k": f("ws_k"), "c": f("ws_c"), "r": f("ws_h"), "s": f("ws_w")}
    if side == "in":  # dy gathered: dw[(k, t, r, s), C] = col^T x
        axes: tuple[str, str, str, str] = ("k", "r", "s", "c")
        out_rows, out_cols, left, right = cols, c, col.t(), mat
    else:  # x gathered: dw[K, cols] = dy^T col
        axes = ("k", "r", "s", "c") if last else ("k", "c", "r", "s")
        out_rows, out_cols, left, right = k, cols, mat.t(), col
    if batch == 1:
        if side == "in" and not last:
            return None  # dw[(k, t, r, s), C] is dw's memory in K[T]RSC alone
        call = product_call(_Matrix(v.wei_tensor, out_rows, out_cols, False, out_cols, 0),
                            left, right, 1)
        return Im2colPlan(call, last) if call is not None else None
    if n * k * c * dims["r"] * dims["s"] * 4 > spec.MAX_COL_BYTES:
        return None
    part = _Matrix("ws_part", out_rows, out_cols, False, out_cols, out_rows * out_cols)
    call = product_call(part, left, right, batch, "FP32")
    return Im2colPlan(call, last, _reduce_values(axes, dims, strides)) \
        if call is not None else None


def im2col_call(problem: ConvProblem) -> GemmCall | None:
    """The library call of the layer's product (`im2col_plan`), or None."""
    plan = im2col_plan(problem)
    return plan.call if plan is not None else None


def _case(problem: ConvProblem, math_mode: str) -> str:
    data_type = "TF32" if math_mode == "tf32" and problem.in_type == "FP32" else problem.in_type
    return f"{data_type}-{problem.key_direction}-{problem.in_layout}"


def im2col_first(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether the im2col form claims first place where the library is offered
    (IM2COL_FIRST): the case is listed, the side not gathered is as wide as it says and the
    column matrix no wider."""
    claim = IM2COL_FIRST.get(target.arch, {}).get(_case(problem, math_mode))
    if claim is None or not library_offered():
        return False
    least, columns = claim
    v, sizes, _ = _view(problem)
    spec = im2col_spec()
    return bool(spec.other_width(v.direction, sizes) >= least and
                (columns is None or spec.col_shape(v.direction, sizes)[1] <= columns))


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

    shapes = "a 2-D or 3-D layer it gathers (packed filters, channels-last or channel-planar " \
        "activations)"

    def call(self, problem: ConvProblem) -> GemmCall | None:
        """The product over the column matrix (`im2col_call`): what `library_launch` runs
        after the gather and the ranking's features read."""
        return im2col_call(problem)

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        plan = im2col_plan(problem)
        slots, total = im2col_spec().workspace_parts(
            problem.key_direction, _view(problem)[1], problem.in_type, WORKSPACE_ALIGN,
            bool(plan is not None and plan.reduce))
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
        plan = im2col_plan(problem)
        assert plan is not None, problem.key()
        job = gather_job(problem.in_type, target)
        source = view.in_tensor if spec.gathered(direction, sizes) == "x" else view.out_tensor
        launches = [(source, "ws_col",
                     spec.gather_values(direction, sizes, strides, plan.filters_last),
                     spec.gather_grid(direction, sizes))]
        if direction == "B":
            launches.insert(0, (view.wei_tensor, "ws_w",
                                spec.filter_values(sizes, strides["w"]),
                                spec.filter_grid(sizes)))
        return tuple((job, _gather_launch(spec, *launch)) for launch in launches)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Channel-planar backward weights: the images' FP32 products summed into dw (the
        reduce kernel of the implicit GEMM's split launches)."""
        plan = im2col_plan(problem)
        if plan is None or not plan.reduce:
            return ()
        return (reduce_step(problem.in_type, problem.n, target, _view(problem)[0].wei_tensor,
                            dict(plan.reduce)),)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The gather's objects (one a type) on NVIDIA targets with the kernels, and the
        reduce's (the implicit GEMM's, which the package holds anyway): the build ships them
        though the solver itself is the library's."""
        if not _gathers(target):
            return []
        types = im2col_spec().TYPES
        return [*(gather_job(t, target) for t in types),
                *(job for t in types for job in reduce_jobs(t, target))]

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return super().heuristic_rank(problem, target) + 1.0


IM2COL_SOLVERS: list[Solver] = [ConvBlasIm2col(d, m) for m in ("ieee", "tf32")
                                 for d in ("F", "B", "W")]
