"""ConvTritonFmaFewKBwd and ConvTritonFmaBwd: backward data of 2-D layers as a direct forward
on the FP32 units on flipped filters (kernels/conv_triton_flip.py, then
kernels/conv_triton_fewk.py or kernels/conv_triton_fma.py; launch data in
kernels/conv_triton_fewk_bwd_spec.py and the forward kernels' specs): layers of 1-8 input
channels through the few-filter forward, layers of 1-4 filters through the few-channel one.
At a stride over 1, one launch of the forward object per phase of dx's rows and columns
(`conv_triton_fewk_bwd_spec.phases`: each phase's taps, a forward at stride 1 into a strided
view of dx); the first is the main launch, the others its follow-ups.

dx of a layer whose input has 1-8 channels (a UNet's or a VAE decoder's latent input,
4 -> 320 or 4 -> 512 at 3x3) is a GEMM 1-8 columns wide: the implicit GEMM pads them to a
matrix-core block and, in FP32 at IEEE accuracy, runs each product as three TF32 ones
(5.1-6.9x IEEE cuDNN's GPU time on the H100: bench/results/fewk_h100-6a76905/
zoo_fp32_bw.json). At stride 1 it is the forward convolution of dy with the filters flipped
and transposed (`conv_triton_fewk_bwd_spec.as_forward`): the few-filter forward's problem,
whose kernel took 0.51 (channels-last) and 0.81 (channel-planar) of cuDNN's forward on the
UNet's 320 -> 4 output, the same sizes (bench/results/fewk_h100-6a76905/alt.json). A small
lead-in writes the flipped filters into the workspace, in the layout the forward object
reads; the forward kernel's objects are the few-filter forward solver's (no objects of its
own but the flip's). Its sums are FP32 fused multiply-adds (IEEE FP32 whatever the math).

dx of a layer of 1-4 filters (a UNet's or a VAE decoder's output, 320 -> 4 or 128 -> 3) is
the other side's case: the forward of dy (1-4 channels) on the flipped filters is an image
stem's problem, which the few-channel forward (ConvTritonFmaFwd) took at 1.05-1.07 (NHWC) and
0.95-1.08 (NCHW) of cuDNN's forward on the same sizes (the VAE encoder's conv_in and the
UNet's conv_in: bench/results/fewk_h100-6a76905/zoo.json), where the three-product implicit
GEMM took 2.82-2.98 (NHWC) and 1.56-1.69 (NCHW) of cuDNN's backward data (zoo_fp32_bw.json).

The miss ranking puts them first, at stride 1, where the forward kernel would rank first on
the forward problem (the few-filter spec's `claims`: sm90, channels-last, a grid that fills
the GPU or a short reduction, from 256 channels of dy; the few-channel spec's FIRST_KINDS)
and the filters have more than one tap, ahead of the implicit GEMM and its Via and padded
solvers and the few-channel kernels (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import TYPE_BYTES, ConvProblem
from ..target import Target, spec_for
from ._conv import ConvView, conv_view, macs
from .base import CompileJob, Launch, Params, Solver, family_claims
from .blas_1x1 import narrow_pointwise
from .triton_common import (
    config_of,
    kernel_arg,
    kernels_spec,
    params_of,
    scratch_args,
    spec_compile_job,
    spec_kind,
    spec_sizes,
    spec_strides,
    target_kind,
)
from .triton_fma import FEWK_KERNEL_FILE, FEWK_SPEC
from .triton_fma import KERNEL_FILE as STEM_KERNEL_FILE
from .triton_fma import SPEC as STEM_SPEC
from .triton_fma import _job as _forward_job

__all__ = ["ConvTritonFmaBwd", "ConvTritonFmaFewKBwd", "FMA_BWD_SOLVERS", "fewk_bwd_first",
           "fewk_bwd_spec", "stem_bwd_first"]

SPEC = "conv_triton_fewk_bwd_spec"
FLIP_FILE = "conv_triton_flip.py"
SLOT = "ws_w"  # the flipped filters' workspace part


def fewk_bwd_spec() -> Any:
    """`kernels/conv_triton_fewk_bwd_spec.py`: stdlib-only data of the transformation."""
    return kernels_spec(SPEC)


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                         dict[str, tuple[int, int, int, int]], bool,
                                         dict[str, int], dict[str, tuple[int, int, int, int]]]:
    """(view, sizes, strides, channels-last, and the forward problem's sizes and strides)."""
    view = conv_view(problem)
    sizes, strides = spec_sizes(view), spec_strides(view)
    cl = int(strides["x"][1]) == 1 and int(strides["y"][1]) == 1
    fwd, fwd_strides = fewk_bwd_spec().as_forward(sizes, strides, cl)
    return view, sizes, strides, cl, fwd, fwd_strides


@lru_cache(maxsize=4096)
def _phases(problem: ConvProblem) -> list[Any]:
    """The phases of dx (`conv_triton_fewk_bwd_spec.phases`): one at stride 1."""
    _, sizes, strides, cl, _, _ = _view(problem)
    return list(fewk_bwd_spec().phases(sizes, strides, cl))


def _slot(phase: Any, index: int) -> str:
    """The workspace part a phase's filters start at: the flipped filters, or where its first
    tap is (an FP32 flipped filter's offset)."""
    return f"{SLOT}_p{index}" if phase.w_offset else SLOT


@lru_cache(maxsize=64)
def _flip_job(data_type: str, target: Target) -> CompileJob:
    spec = fewk_bwd_spec()
    sig, constexprs = spec.flip_signature(data_type)
    return spec_compile_job(FLIP_FILE, spec, spec.FLIP, sig, constexprs,
                            {"num_warps": spec.FLIP_WARPS, "num_stages": 1}, target, False)


def _config(params: Params) -> dict[str, int]:
    return config_of(tuple(params), "FmaBwd")


class ConvTritonFmaFewKBwd(Solver):
    """Backward data at stride 1 as the few-filter forward of dy on flipped filters (layers of
    1-8 input channels); a subclass with its own FORWARD_FILE and FORWARD_SPEC runs another
    forward kernel of the same arguments (the few-channel one)."""

    NAME = "ConvTritonFmaFewKBwd"
    FORWARD_FILE = FEWK_KERNEL_FILE
    FORWARD_SPEC = FEWK_SPEC
    #: Whether it claims the 1x1 layers the library leaves to the FP32 units
    #: (blas_1x1.narrow_pointwise): the few-channel forward's does (ConvTritonFmaBwd: 0.91-1.54
    #: of IEEE cuDNN on the SD VAE's 4 -> 4 post_quant_conv, where the few-filter forward took
    #: 1.56-4.08: bench/results/fp32_tails_h100/pointwise_b.json).
    POINTWISE = False
    tunable = True
    language = "triton"
    kernel_file = FEWK_KERNEL_FILE

    def __init__(self) -> None:
        self.direction = "B"
        self.directions = frozenset({"B"})
        self.name = self.NAME
        self.kernel_file = self.FORWARD_FILE
        self.algorithm_names = {"B": "miopenConvolutionBwdDataAlgoDirect"}

    def forward_spec(self) -> Any:
        """The forward kernel's stdlib-only launch data."""
        return kernels_spec(self.FORWARD_SPEC)

    def _kind(self, target: Target) -> str | None:
        """The forward kernel's kind on targets with matrix cores; else None."""
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, self.FORWARD_SPEC)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.direction != "B" or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or \
                p.in_type not in fewk_bwd_spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides, _, _, _ = _view(p)
        return bool(fewk_bwd_spec().applies(sizes, strides, self.forward_spec().applies))

    def _forward_claims(self, kind: str, fwd: dict[str, int],
                        fwd_strides: dict[str, tuple[int, int, int, int]], target: Target
                        ) -> bool:
        """The few-filter forward's claim on the forward problem (its spec's `claims`), from
        the bwd spec's CLAIM_LEAST_CHANNELS channels of dy."""
        return fwd["C"] >= fewk_bwd_spec().CLAIM_LEAST_CHANNELS and \
            bool(self.forward_spec().claims(kind, fwd, fwd_strides, target.cu))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the forward kernel claims the forward problem, filters of more than one tap
        (a 1x1 layer's backward data is a GEMM, a squeeze layer's of one pixel the
        library's, which the flip's launch would double; but for the narrow ones of
        `POINTWISE`), at stride 1. The phases of a larger stride are offered to find and
        tuning alone: on the zoo's 38 strided stems (H200, FP32, batch 32:
        bench/results/fewk_h200-035369f/bwd.json) they took 1.65-12.87 of IEEE cuDNN's GPU
        time where the three-product implicit GEMM took 0.49-1.57."""
        kind = self._kind(target)
        _, sizes, _, _, fwd, fwd_strides = _view(problem)
        taps = sizes["R"] * sizes["S"] > 1 or (self.POINTWISE and
                                                narrow_pointwise(problem, target))
        return kind is not None and taps and len(_phases(problem)) == 1 and \
            self._forward_claims(kind, fwd, fwd_strides, target)

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        spec = self.forward_spec()
        block = spec.filter_block(_view(problem)[4]["K"])
        return [params_of(c) for c in spec.legal_space(kind, block)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """A legal tile of the forward kernel whose filter block holds the forward problem's
        filters (the layer's input channels)."""
        kind = target_kind(target.arch)
        spec = self.forward_spec()
        if kind not in spec.KINDS or not spec_for(target.arch).matrix:
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        return bool(spec.legal(kind, config)) and self._holds(problem, config)

    def _holds(self, problem: ConvProblem, config: dict[str, int]) -> bool:
        return config["BLOCK_N"] >= _view(problem)[4]["K"]

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The forward kernel's usual tile for the forward problem."""
        kind = self._kind(target) or target_kind(target.arch) or ""
        return params_of(self.forward_spec().tile_for(kind, _view(problem)[4]))

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [self.default_params(problem, target)] if self._kind(target) else []

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The forward kernel's object of the tile and form."""
        config = _config(tuple(params))
        return _forward_job(self.FORWARD_FILE, self.FORWARD_SPEC, problem.in_type,
                            tuple(sorted(config.items())), _view(problem)[3], target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The forward kernel's usual tiles in both forms (the forward solver's objects) and
        the flip, per type."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = self.forward_spec()
        jobs = [_forward_job(self.FORWARD_FILE, self.FORWARD_SPEC, t,
                             tuple(sorted(tile.items())), cl, target)
                for t in fewk_bwd_spec().TYPES for tile in spec.tiles(kind)
                for cl in (True, False)]
        return jobs + [_flip_job(t, target) for t in fewk_bwd_spec().TYPES]

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(fewk_bwd_spec().workspace_bytes(_view(problem)[1]))

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        """The flipped filters, and where a phase's taps start past their first (a stride over
        1: `_slot`)."""
        slots = {SLOT: 0}
        for i, phase in enumerate(_phases(problem)):
            if phase.w_offset:
                slots[_slot(phase, i)] = phase.w_offset * 4
        return slots

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The filters, flipped and transposed, into the workspace."""
        spec = fewk_bwd_spec()
        view, sizes, strides, cl, _, _ = _view(problem)
        values = spec.flip_values(sizes, strides["w"], cl)
        args = [kernel_arg("src_ptr", "ptr:" + view.wei_tensor, None),
                kernel_arg("dst_ptr", "ptr:" + SLOT, None)]
        args += [kernel_arg(name, "i32", int(values[name])) for name, kind in
                 spec.ARGS[spec.FLIP] if kind == "i32"]
        launch = Launch(spec.FLIP, spec.flip_grid(sizes), (spec.FLIP_WARPS * 32, 1, 1),
                        (*args, *scratch_args()), needs_meta=True)
        return ((_flip_job(problem.in_type, target), launch),)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The forward kernel on dy (its input) and the flipped filters into dx (at stride
        1; otherwise into dx's first phase, `follow_ups` the others)."""
        return self._phase_launch(problem, params, 0)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """At a stride over 1, the forward kernel into each further phase of dx."""
        phases = _phases(problem)
        if len(phases) == 1:
            return ()
        job = self.compile_job(problem, params, target)
        return tuple((job, self._phase_launch(problem, params, i))
                     for i in range(1, len(phases)))

    def _phase_launch(self, problem: ConvProblem, params: Params, index: int) -> Launch:
        spec = self.forward_spec()
        view = _view(problem)[0]
        phase = _phases(problem)[index]
        dx = view.in_tensor
        if phase.y_offset:
            dx += f"@{phase.y_offset * TYPE_BYTES[problem.in_type]}"
        pointers = {"x_ptr": view.out_tensor, "w_ptr": _slot(phase, index), "y_ptr": dx}
        values = spec.arg_values("F", phase.sizes, phase.strides)
        args = []
        for name, kind in spec.ARGS[spec.KERNEL["F"]]:
            if kind.startswith("ptr"):
                args.append(kernel_arg(name, "ptr:" + pointers[name], None))
            elif kind == "i32":
                args.append(kernel_arg(name, "i32", int(values[name])))
        config = _config(tuple(params))
        grid = spec.grid(phase.sizes, config)
        return Launch(spec.KERNEL["F"], (int(grid[0]), int(grid[1]), int(grid[2])),
                      (config["num_warps"] * 32, 1, 1), (*args, *scratch_args()),
                      workspace_bytes=self.workspace_for(problem, params) if index == 0 else 0,
                      needs_meta=True)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """The first phase's launch (at stride 1 the only one)."""
        config = _config(tuple(params))
        grid = self.forward_spec().grid(_view(problem)[4], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks of every phase's launch, threads per block, the first phase's tile
        efficiency), for the miss ranking's features: the launches run one after another
        over the whole of dx."""
        config = _config(tuple(params))
        spec = self.forward_spec()
        blocks = sum(math.prod(spec.grid(phase.sizes, config)) for phase in _phases(problem))
        return int(blocks), config["num_warps"] * 32, \
            self.efficiency(_view(problem)[0], params)

    def efficiency(self, view: ConvView, params: Params) -> float:
        sizes, strides = spec_sizes(view), spec_strides(view)
        fwd, _ = fewk_bwd_spec().as_forward(sizes, strides, False)
        return float(self.forward_spec().efficiency(fwd, _config(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 8.0)


class ConvTritonFmaBwd(ConvTritonFmaFewKBwd):
    """Backward data at stride 1 as the few-channel (stem) forward of dy on flipped filters
    (layers of 1-4 filters)."""

    NAME = "ConvTritonFmaBwd"
    FORWARD_FILE = STEM_KERNEL_FILE
    FORWARD_SPEC = STEM_SPEC
    POINTWISE = True

    def _forward_claims(self, kind: str, fwd: dict[str, int],
                        fwd_strides: dict[str, tuple[int, int, int, int]], target: Target
                        ) -> bool:
        """The few-channel forward's claim: its spec's FIRST_KINDS (both layouts)."""
        return kind in self.forward_spec().FIRST_KINDS

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        return [] if kind is None else [params_of(t) for t in self.forward_spec().tiles(kind)]

    def _holds(self, problem: ConvProblem, config: dict[str, int]) -> bool:
        return True  # several programs cover the filters


def fewk_bwd_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the few-filter forward's solver applies and claims (FIRST_CLAIMS)."""
    return family_claims(FMA_BWD_SOLVERS, ConvTritonFmaFewKBwd, problem, target)


def stem_bwd_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the few-channel forward's solver applies and claims (FIRST_CLAIMS)."""
    return family_claims(FMA_BWD_SOLVERS, ConvTritonFmaBwd, problem, target)


def _solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec

    if not has_kernels_spec(SPEC):
        return []
    return [cls() for cls in (ConvTritonFmaFewKBwd, ConvTritonFmaBwd)
            if has_kernels_spec(cls.FORWARD_SPEC)]


FMA_BWD_SOLVERS: list[Solver] = _solvers()
