"""ConvTriton3dSmallC{Fwd,Bwd,Wrw}: 3-D convolutions of few input channels, their reduction over
taps and channels flattened (kernels/conv_triton_3d_smallc.py).

The 3-D implicit GEMM (solvers/triton_3d.py) steps its reduction a tap and BLOCK_K channels
at a time, so a 1-channel volume fills 1 of 16 columns a step, and the relaid solvers that
pad the channel to 16 write and read 16x the input; 3D U-Net's first layer (1 -> 32 channels,
128^3, batch 32) took 5-6x cuDNN's GPU time forward and 11x in backward weights on the H200,
the 3-channel video stems 2-5x in backward weights (bench/results/zoo_h200-fbw-50040be).
These solvers run the flattened kernels on problems of at most MAX_C channels a group
(`spec.few_channels`), every direction, FP16, BF16 and FP32 (IEEE), NCDHW and
NDHWC, any stride, padding, dilation and groups, transposed problems through the plain
convolution's opposite direction (`conv_view`), on every matrix-core kind of the 3-D spec's.

A package ships per type and direction the generic object (CHANNELS_LAST=0, any strides, no
alignment), forward also its channels-last one for 16-bit NDHWC problems, and aligned objects
of the packed layouts (`spec.layout_of`, `spec.ALIGNED_LAYOUTS`), which a problem whose sizes
and strides meet their assumptions (`spec.meets_aligned`) runs, its pointers permitting (else
the objects above). Measured through the runtime on the H200 (FP16, batch 16,
bench/results/smallc_runtime_aligned_h200.json against smallc_runtime_generic_h200.json), 3D
U-Net's first layer: forward 5.8 -> 2.1 ms NCDHW, backward weights 5.1 -> 3.1 ms NDHWC;
r3d_18's stem backward weights 4.4 -> 1.0 ms NDHWC.

Backward weights split the positions to fill the GPU (`spec.split_for`, up to 1,024 parts);
the partials' reduce is the 2-D family's. Backward data (where the taps' products a position
are no more than dy's filters: `spec.products_pay`) runs two kernels: the taps' products of
dy (the main launch, into the workspace: `spec.products_bytes`, at most `spec.WS_LIMIT`) and
their gather into dx (a follow-up, one object per type and layout); where a batch's products
exceed the limit, the chunk solver runs them a chunk of images at a time. The parameters are
the implicit GEMM's seven; they rank first on every problem they take (the registry's
YIELDS_TO puts the 3-D family and its relaid solvers after them), and
ConvTriton3dSmallCChunks{Fwd,Bwd,Wrw} run them a batch chunk at a time where a tensor holds
2**31 elements or more (solvers/triton_chunks.py's `BatchChunks`), or backward data's products
exceed the limit.

ConvTritonSmallC{Fwd,Bwd,Wrw} and ConvTritonSmallCChunks{Fwd,Bwd,Wrw} run the same objects on
2-D problems of one group (a depth of one); the 2-D implicit GEMM and its padded, Via and
chunk solvers give way to them where `spec.first_2d` says (measured on the H200:
bench/results/alternatives_smallc2d_h200.json).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..problem import TYPE_BYTES, ConvProblem
from ..target import Target
from ._conv import DIRECTION_SUFFIX, conv_view
from .base import CompileJob, Launch, Params, Solver, family_claims
from .triton_3d import ConvTriton3d, _view
from .triton_chunks import BatchChunks, chunking, per_image
from .triton_common import (
    aligned_object,
    has_kernels_spec,
    have_kernels,
    kernels_spec,
    params_of,
    reduce_jobs,
    spec_compile_job,
    spec_kernel_args,
    spec_kind,
    target_kind,
)
from .triton_conv_relayout import via_layout

__all__ = ["ConvTriton3dSmallC", "ConvTriton3dSmallCChunks", "ConvTritonSmallC",
           "ConvTritonSmallCChunks", "SMALLC_3D_SOLVERS", "smallc_2d_chunks_first",
           "smallc_2d_first", "smallc_first", "spec_smallc"]

KERNEL_FILE = "conv_triton_3d_smallc.py"
_SPEC = "conv_triton_3d_smallc_spec"


def spec_smallc() -> Any:
    """`kernels/conv_triton_3d_smallc_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec(_SPEC)


@lru_cache(maxsize=256)
def _job(direction: str, data_type: str, config: tuple[tuple[str, int], ...], last: int,
         target: Target, aligned: bool = False) -> CompileJob:
    """One object: `last` its CHANNELS_LAST, aligned where it assumes that layout's
    alignment."""
    spec = spec_smallc()
    values = dict(config)
    sig, constexprs = spec.signature(direction, data_type, values, last, "ieee")
    return spec_compile_job(KERNEL_FILE, spec, spec.KERNEL[direction], sig, constexprs,
                            values, target, aligned, spec.align_divisor(data_type),
                            spec.ALIGNED_ARGS.get(last, ()))


@lru_cache(maxsize=16)
def _gather_job(data_type: str, target: Target, aligned: int = 0) -> CompileJob:
    """Backward data's gather object of a type (`spec.GATHER_CONFIG`): the generic one, or
    the aligned one of a layout."""
    spec = spec_smallc()
    sig, constexprs = spec.gather_signature(data_type, aligned)
    return spec_compile_job(KERNEL_FILE, spec, spec.GATHER, sig, constexprs,
                            dict(spec.GATHER_CONFIG), target, bool(aligned),
                            spec.align_divisor(data_type), spec.ALIGNED_ARGS.get(aligned, ()))


class ConvTriton3dSmallC(ConvTriton3d):
    """One direction of the few-channel 3-D kernels."""

    kernel_file = KERNEL_FILE
    clears_phases = False  # backward data: its products and their gather write every phase

    def __init__(self, direction: str) -> None:
        super().__init__(direction, "ieee")
        self.name = f"ConvTriton3dSmallC{DIRECTION_SUFFIX[direction]}"

    def _kind(self, target: Target) -> str | None:
        kind = super()._kind(target)
        return kind if kind is not None and spec_kind(target, _SPEC) is not None else None

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if problem.in_type not in spec_smallc().TYPES or not super().is_applicable(problem,
                                                                                    target):
            return False
        view, sizes, _, _ = _view(problem)
        if view.direction == "B" and (not spec_smallc().products_pay(sizes) or
                                      spec_smallc().products_bytes(sizes) >
                                      spec_smallc().WS_LIMIT):
            return False  # the 3-D family's, or the chunk solver's
        return bool(spec_smallc().few_channels(sizes))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Every problem it takes (at most MAX_C channels a group)."""
        return True

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        return [params_of(c) for c in spec_smallc().legal_space(
            conv_view(problem).direction, problem.in_type, kind)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in spec_smallc().KINDS:
            return False
        try:
            config = self._config(tuple(int(v) for v in params))
        except (TypeError, ValueError):
            return False
        except Exception:  # noqa: BLE001 - a malformed set is not valid
            return False
        return bool(spec_smallc().legal(conv_view(problem).direction, config,
                                        problem.in_type, kind))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The type's usual tile for the direction fitted to the target's kind, narrow where
        the filters are few (`spec.narrow_tile`); backward weights split to fill the target's
        CUs (`spec.split_for`)."""
        kind = target_kind(target.arch)
        if kind is None or kind not in spec_smallc().KINDS:
            kind = "sm90"
        view, sizes, _, _ = _view(problem)
        tile = spec_smallc().narrow_tile(view.direction, spec_smallc().usual_tile(
            problem.in_type, view.direction, problem.in_type, kind), sizes, problem.in_type,
            kind)
        if view.direction == "W":
            tile["SPLIT_K"] = spec_smallc().split_for(sizes, tile, target.cu)
        return params_of(tile)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Backward weights at a quarter and four times the default split."""
        default = self.default_params(problem, target)
        if conv_view(problem).direction != "W":
            return []
        at = 4  # SPLIT_K's position in the parameters
        out: list[Params] = []
        for split in (max(1, default[at] // 4), min(spec_smallc().SPLITS[-1], default[at] * 4)):
            params = default[:at] + (split,) + default[at + 1:]
            if params != default and params not in out:
                out.append(params)
        return out

    # ------------------------------------------------------------------ kernels
    def _aligned_layout(self, problem: ConvProblem) -> int:
        """The aligned objects' layout the problem meets (`spec.layout_of`, its sizes and
        strides `spec.meets_aligned`), else 0."""
        spec = spec_smallc()
        view, sizes, strides, _ = _view(problem)
        layout = spec.layout_of(strides)
        args = spec.arg_values(view.direction, sizes, strides)
        return layout if spec.meets_aligned(view.direction, args, layout,
                                            problem.in_type) else 0

    def _aligned(self, problem: ConvProblem) -> bool:
        return self._aligned_layout(problem) != 0

    def _job(self, problem: ConvProblem, params: Params, aligned: bool, target: Target
             ) -> CompileJob:
        config = tuple(sorted({**self._config(tuple(params)), "SPLIT_K": 1}.items()))
        direction = conv_view(problem).direction
        if aligned:
            return _job(direction, problem.in_type, config, self._aligned_layout(problem),
                        target, True)
        last = direction == "F" and _view(problem)[3] and problem.in_type != "FP32"
        return _job(direction, problem.in_type, config, int(last), target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Per type the usual tile's generic object (CHANNELS_LAST=0) and aligned ones of the
        direction's layouts (`spec.ALIGNED_LAYOUTS`), in forward also its narrow variant's and
        for 16-bit types both tiles' unaligned channels-last ones, in backward weights the
        reduce kernel's, in backward data the gather's (generic and aligned)."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = spec_smallc()
        jobs: list[CompileJob] = []
        for data_type in spec.TYPES:
            if not self._type_applicable(data_type, target):
                continue
            tile = spec.usual_tile(data_type, self.direction, data_type, kind)
            forward = self.direction == "F"
            for t in (tile, spec.narrow_of(tile, data_type, kind)) if forward else (tile,):
                config = tuple(sorted(t.items()))
                lasts = (0, 1) if forward and data_type != "FP32" else (0,)
                jobs += [_job(self.direction, data_type, config, last, target)
                         for last in lasts]
                jobs += [_job(self.direction, data_type, config, layout, target, True)
                         for layout in spec.ALIGNED_LAYOUTS[self.direction]]
            if self.direction == "W":
                jobs += reduce_jobs(data_type, target)
            if self.direction == "B":
                jobs += [_gather_job(data_type, target, layout)
                         for layout in (0, *spec.ALIGNED_LAYOUTS["B"])]
        return jobs

    # ------------------------------------------------------------------ launches
    def _spec(self) -> Any:
        return spec_smallc()

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The 3-D family's (backward weights split in parts: the reduce kernel sums the
        partials into dw); backward data: the gather of the taps' products into dx."""
        view, sizes, strides, _ = _view(problem)
        if view.direction != "B":
            return super().follow_ups(problem, params, target)
        spec = spec_smallc()
        gather = Launch(spec.GATHER, spec.gather_grid(sizes),
                        (int(spec.GATHER_CONFIG["num_warps"]) * 32, 1, 1),
                        spec_kernel_args(spec, "B", view, sizes, strides), needs_meta=True)
        return ((_gather_job(problem.in_type, target, self._aligned_layout(problem)), gather),)

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[tuple[CompileJob, Launch], ...]:
        """`follow_ups` on the generic gather (the caller's pointers miss the alignment)."""
        pairs = self.follow_ups(problem, params, target)
        if conv_view(problem).direction != "B":
            return pairs
        return tuple((_gather_job(problem.in_type, target), launch) for _, launch in pairs)


class ConvTriton3dSmallCChunks(BatchChunks, ConvTriton3dSmallC):
    """One direction of the few-channel 3-D kernels for a problem too large for 32-bit
    offsets, a chunk of images at a time."""

    dims = 3

    def __init__(self, direction: str) -> None:
        super().__init__(direction)
        self.inner = ConvTriton3dSmallC(direction)
        self.name = f"ConvTriton3dSmallCChunks{DIRECTION_SUFFIX[direction]}"

    def _chunking(self, problem: ConvProblem) -> tuple[int, int, bool] | None:
        """`chunking`'s, and in backward data at most the images whose taps' products fit
        `spec.WS_LIMIT` a chunk (aligned where every chunk's offsets are multiples of 256
        bytes); None where the batch's fit and every tensor does, or one image's do not."""
        got = chunking(problem, self._copied(problem))
        if self.direction != "B":
            return got
        spec = spec_smallc()
        most = spec.WS_LIMIT // max(1, spec.products_bytes({**_view(problem)[1], "N": 1}))
        if most < 1:
            return None
        images = min(got[0] if got else problem.n, most)
        if got is None and images >= problem.n:
            return None
        # The aligned objects stay legal where every chunk starts a multiple of 256 bytes in.
        aligned = (got is None or got[2]) and all(
            images * count * TYPE_BYTES[problem.in_type] % 256 == 0
            for count in per_image(problem))
        return images, spec.cdiv(problem.n, images), aligned


#: Whether the 2-D kernels claim FP32 backward weights: no. Over the zoo's 2-D layers of 1-4
#: channels (H200, batch 32, both layouts: bench/results/fewk_h200-035369f/stems_wrw.json)
#: the three-product implicit GEMM took 0.80-3.01 of IEEE cuDNN's GPU time where they took
#: 1.84-6.39, faster on all 56 (their claims were measured in FP16;
#: tests/unit/test_bench_fewk_h200.py recomputes the figures).
FP32_WRW_FIRST = False


class ConvTritonSmallC(ConvTriton3dSmallC):
    """One direction of the few-channel kernels on 2-D problems (a depth of one, a filter
    of one tap deep), one group: the 3-D solver's objects, parameters and ranking weights;
    a name of its own in the databases."""

    dims = 2

    def __init__(self, direction: str) -> None:
        super().__init__(direction)
        self.name = f"ConvTritonSmallC{DIRECTION_SUFFIX[direction]}"

    @property
    def ranking_name(self) -> str:
        return f"ConvTriton3dSmallC{DIRECTION_SUFFIX[self.direction]}"

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        return problem.groups == 1 and super().is_applicable(problem, target)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where they measured faster than the 2-D implicit GEMM (`spec.first_2d`); `alone`:
        a 16-bit problem that no other layout's path (the Via solvers) takes; `aligned_2d`: a
        16-bit problem that the 2-D kernel's aligned object takes. Not FP32 backward
        weights (FP32_WRW_FIRST)."""
        view, sizes, _, channels_last = _view(problem)
        if view.direction == "W" and problem.in_type == "FP32" and not FP32_WRW_FIRST:
            return False
        sixteen = problem.in_type in ("FP16", "BF16")
        alone = sixteen and via_layout(problem, target, "ieee") is None
        aligned_2d = sixteen and aligned_object(problem)
        return bool(spec_smallc().first_2d(view.direction, sizes, channels_last, alone,
                                           aligned_2d))

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        return []  # the 3-D solvers'


class ConvTritonSmallCChunks(ConvTriton3dSmallCChunks):
    """`ConvTritonSmallC` a batch chunk at a time (as ConvTriton3dSmallCChunks)."""

    dims = 2

    def __init__(self, direction: str) -> None:
        super().__init__(direction)
        self.inner = ConvTritonSmallC(direction)
        self.name = f"ConvTritonSmallCChunks{DIRECTION_SUFFIX[direction]}"

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """The inner solver's claim on the first chunk (the 2-D implicit GEMM also takes
        its problems)."""
        return self.inner.claims_first(self._relaid(problem), target)


def smallc_2d_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a 2-D few-channel solver claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims(SMALLC_3D_SOLVERS, ConvTritonSmallC, problem, target)


def smallc_2d_chunks_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a 2-D few-channel chunk solver claims the problem (FIRST_CLAIMS)."""
    return family_claims(SMALLC_3D_SOLVERS, ConvTritonSmallCChunks, problem, target)


def smallc_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a few-channel solver claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims(SMALLC_3D_SOLVERS, ConvTriton3dSmallC, problem, target)


def smallc_chunks_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a few-channel chunk solver claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims(SMALLC_3D_SOLVERS, ConvTriton3dSmallCChunks, problem, target)


def _smallc_solvers() -> list[Solver]:
    if not have_kernels() or not has_kernels_spec(_SPEC):
        return []
    return [*(ConvTriton3dSmallC(d) for d in ("F", "B", "W")),
            *(ConvTriton3dSmallCChunks(d) for d in ("F", "B", "W")),
            *(ConvTritonSmallC(d) for d in ("F", "B", "W")),
            *(ConvTritonSmallCChunks(d) for d in ("F", "B", "W"))]


SMALLC_3D_SOLVERS: list[Solver] = _smallc_solvers()
