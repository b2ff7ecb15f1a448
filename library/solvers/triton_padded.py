"""ConvTritonImplicitGemmPadded{Fwd,Bwd,Wrw}: odd channel counts on the aligned objects.

A 16-bit channels-last implicit GEMM object either assumes its channel counts and strides
multiples of 8 (`conv_triton_spec.align_divisor`), and loads 16-byte vectors, or assumes
nothing and loads one element at a time. A layer whose input channels or filters are not
multiples of 8 (RetinaNet's 819- and 36-filter heads, YOLO's 255, a VAE's 3-channel output,
(2+1)-D's 45, 230 and 460) took the generic object, at up to 20-70x cuDNN's GPU time on the
H200 (bench/results/zoo_h200-sample3.json). These solvers copy each tensor whose channel count
is not a multiple of 8 into the workspace with its channels rounded up and the new ones zero
(`kernels/conv_triton_pad.py`), run the implicit GEMM's aligned object on that padded problem
with the same parameters, and copy the output's real channels back: zero channels add nothing
to a sum, and the padded output's extra channels are dropped. Where the implicit GEMM splits
its reduction, its reduce launch sums the parts into the padded output first.

Every conv object is the implicit GEMM's own on the padded problem (`compile_job`); a package
adds the copy's objects (one per element type and tile, `dynamic_jobs`). The parameters, their
defaults and the ranking's model are the implicit GEMM's (`ranking_name`). They take 2-D
channels-last problems of one group in FP16 and BF16 whose padded problem meets the aligned
objects' assumption; in the miss ranking they go ahead of the implicit GEMM on the spec's
FIRST_KINDS for problems of MIN_PIXELS output pixels or more (below that the copies' launches
cost more than they save, unless each output sums a long enough reduction:
SMALL_FIRST_REDUCTION), after the Via, Winograd, 1x1, depthwise and grouped families where
those claim a problem (the registry's YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import workspace_round
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    PAD_SPEC,
    have_kernels,
    kernel_arg,
    kernels_spec,
    padded_problem,
    problem_view,
    scratch_args,
    spec_kind,
    spec_module,
    target_kind,
    triton_compile_job,
)
from .triton_conv_relayout import _SLOTS, ConvTritonImplicitGemmRelayout

__all__ = ["ConvTritonImplicitGemmPadded", "PADDED_SOLVERS", "pad_job", "pad_step", "padded_first",
           "padded_problem"]

KERNEL_FILE = "conv_triton_pad.py"
SPEC = PAD_SPEC


def pad_spec() -> Any:
    """`kernels/conv_triton_pad_spec.py`: stdlib-only launch data of the copy."""
    return kernels_spec(SPEC)


def pad_job(data_type: str, target: Target, tile: tuple[int, int]) -> CompileJob:
    """The copy's object of one element type and tile."""
    spec = pad_spec()
    sig, constexprs = spec.signature(data_type, tile)
    return triton_compile_job(KERNEL_FILE, spec.KERNEL, sig, constexprs, spec.WARPS, 1, target)


def pad_step(data_type: str, target: Target, src: str, dst: str, rows: int, cols: int,
             src_stride: int, dst_rows: int, dst_cols: int, dst_stride: int
             ) -> tuple[CompileJob, Launch]:
    """`pad_rows` from `src` ([rows][cols], rows `src_stride` apart) into `dst`
    ([dst_rows][dst_cols], rows `dst_stride` apart, zero where `src` has nothing): its object
    and launch."""
    spec = pad_spec()
    tile = spec.tile(dst_cols)
    args = (kernel_arg("src_ptr", "ptr:" + src, None),
            kernel_arg("dst_ptr", "ptr:" + dst, None), kernel_arg("ROWS", "i32", rows),
            kernel_arg("COLS", "i32", cols), kernel_arg("SRC_STRIDE", "i32", src_stride),
            kernel_arg("DST_ROWS", "i32", dst_rows), kernel_arg("DST_COLS", "i32", dst_cols),
            kernel_arg("DST_STRIDE", "i32", dst_stride), *scratch_args())
    launch = Launch(spec.KERNEL, spec.grid(dst_rows, dst_cols), (int(spec.WARPS) * 32, 1, 1),
                    args, needs_meta=True)
    return pad_job(data_type, target, tile), launch


@lru_cache(maxsize=4096)
def _copies(problem: ConvProblem) -> dict[str, tuple[int, int, int, int]]:
    """The tensors (x, w, y: the implicit GEMM's names) whose padded form differs, each as
    (rows, channels, padded rows, padded channels): activations are [pixels][channels], KRSC
    weights [filters x taps][channels]."""
    p, q = problem, padded_problem(problem)
    taps = p.filter[0] * p.filter[1]
    pixels_in = p.n * p.in_spatial[0] * p.in_spatial[1]
    pixels_out = p.n * p.out_spatial[0] * p.out_spatial[1]
    out = {}
    if q.c != p.c:
        out["x"] = (pixels_in, p.c, pixels_in, q.c)
    if (q.c, q.k) != (p.c, p.k):
        out["w"] = (p.k * taps, p.c, q.k * taps, q.c)
    if q.k != p.k:
        out["y"] = (pixels_out, p.k, pixels_out, q.k)
    return out


class ConvTritonImplicitGemmPadded(ConvTritonImplicitGemmRelayout):
    """One direction of the Triton implicit GEMM for channels-last problems of channel counts
    that are not multiples of 8, through the aligned objects of the padded problem."""

    def __init__(self, direction: str) -> None:
        super().__init__(direction, "ieee", "NHWC")
        self.name = f"{self.inner.name[:-3]}Padded{self.inner.name[-3:]}"  # ...PaddedFwd

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On the spec's FIRST_KINDS, for problems of MIN_PIXELS output pixels or more, and
        smaller ones whose reduction per output element is at least the direction's
        SMALL_FIRST_REDUCTION (forward C*R*S, backward data K*R*S)."""
        spec = pad_spec()
        if target_kind(target.arch) not in spec.FIRST_KINDS:
            return False
        pixels = problem.n * problem.out_spatial[0] * problem.out_spatial[1]
        taps = problem.filter[0] * problem.filter[1]
        reduction = {"F": problem.c, "B": problem.k}.get(self.direction, 0) * taps
        least = spec.SMALL_FIRST_REDUCTION.get(self.direction)
        return pixels >= spec.MIN_PIXELS or (least is not None and reduction >= least)

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        return padded_problem(problem)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.mode != "conv" or len(p.in_spatial) != 2 or \
                p.groups != 1 or not p.in_layout == p.wei_layout == p.out_layout == "NHWC":
            return False
        if spec_kind(target, SPEC) is None or \
                not p.in_type == p.wei_type == p.out_type or p.in_type not in pad_spec().TYPES:
            return False
        copies = _copies(p)
        if not copies or not all(pad_spec().fits(rows, c, c, rows2, c2, c2) and
                                 pad_spec().fits(rows, c, c2, rows, c, c)
                                 for rows, c, rows2, c2 in copies.values()):
            return False
        q = padded_problem(p)
        if not self.inner.is_applicable(q, target):
            return False
        # The padded problem must take an aligned object of a kernel that reads channels in
        # vectors: a few-channel kernel's assumes y's side alone, and its own problem takes it
        # without the copies (padding a stem's 3 channels to 8 cost 3-4x the kernel's time).
        spec = spec_module()
        _, args, kernel, channels_last = problem_view(q)
        return channels_last and not spec.KERNELS[kernel].get("few_channels") and \
            True in spec.align16_variants(kernel, channels_last, q.in_type) and \
            bool(spec.meets_align16(args, channels_last, q.in_type, kernel))

    # ------------------------------------------------------------------ kernels
    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The copy's objects, per element type and tile (the conv objects are the implicit
        GEMM's)."""
        if spec_kind(target, SPEC) is None or self._kind(target) is None or \
                not spec_for(target.arch).matrix:
            return []
        return [pad_job(t, target, tile) for t in pad_spec().TYPES
                if self._type_applicable(t, target) for tile in pad_spec().TILES]

    # ------------------------------------------------------------------ workspace
    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """({slot: byte offset}, total bytes) of the workspace: the padded copies
        (`_copies`, the output's included: a reduce launch sums into it), then the
        implicit GEMM's own partial sums."""
        elem = int(spec_module().ELEMENT_BYTES[problem.in_type])
        offsets: dict[str, int] = {}
        at = 0
        for tensor, (_, _, rows, cols) in _copies(problem).items():
            offsets[_SLOTS[tensor]] = at
            at += workspace_round(rows * cols * elem)
        part = self.inner.workspace_for(self._relaid(problem), params)
        offsets[_SLOTS["part"]] = at if part else 0  # unused without a split: any address
        return offsets, at + workspace_round(part)

    # ------------------------------------------------------------------ launches
    def _copy(self, problem: ConvProblem, target: Target, src: str, dst: str,
              rows: int, cols: int, src_stride: int, dst_rows: int, dst_cols: int,
              dst_stride: int) -> tuple[CompileJob, Launch]:
        return pad_step(problem.in_type, target, src, dst, rows, cols, src_stride, dst_rows,
                        dst_cols, dst_stride)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Each tensor the kernel reads whose channels change, padded into its workspace
        part."""
        copies = _copies(problem)
        names = self._names(problem)
        reads = spec_module().KERNELS[self._kernel(problem)]["reads"]
        return tuple(self._copy(problem, target, names[t], _SLOTS[t], rows, cols, cols,
                                rows2, cols2, cols2)
                     for t, (rows, cols, rows2, cols2) in copies.items() if t in reads)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target,
                   partials_channels_last: bool | None = None
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The implicit GEMM's reduce on the padded problem (partials and output in the
        workspace), then the output's real channels into the caller's tensor."""
        out = spec_module().KERNELS[self._kernel(problem)]["writes"][0]
        names = self._names(problem)
        steps = self._inner_follow_ups(problem, params, target)
        if out in _copies(problem):
            rows, cols, _, cols2 = _copies(problem)[out]
            steps.append(self._copy(problem, target, _SLOTS[out], names[out], rows, cols,
                                    cols2, rows, cols, cols))
        return tuple(steps)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """The implicit GEMM's estimate on the padded problem plus the copies (after the
        direct solver on a tie)."""
        return self.inner.heuristic_rank(self._relaid(problem), target) + 1.0


def padded_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a padded solver claims the problem (the registry's FIRST_CLAIMS)."""
    return any(s.is_applicable(problem, target) and s.claims_first(problem, target)
               for s in PADDED_SOLVERS)


def _padded_solvers() -> list[Solver]:
    """One per direction (none without the kernels or the copy's spec)."""
    from .triton_common import has_kernels_spec

    if not have_kernels() or not has_kernels_spec(SPEC):
        return []
    return [ConvTritonImplicitGemmPadded(d) for d in ("F", "B", "W")]


PADDED_SOLVERS: list[Solver] = _padded_solvers()


def padded_copied_per_image(problem: ConvProblem) -> tuple[int, ...]:
    """Elements per image of the activations' padded copies (x, y): the batch-chunk solvers
    over these size chunks by them too."""
    return tuple(rows2 * cols2 // problem.n for t, (_, _, rows2, cols2)
                 in _copies(problem).items() if t != "w")
