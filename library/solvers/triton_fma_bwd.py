"""ConvTritonFmaFewKBwd: backward data of 2-D layers of 1-8 input channels at stride 1 as the
few-filter forward on flipped filters (kernels/conv_triton_flip.py, then
kernels/conv_triton_fewk.py; launch data in kernels/conv_triton_fewk_bwd_spec.py and
kernels/conv_triton_fewk_spec.py).

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

The miss ranking puts it first where the few-filter forward would rank first on the forward
problem (`conv_triton_fewk_spec.claims`: sm90, channels-last, a grid that fills the GPU or a
short reduction) and the filters have more than one tap, ahead of the implicit GEMM and its Via
and padded solvers (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ConvView, conv_view, macs
from .base import CompileJob, Launch, Params, Solver
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
from .triton_fma import FEWK_KERNEL_FILE, FEWK_SPEC, fewk_spec
from .triton_fma import _job as _forward_job

__all__ = ["ConvTritonFmaFewKBwd", "FMA_BWD_SOLVERS", "fewk_bwd_first", "fewk_bwd_spec"]

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


@lru_cache(maxsize=64)
def _flip_job(data_type: str, target: Target) -> CompileJob:
    spec = fewk_bwd_spec()
    sig, constexprs = spec.flip_signature(data_type)
    return spec_compile_job(FLIP_FILE, spec, spec.FLIP, sig, constexprs,
                            {"num_warps": spec.FLIP_WARPS, "num_stages": 1}, target, False)


def _config(params: Params) -> dict[str, int]:
    return config_of(tuple(params), ConvTritonFmaFewKBwd.NAME)


class ConvTritonFmaFewKBwd(Solver):
    """The few-input-channel backward data at stride 1 on the FP32 units."""

    NAME = "ConvTritonFmaFewKBwd"
    tunable = True
    language = "triton"
    kernel_file = FEWK_KERNEL_FILE

    def __init__(self) -> None:
        self.direction = "B"
        self.directions = frozenset({"B"})
        self.name = self.NAME
        self.algorithm_names = {"B": "miopenConvolutionBwdDataAlgoDirect"}

    def _kind(self, target: Target) -> str | None:
        """The forward kernel's kind on targets with matrix cores; else None."""
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, FEWK_SPEC)

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
        return bool(fewk_bwd_spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the few-filter forward claims the forward problem (`conv_triton_fewk_spec.
        claims`), filters of more than one tap (a 1x1 layer's backward data is a GEMM, a
        squeeze layer's of one pixel the library's, which the flip's launch would double)."""
        kind = self._kind(target)
        _, sizes, _, _, fwd, fwd_strides = _view(problem)
        return kind is not None and sizes["R"] * sizes["S"] > 1 and \
            bool(fewk_spec().claims(kind, fwd, fwd_strides, target.cu))

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        block = fewk_spec().filter_block(_view(problem)[4]["K"])
        return [params_of(c) for c in fewk_spec().legal_space(kind, block)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """A legal few-filter forward tile whose filter block holds the input's channels."""
        kind = target_kind(target.arch)
        if kind not in fewk_spec().KINDS or not spec_for(target.arch).matrix:
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        return bool(fewk_spec().legal(kind, config)) and \
            config["BLOCK_N"] >= _view(problem)[4]["K"]

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The forward kernel's usual tile of the input channels' block."""
        kind = self._kind(target) or target_kind(target.arch) or ""
        return params_of(fewk_spec().tile_for(kind, _view(problem)[4]))

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [self.default_params(problem, target)] if self._kind(target) else []

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The few-filter forward's object of the tile and form."""
        config = _config(tuple(params))
        return _forward_job(FEWK_KERNEL_FILE, FEWK_SPEC, problem.in_type,
                            tuple(sorted(config.items())), _view(problem)[3], target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The forward kernel's usual tiles in both forms (the few-filter forward's objects)
        and the flip, per type."""
        kind = self._kind(target)
        if kind is None:
            return []
        jobs = [_forward_job(FEWK_KERNEL_FILE, FEWK_SPEC, t, tuple(sorted(tile.items())), cl,
                             target)
                for t in fewk_bwd_spec().TYPES for tile in fewk_spec().tiles(kind)
                for cl in (True, False)]
        return jobs + [_flip_job(t, target) for t in fewk_bwd_spec().TYPES]

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(fewk_bwd_spec().workspace_bytes(_view(problem)[1]))

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return {SLOT: 0}

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
        """The few-filter forward of dy (its input) on the flipped filters into dx."""
        spec = fewk_spec()
        view, _, _, _, fwd, fwd_strides = _view(problem)
        pointers = {"x_ptr": view.out_tensor, "w_ptr": SLOT, "y_ptr": view.in_tensor}
        values = spec.arg_values("F", fwd, fwd_strides)
        args = []
        for name, kind in spec.ARGS[spec.KERNEL["F"]]:
            if kind.startswith("ptr"):
                args.append(kernel_arg(name, "ptr:" + pointers[name], None))
            elif kind == "i32":
                args.append(kernel_arg(name, "i32", int(values[name])))
        grid, block = self.launch_geometry(problem, params)
        return Launch(spec.KERNEL["F"], grid, block, (*args, *scratch_args()),
                      workspace_bytes=self.workspace_for(problem, params), needs_meta=True)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        grid = fewk_spec().grid(_view(problem)[4], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        sizes, strides = spec_sizes(view), spec_strides(view)
        fwd, _ = fewk_bwd_spec().as_forward(sizes, strides, False)
        return float(fewk_spec().efficiency(fwd, _config(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 8.0)


def fewk_bwd_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the solver applies and claims the problem (the registry's FIRST_CLAIMS)."""
    return any(s.is_applicable(problem, target) and s.claims_first(problem, target)
               for s in FMA_BWD_SOLVERS)


def _solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec

    return [ConvTritonFmaFewKBwd()] if has_kernels_spec(SPEC) and has_kernels_spec(FEWK_SPEC) \
        else []


FMA_BWD_SOLVERS: list[Solver] = _solvers()
