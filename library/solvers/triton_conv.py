"""ConvTritonImplicitGemm{Fwd,Bwd,Wrw} (+ Tf32, Tf32x3): implicit GEMM on tensor cores, in Triton.

The kernels are `kernels/conv_triton.py`; how to launch them (argument list, grid, legal
tunables per target, the align16 assumption) is plain data in `kernels/conv_triton_spec.py`,
which this module reads without importing Triton: the runtime launches the precompiled objects
from the kdb with the launch metadata they carry (codeobject.LaunchMetadata).

Applicability: targets whose targets.toml entry names matrix instructions (`matrix`: mfma on
gfx90a/gfx942/gfx950, wmma on gfx11/gfx12, mma/wgmma/tcgen05 on sm80+); 2D problems; one
element type of FP16, BF16 or FP32 (FP32 not on wmma targets, whose matrix cores take no FP32);
32-bit offsets; backward data without groups (see `is_applicable`). The portable solvers stay
the fallback for everything else.

Parameters (PerfDb order): BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, num_warps,
num_stages; the legal space per target comes from the spec (shared memory/LDS respected).
SPLIT_K > 1 (backward weights by default; forward and backward data where their tiles alone
would leave most CUs idle) leaves FP32 partial sums in the workspace, which a second launch of
the reduce kernel (`follow_ups`) adds into the output.

Every object is shape-agnostic (sizes are arguments), so `compile_job` gives the same job with
`specialised` or not. An object may assume 16-byte aligned pointers and multiples of 16 in the
spec's ALIGN16_ARGS; a problem that does not meet that (or a call whose pointers are not
aligned, see `unaligned_job`) runs a variant compiled without the assumption.

FP32 is IEEE unless the Handle's math mode is TF32 (`Handle(math_mode="TF32")` or
MIOPENKERNELS_FP32_MATH=TF32): then the `...Tf32...` solvers (FP32 only, targets whose matrix
cores do TF32) apply too. Their own names keep their PerfDb records apart.

The `...Tf32x3...` solvers take FP32 problems in either math mode on the kinds of the spec's
TF32X3_KINDS: each product is three TF32 products (Triton's "tf32x3": the high and low TF32
halves of both operands, the low-by-low term left out), FP32 accuracy on tensor cores. On the
H100 over the 23 ResNet-50 layers their error against float64 was 1.3e-7 to 3.2e-7 (the IEEE
kernels': 1.4e-7 to 1.4e-6, bench/results/triton_kernels_h100.json), in 0.35-0.80 of the time
the IEEE kernels took in that run (geomean per direction and layout,
bench/results/triton_kernels_fp32x3_h100.json).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..config import triton_solvers_enabled
from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, ConvView, conv_view
from .base import CompileJob, KernelArg, Launch, Params, Solver

__all__ = ["ConvTritonImplicitGemm", "TRITON_SOLVERS", "spec_module", "tf32_capable",
           "tf32x3_capable",
           "PARAM_NAMES", "companion_jobs", "via_layout"]

KERNEL_FILE = "conv_triton.py"
PARAM_NAMES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages")
#: An eighth parameter, written only where it is not 0: the matrix instruction (the spec's
#: "MMA"; 2 is mma.sync on sm90, for TF32 solvers). Seven values mean the target's own.
MMA_PARAM = "MMA"
_TYPES = ("FP16", "BF16", "FP32")
_GRID_YZ_MAX = 65535
# Sizes no tuned table holds: `tuned_config` then gives the case's usual winner.
_NO_SIZES = {k: 0 for k in ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "G", "stride_h",
                            "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}


_SPECS: dict[str, Any] = {}


def kernels_spec(name: str) -> Any:
    """The stdlib-only launch data of a Triton kernel file (`kernels/<name>.py`: its spec
    module), imported on first use; ImportError where the kernels are not installed."""
    module = _SPECS.get(name)
    if module is None:
        import importlib

        module = _SPECS[name] = importlib.import_module(f"{__package__.rsplit('.', 1)[0]}"
                                                        f".kernels.{name}")
    return module


def has_kernels_spec(name: str) -> bool:
    """Whether `kernels_spec(name)` imports (a tree without the kernels has no such solvers:
    they never apply)."""
    try:
        kernels_spec(name)
    except ImportError:
        return False
    return True


def spec_kind(target: Target, name: str) -> str | None:
    """The target's kind where the kernels of spec `name` apply (the spec's KINDS), the Triton
    solvers are on (MIOPENKERNELS_TRITON) and the spec is installed; else None."""
    if not triton_solvers_enabled() or not has_kernels_spec(name):
        return None
    kind = _target_kind(target.arch)
    return kind if kind in kernels_spec(name).KINDS else None


def spec_module() -> Any:
    """`kernels/conv_triton_spec.py`: stdlib-only launch data of the Triton kernels."""
    return kernels_spec("conv_triton_spec")


@lru_cache(maxsize=4096)
def _problem_view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], str, bool]:
    """(view, i32 arguments, kernel name, channels_last) of a problem (kept: the ranking asks
    for it per candidate)."""
    spec = spec_module()
    view = conv_view(problem)
    sizes = _sizes(view)
    args = spec.conv_args(sizes, _strides(view))
    channels_last = args["sxc"] == 1 and args["swc"] == 1 and args["syk"] == 1
    return view, args, spec.kernel_for(view.direction, sizes), channels_last


@lru_cache(maxsize=8192)
def _arg(name: str, kind: str, value: int | None) -> KernelArg:
    """A kernel argument (immutable, so shared between launches: a first call packs about 35)."""
    return KernelArg(name, kind, value)


def _scratch_args() -> list[KernelArg]:
    """The two scratch pointers Triton appends to every kernel (global, profile): null, as the
    objects here need no scratch (the runtime checks the object's LaunchMetadata says so)."""
    return [_arg("global_scratch", "ptr:workspace", None),
            _arg("profile_scratch", "ptr:workspace", None)]


@lru_cache(maxsize=1024)
def _config_items(params: Params) -> tuple[tuple[str, int], ...]:
    """The (name, value) pairs of a parameter set; MMA only where it is not 0."""
    names = PARAM_NAMES + (MMA_PARAM,) if len(params) == len(PARAM_NAMES) + 1 else PARAM_NAMES
    items = tuple(zip(names, (int(v) for v in params), strict=True))
    return tuple(i for i in items if i != (MMA_PARAM, 0))


def config_of(params: Params, who: str) -> dict[str, int]:
    """The seven tunables (PARAM_NAMES) of a parameter set of a solver that has no MMA choice
    (the Winograd and 1x1 GEMM solvers); ProblemError naming `who` for any other length."""
    if len(params) != len(PARAM_NAMES):
        raise ProblemError(f"{who}: params {params} are not {','.join(PARAM_NAMES)}")
    return dict(zip(PARAM_NAMES, (int(v) for v in params), strict=True))


def params_of(config: dict[str, int]) -> Params:
    """A configuration's seven tunables in PerfDb order (SPLIT_K and the others 1 if absent)."""
    return tuple(int(config.get(k, 1)) for k in PARAM_NAMES)


@lru_cache(maxsize=1024)
def _job_items(params: Params) -> tuple[tuple[str, int], ...]:
    """The configuration as a job's key: its items sorted by name."""
    return tuple(sorted(_config_items(params)))


@lru_cache(maxsize=1024)
def _config_view(params: Params) -> dict[str, int]:
    """The configuration of a parameter set, shared: read it, never change it."""
    return dict(_config_items(params))


@lru_cache(maxsize=4096)
def _aligned(problem: ConvProblem) -> bool:
    """Whether the problem meets the align16 assumption (kept per problem)."""
    _, args, _, cl = _problem_view(problem)
    return bool(spec_module().meets_align16(args, cl))


@lru_cache(maxsize=64)
def _target_kind(arch: str) -> str | None:
    """The spec's kind of an arch; None without the kernels or for an arch it does not know."""
    if not _have_kernels():
        return None
    try:
        return str(spec_module().target_kind(arch))
    except ValueError:
        return None


REDUCE_KERNEL = "conv2d_bwd_weight_reduce"


def _splits(kernel: str) -> bool:
    """Whether the solvers use `kernel`'s SPLIT_K > 1 variant (the spec's SPLIT_BY_DEFAULT:
    backward weights, forward, backward data); its partial sums go to the workspace and
    REDUCE_KERNEL adds them into the output in a second launch."""
    return kernel in spec_module().SPLIT_BY_DEFAULT


@lru_cache(maxsize=4096)
def _legal(params: Params, data_type: str, kind: str, kernel: str) -> bool:
    config = dict(_config_items(params))
    return (config["SPLIT_K"] == 1 or _splits(kernel)) and bool(
        spec_module().is_legal(config, data_type, kind, kernel))


@lru_cache(maxsize=4096)
def _choices(solver: ConvTritonImplicitGemm, problem: ConvProblem, target: Target,
             kind: str | None) -> tuple[Params, Params | None]:
    """A solver's (default_params, usual tile where it differs) for a problem, worked out once:
    the miss ranking asks for both, and whether the defaults split, for every candidate solver.
    `kind` (None while MIOPENKERNELS_TRITON turns the solvers off) is part of the key."""
    return solver._choose(problem, target, kind)


def _programs(kernel: str, sizes: dict[str, int], config: dict[str, int]) -> int:
    """Programs (thread blocks) one launch of `config` runs."""
    gx, gy, gz = spec_module().grid(kernel, sizes, config)
    return int(gx) * int(gy) * int(gz)


@lru_cache(maxsize=256)
def _reduce_job(data_type: str, split: int, target: Target) -> CompileJob:
    """The job of the reduce kernel that finishes a SPLIT_K = `split` launch (no alignment
    assumptions: its output is any tensor the caller passes)."""
    spec = spec_module()
    config = (("SPLIT_K", int(split)), ("num_warps", int(spec.REDUCE_WARPS)), ("num_stages", 1))
    return _triton_job(KERNEL_FILE, "ieee", REDUCE_KERNEL, data_type, config, False, False,
                       target)


def companion_jobs(job: CompileJob) -> tuple[CompileJob, ...]:
    """The jobs a launch of `job`'s object needs after it: the reduce kernel of a SPLIT_K > 1
    object of a splitting kernel (read from the job's options), else none."""
    if job.kernel_file != KERNEL_FILE or not _splits(job.kernel_name):
        return ()
    options = dict(o.split("=", 1) for o in job.options if "=" in o)
    split = int(options.get("-DSPLIT_K", "1"))
    if split <= 1:
        return ()
    signature = dict(item.split(":", 1) for item in options.get("--signature", "").split(","))
    element = signature.get("w_ptr", "")
    data_type = {v: k for k, v in spec_module().ELEMENT_TYPES.items()}.get(element.lstrip("*"))
    if data_type is None:
        return ()
    return (_reduce_job(data_type, split, job.target),)


@lru_cache(maxsize=4096)
def _triton_job(kernel_file: str, math: str, kernel: str, data_type: str,
                config_items: tuple[tuple[str, int], ...], channels_last: bool, aligned: bool,
                target: Target) -> CompileJob:
    """The compile job of one kernel configuration (kept: the miss ranking asks per
    candidate whether its object is at hand)."""
    config = dict(config_items)
    spec = spec_module()
    precision = math  # 'ieee', 'tf32' or 'tf32x3': the dot's input precision (`PRECISION`)
    sig, constexprs = spec.triton_signature(kernel, data_type, config, channels_last,
                                            precision)
    return triton_compile_job(kernel_file, kernel, sig, constexprs, config["num_warps"],
                              config["num_stages"], target,
                              spec.align16_args(kernel, channels_last) if aligned else (),
                              int(config.get(MMA_PARAM, 0)))


def triton_compile_job(kernel_file: str, kernel: str, sig: dict[str, str],
                       constexprs: dict[str, Any], warps: int, stages: int, target: Target,
                       assume16: tuple[str, ...] | list[str] = (), mma: int = 0
                       ) -> CompileJob:
    """The job of one Triton object, its options spelling everything that shapes it: the
    symbol (part of the kdb row's args: one row per (source, args) holds one kernel), the
    constexprs, the run-time signature, warps and stages, mma.sync where `mma` is 2, and the
    arguments `assume16` assumes multiples of 16 (pointers: 16-byte aligned)."""
    options = [f"--kernel={kernel}", *(f"-D{k}={v}" for k, v in constexprs.items()),
               "--signature=" + ",".join(f"{k}:{v}" for k, v in sig.items()
                                         if v != "constexpr"),
               f"--num-warps={int(warps)}", f"--num-stages={int(stages)}"]
    if mma:
        options.append(f"--mma={int(mma)}")
    if assume16:
        options.append("--assume=" + ",".join(f"{a}:16" for a in assume16))
    return CompileJob(kernel_file, tuple(options), kernel, target)


def _have_kernels() -> bool:
    """Whether the Triton kernels' spec is installed."""
    return has_kernels_spec("conv_triton_spec")


def tf32x3_capable(target: Target) -> bool:
    """Kinds whose TF32 tensor cores run the three-product FP32 solvers (spec TF32X3_KINDS)."""
    kind = _target_kind(target.arch)
    return kind is not None and kind in spec_module().TF32X3_KINDS


#: The spec's name of a math mode's type in tuned cases and Via tables ("FP32" for IEEE).
_MATH_TYPE = {"tf32": "TF32", "tf32x3": "FP32X3"}


def tf32_capable(target: Target) -> bool:
    """Matrix cores with a TF32 mode: NVIDIA sm80+, CDNA 3 (gfx942 xf32)."""
    matrix = spec_for(target.arch).matrix
    return bool(matrix) and (target.vendor == "nvidia" or target.arch == "gfx942")


@lru_cache(maxsize=4096)
def _sizes(view: ConvView) -> dict[str, int]:
    """The spec's sizes of a view (kept per view: read them, never change them)."""
    f = view.field
    g = f("g")
    return {"N": f("n"), "C": f("c") // g, "H": f("in_h"), "W": f("in_w"), "K": f("k") // g,
            "P": f("out_h"), "Q": f("out_w"), "R": f("fil_h"), "S": f("fil_w"), "G": g,
            "stride_h": f("str_h"), "stride_w": f("str_w"), "pad_h": f("pad_h"),
            "pad_w": f("pad_w"), "dil_h": f("dil_h"), "dil_w": f("dil_w")}


def _strides(view: ConvView) -> dict[str, tuple[int, int, int, int]]:
    f = view.field
    return {"x": (f("xs_n"), f("xs_c"), f("xs_h"), f("xs_w")),
            "w": (f("ws_k"), f("ws_c"), f("ws_h"), f("ws_w")),
            "y": (f("ys_n"), f("ys_k"), f("ys_h"), f("ys_w"))}


@lru_cache(maxsize=4096)
def _shape_fits(view: ConvView) -> bool:
    """32-bit indexing and grid y/z limits of a view's sizes."""
    sizes = _sizes(view)
    if not spec_module().fits_int32(sizes):
        return False
    return (sizes["G"] <= _GRID_YZ_MAX and sizes["G"] * sizes["R"] * sizes["S"]
            <= _GRID_YZ_MAX and sizes["stride_h"] * sizes["stride_w"] <= _GRID_YZ_MAX)


def via_layout(problem: ConvProblem, target: Target, math: str) -> str | None:
    """The layout ("NHWC" or "NCHW") whose kernels, with transposes, compute the problem
    faster than its own layout's on the target's kind (the spec's `via_other_layout`), or
    None where its own are the ones to use."""
    p = problem
    if p.mode != "conv" or len(p.in_spatial) != 2 or p.in_layout not in ("NCHW", "NHWC") or \
            not p.in_layout == p.wei_layout == p.out_layout:
        return None
    kind = _target_kind(target.arch)
    if kind is None:
        return None
    type_name = _MATH_TYPE.get(math, problem.in_type)
    case = f"{type_name}-{problem.key_direction}"
    if not spec_module().via_other_layout(kind, p.in_layout, case,
                                          _sizes(_problem_view(problem)[0])):
        return None
    return "NHWC" if p.in_layout == "NCHW" else "NCHW"


#: 16-bit types in which the implicit GEMM ranks ahead of the portable solvers, from this many
#: channels and filters per group: the miss ranking's model had put the portable kernels first
#: on 10 of ResNet-50's 1x1 backward-data problems in NHWC at batch 1, 0.52-3.69x cuDNN
#: (bench/results/kernels_h100-ebe52e4.json); the implicit GEMM took 0.24-0.40x there
#: (0.014-0.029 ms, kernels_h100.json, with this rule).
_SIXTEEN_BIT_FIRST = {"FP16": 16, "BF16": 16}


class ConvTritonImplicitGemm(Solver):
    """One direction of the Triton implicit GEMM, in one math mode ('ieee', 'tf32' or
    'tf32x3')."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self, direction: str, math: str = "ieee") -> None:
        self.direction = direction
        self.math = math
        # Under the TF32 math mode its products run on tensor cores at 8x the IEEE kernels'
        # rate; the ranking's model, fitted on few TF32 timings, ranked IEEE and portable
        # kernels 2-30x slower ahead of it (bench/kernels.py on the H100, before this rule).
        # TF32x3 likewise: at FP32 accuracy it took 0.35-0.80 of the IEEE kernels' time on the
        # H100 (bench/results/triton_kernels_fp32x3_h100.json), and the model has no timings.
        self.rank_first = math in ("tf32", "tf32x3")
        infix = {"tf32": "Tf32", "tf32x3": "Tf32x3"}.get(math, "")
        self.name = f"ConvTritonImplicitGemm{infix}{DIRECTION_SUFFIX[direction]}"
        self.directions = frozenset({direction})
        self.algorithm_names = {
            direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoImplicitGEMM"}

    # ------------------------------------------------------------------ problem mapping
    def _view(self, problem: ConvProblem) -> tuple[ConvView, dict[str, int], str, bool]:
        """(view, i32 arguments, kernel name, channels_last) of a problem."""
        return _problem_view(problem)

    def _kind(self, target: Target) -> str | None:
        """The spec's target kind, or None where these solvers do not exist (no matrix
        cores, no kernels installed, or MIOPENKERNELS_TRITON=0)."""
        if not triton_solvers_enabled():
            return None
        return _target_kind(target.arch)

    def ranks_first(self, problem: ConvProblem, target: Target) -> bool:
        """TF32 and three-product solvers rank first, and so do all of them on 16-bit problems
        of 16 or more channels and filters per group (`_SIXTEEN_BIT_FIRST`), except where the
        problem goes through the other layout's kernels (`via_layout`: the Via solver ranks
        first there) or a Winograd or 1x1 GEMM solver ranks first."""
        from .triton_1x1 import gemm1x1_first
        from .triton_winograd import winograd_first

        first = self.rank_first or (
            problem.in_type in _SIXTEEN_BIT_FIRST and
            min(problem.c, problem.k) >= _SIXTEEN_BIT_FIRST[problem.in_type] * problem.groups)
        return first and via_layout(problem, target, self.math) is None and \
            not winograd_first(problem, target, self.math) and \
            not gemm1x1_first(problem, target)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or len(p.in_spatial) != 2:
            return False
        matrix = spec_for(target.arch).matrix
        if not matrix or self._kind(target) is None:
            return False
        if not (p.in_type == p.wei_type == p.out_type) or p.in_type not in _TYPES:
            return False
        if self.math == "tf32" and (p.in_type != "FP32" or not tf32_capable(target)):
            return False
        if self.math == "tf32x3" and (p.in_type != "FP32" or not tf32x3_capable(target)):
            return False
        if p.in_type == "FP32" and matrix == "wmma":
            return False  # RDNA's wmma takes no FP32: no tensor-core gain over the portable
        if self.direction == "B" and p.groups > 1:
            # conv2d_bwd_data offsets the weights of group g along C instead of K (measured
            # wrong on the H100 for every type and layout): the portable solvers take these.
            return False
        return _shape_fits(self._view(p)[0])

    # ------------------------------------------------------------------ parameters
    def _check_length(self, params: Params) -> None:
        if len(params) not in (len(PARAM_NAMES), len(PARAM_NAMES) + 1):
            raise ProblemError(f"{self.name}: params {params} are not "
                               f"{','.join(PARAM_NAMES)}[,{MMA_PARAM}]")

    def _config(self, params: Params) -> dict[str, int]:
        """The constexprs of a parameter set (a fresh dict: callers may extend it)."""
        self._check_length(params)
        return dict(_config_items(tuple(params)))

    def _params(self, config: dict[str, int]) -> Params:
        mma = int(config.get(MMA_PARAM, 0))
        return tuple(int(config.get(k, 1)) for k in PARAM_NAMES) + ((mma,) if mma else ())

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        view, _, kernel, _ = self._view(problem)
        spec = spec_module()
        space = spec.legal_space(kind, problem.in_type, kernel)
        split_ok = _splits(kernel) and spec.split_applies(kernel, _sizes(view))
        return [self._params(c) for c in space
                if (int(c.get("SPLIT_K", 1)) == 1 or split_ok)
                and (self.math != "ieee" or not c.get(MMA_PARAM))]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        # The target's kind alone (not MIOPENKERNELS_TRITON): whether the solvers are on is
        # is_applicable's question; the ranking asks this per candidate.
        kind = _target_kind(target.arch)
        if kind is None or len(params) not in (len(PARAM_NAMES), len(PARAM_NAMES) + 1):
            return False
        view, _, kernel, _ = self._view(problem)
        try:
            values = tuple(int(v) for v in params)
            if not _legal(values, problem.in_type, kind, kernel):
                return False
        except (TypeError, ValueError):
            return False
        if self.math == "ieee" and dict(_config_items(values)).get(MMA_PARAM):
            return False  # the IEEE kernels use no matrix instruction to choose
        # A split where some stride phase has no tap is not one this kernel computes right.
        return values[PARAM_NAMES.index("SPLIT_K")] == 1 or bool(
            spec_module().split_applies(kernel, _sizes(view)))

    def _case(self, data_type: str, direction: str, channels_last: bool) -> str:
        """The spec's name of a tuned case: `FP16-F-NHWC`, `TF32-W-NCHW`, `FP32X3-B-NHWC`."""
        type_name = _MATH_TYPE.get(self.math, data_type)
        return f"{type_name}-{direction}-{'NHWC' if channels_last else 'NCHW'}"

    def _tuned(self, kind: str, case: str, sizes: dict[str, int], kernel: str,
               data_type: str) -> dict[str, int] | None:
        """The spec's measured configuration for a case (the problem's own, else the case's
        usual winner) with SPLIT_K 1, if it is legal here; None where nothing was measured."""
        spec = spec_module()
        tuned = getattr(spec, "tuned_config", None)
        if tuned is None:
            return None
        try:
            config = tuned(kind, case, sizes, kernel)
        except (KeyError, ValueError, OSError):
            return None
        if not config:
            return None
        config = {**spec.default_config(kernel, data_type), **config, "SPLIT_K": 1}
        return config if spec.is_legal(config, data_type, kind, kernel) else None

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The configuration measured fastest for the problem's case on the target's kind
        (kernels/conv_triton_tuned_*.json): the layer's own where it was measured, else the
        case's usual tile; the spec's default on a kind nothing was measured on. Backward
        weights take the usual tile with its reduction split to fill the target's CUs
        (`spec.split_for`; its objects are in `dynamic_jobs`); forward and backward data
        likewise where the usual tile alone would leave most CUs idle and the layer has no
        tile of its own, or one that fills under half the CUs. A layer's own tile ships only
        where a database record names it: `usual_params` gives the ranking the usual tile
        beside it."""
        return _choices(self, problem, target, self._kind(target))[0]

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The case's usual tile (split where its tiles leave the GPU idle), whose objects
        every package ships, where it differs from `default_params`."""
        usual = _choices(self, problem, target, self._kind(target))[1]
        return [] if usual is None else [usual]

    def _choose(self, problem: ConvProblem, target: Target, kind: str | None
                ) -> tuple[Params, Params | None]:
        """(default_params, the usual tile where it differs from them) on a kind; see
        `_choices`, which keeps them."""
        view, _, kernel, cl = self._view(problem)
        if kind is None:
            return self._params(spec_module().default_config(kernel, problem.in_type)), None
        case = self._case(problem.in_type, view.direction, cl)
        sizes = _sizes(view)
        config = self._tuned(kind, case, sizes, kernel, problem.in_type)
        usual = self._tuned(kind, case, _NO_SIZES, kernel, problem.in_type)
        split = (self._split(kind, usual, sizes, kernel, problem.in_type, target.cu)
                 if _splits(kernel) and usual is not None else None)
        if config is not None and split is not None and (
                spec_module().OUTPUT_OF[kernel] == "w" or (
                    split["SPLIT_K"] > 1 and (not self._measured(kind, case, sizes)
                                              or _programs(kernel, sizes, config)
                                              < target.cu // 2))):
            config = split
        default = self._params(config or spec_module().default_config(kernel, problem.in_type))
        shipped_config = split or usual
        shipped = self._params(shipped_config) if shipped_config is not None else None
        return default, (None if shipped == default else shipped)

    def _measured(self, kind: str, case: str, sizes: dict[str, int]) -> bool:
        """Whether the tuned table holds this very problem (not only the case's usual tile)."""
        spec = spec_module()
        table = spec.tuned_table(kind)
        return bool(table and table["configs"].get(case, {}).get(spec.shape_key(sizes)))

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """Where the defaults split the reduction (a grid that alone would leave the GPU idle),
        the ranking takes them alone: its model, fitted on unsplit launches, ranks unsplit
        tiles ahead there that measure 2-15x slower (bench/kernels.py on the H100, before
        this rule)."""
        kind = self._kind(target)
        if kind is None:
            return False
        return _choices(self, problem, target, kind)[0][PARAM_NAMES.index("SPLIT_K")] > 1

    def _split(self, kind: str, usual: dict[str, int], sizes: dict[str, int], kernel: str,
               data_type: str, cus: int) -> dict[str, int] | None:
        """The case's usual tile with SPLIT_K by `spec.split_for` for `cus` CUs (None where the
        split is not legal)."""
        spec = spec_module()
        config = {**usual, "SPLIT_K": int(spec.split_for(kernel, sizes, usual, cus))}
        return config if spec.is_legal(config, data_type, kind, kernel) else None

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        """The FP32 partial sums of a SPLIT_K > 1 launch, else 0."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        return int(spec_module().workspace_bytes(kernel, _sizes(view),
                                                 _config_view(tuple(params))))

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The configurations measured fastest on any layer of the problem's case on the
        target's kind (kernels/conv_triton_tuned_*.json): the problem's own layer first, as
        measured, then the others by how often they won. Backward weights, whose reduction is
        every pixel, take each tile with the split that fills the target's CUs for this
        problem (`spec.split_for`); the other directions unsplit."""
        kind = self._kind(target)
        spec = spec_module()
        table = spec.tuned_table(kind) if kind is not None else None
        if not table or kind is None:
            return []
        view, _, kernel, cl = self._view(problem)
        sizes = _sizes(view)
        by_shape = table["configs"].get(self._case(problem.in_type, view.direction, cl), {})
        split_w = _splits(kernel) and spec.OUTPUT_OF.get(kernel) == "w"
        counts: dict[Params, int] = {}
        for config in by_shape.values():
            seed = {**config, "SPLIT_K": 1}
            if split_w:
                seed = self._split(kind, seed, sizes, kernel, problem.in_type, target.cu) or seed
            params = self._params(seed)
            counts[params] = counts.get(params, 0) + 1
        out = sorted(counts, key=lambda p: (-counts[p], p))
        own = by_shape.get(spec.shape_key(sizes))
        if own is not None and spec.is_legal(own, problem.in_type, kind, kernel) and (
                int(own.get("SPLIT_K", 1)) == 1 or spec.split_applies(kernel, sizes)):
            first = self._params(dict(own))
            out = [first] + [p for p in out if p != first]
        return out

    # ------------------------------------------------------------------ kernels
    def _job(self, kernel: str, data_type: str, config: dict[str, int], channels_last: bool,
             aligned: bool, target: Target) -> CompileJob:
        return _triton_job(self.kernel_file, self.math, kernel, data_type,
                           tuple(sorted(config.items())), channels_last, aligned, target)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The (always shape-agnostic) job; with the align16 assumption where the problem
        meets it."""
        return self._problem_job(problem, params, _aligned(problem), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        """The variant without alignment assumptions, for pointers that are not aligned."""
        return self._problem_job(problem, params, False, target)

    def _problem_job(self, problem: ConvProblem, params: Params, aligned: bool, target: Target
                     ) -> CompileJob:
        _, _, kernel, cl = self._view(problem)
        self._check_length(params)
        return _triton_job(self.kernel_file, self.math, kernel, problem.in_type,
                           _job_items(tuple(params)), cl, aligned, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Default configuration of every kernel, type and layout, with and without align16:
        any problem the solver accepts runs without a compile."""
        if self._kind(target) is None or not spec_for(target.arch).matrix:
            return []
        spec = spec_module()
        kernels = [k for k, d in spec.KERNELS.items()
                   if d["direction"] == self.direction and d["args"] == "CONV_ARGS"]
        kind = self._kind(target)
        assert kind is not None
        jobs: dict[CompileJob, None] = {}
        for data_type in _TYPES:
            if not self._type_applicable(data_type, target):
                continue
            for kernel in kernels:
                for cl in (False, True):
                    configs = [spec.default_config(kernel, data_type)]
                    # The case's usual winner: what a problem without its own record runs.
                    usual = self._tuned(kind, self._case(data_type, self.direction, cl),
                                        _NO_SIZES, kernel, data_type)
                    configs += [usual] if usual else []
                    if usual and _splits(kernel):  # every split `_split` may choose
                        most = spec.MAX_SPLIT.get(kernel, 64)
                        configs += [c for c in ({**usual, "SPLIT_K": k}
                                                for k in spec.TARGET_KINDS[kind]["SPLIT_K"]
                                                if k <= most)
                                    if spec.is_legal(c, data_type, kind, kernel)]
                    for config in configs:
                        for aligned in spec.align16_variants(kernel):
                            jobs.setdefault(self._job(kernel, data_type, config, cl, aligned,
                                                      target))
        return list(jobs)

    def _type_applicable(self, data_type: str, target: Target) -> bool:
        if self.math == "tf32" and (data_type != "FP32" or not tf32_capable(target)):
            return False
        if self.math == "tf32x3" and (data_type != "FP32" or not tf32x3_capable(target)):
            return False
        return not (data_type == "FP32" and spec_for(target.arch).matrix == "wmma")

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """Grid and arguments; block and shared memory come from the object's metadata."""
        spec = spec_module()
        view, args, kernel, _ = self._view(problem)
        config = self._config(params)
        sizes = _sizes(view)
        grid = tuple(int(v) for v in spec.grid(kernel, sizes, config))
        tensors = {"x_ptr": view.in_tensor, "w_ptr": view.wei_tensor,
                   "y_ptr": view.out_tensor, "ws_ptr": "workspace"}
        kargs = []
        for name, kind in spec.arg_list(kernel):
            if kind.startswith("ptr"):
                kargs.append(_arg(name, "ptr:" + tensors[name], None))
            elif kind == "i32":
                kargs.append(_arg(name, "i32", args[name]))
        kargs += _scratch_args()
        warps = config["num_warps"]
        return Launch(kernel, (grid[0], grid[1], grid[2]), (warps * 32, 1, 1), tuple(kargs),
                      workspace_bytes=int(spec.workspace_bytes(kernel, sizes, config)),
                      needs_meta=True)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """With SPLIT_K > 1: the reduce kernel's job and launch, which sums the partials the
        main launch left in the workspace into the output."""
        config = self._config(params)
        split = config["SPLIT_K"]
        if split <= 1:
            return ()
        spec = spec_module()
        view, args, kernel, _ = self._view(problem)
        if not _splits(kernel):
            raise ProblemError(f"{self.name}: kernel {kernel} has no SPLIT_K > 1 variant here")
        out_tensor = {"y": view.out_tensor, "x": view.in_tensor,
                      "w": view.wei_tensor}[spec.OUTPUT_OF[kernel]]
        values = spec.reduce_args(kernel, args)
        kargs = [_arg("ws_ptr", "ptr:workspace", None), _arg("w_ptr", "ptr:" + out_tensor, None)]
        kargs += [_arg(name, "i32", values[name]) for name, kind in spec.REDUCE_ARGS
                  if kind == "i32"]
        kargs += _scratch_args()
        grid = (int(spec.cdiv(values["TOTAL"], spec.REDUCE_BLOCK)), 1, 1)
        launch = Launch(REDUCE_KERNEL, grid, (int(spec.REDUCE_WARPS) * 32, 1, 1), tuple(kargs),
                        needs_meta=True)
        return ((_reduce_job(problem.in_type, split, target), launch),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) without the argument list (the miss ranking asks for it per
        candidate)."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        config = _config_view(tuple(params))
        grid = spec_module().grid(kernel, _sizes(view), config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks, threads per block, tile efficiency) in one go: `launch_geometry` and
        `efficiency` together, for the miss ranking's per-candidate features."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        sizes = _sizes(view)
        config = _config_view(tuple(params))
        return (_programs(kernel, sizes, config), config["num_warps"] * 32,
                float(spec_module().tile_efficiency(kernel, sizes, config)))

    def efficiency(self, view: ConvView, params: Params) -> float:
        """The fraction of launched tile work that is real (the miss ranking's feature)."""
        sizes = _sizes(view)
        spec = spec_module()
        self._check_length(params)
        return float(spec.tile_efficiency(spec.kernel_for(view.direction, sizes), sizes,
                                          _config_view(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        from ._conv import macs

        # Tensor cores: nominally ~20x the portable kernels' MAC rate (FP32 IEEE ~4x, three
        # TF32 products ~7x).
        speed = 4.0 if problem.in_type == "FP32" and self.math == "ieee" else \
            7.0 if self.math == "tf32x3" else 20.0
        return 5.0 + macs(problem) / (1e6 * speed)


def _solvers() -> list[Solver]:
    """The direct solvers, then a Via solver for each (math, direction, layout) that some
    kind's VIA_NHWC, VIA_NHWC_ONE_TAP, VIA_NCHW or VIA_NCHW_FEW_C lists (none without the
    kernels)."""
    from .triton_conv_relayout import ConvTritonImplicitGemmRelayout

    direct: list[Solver] = [ConvTritonImplicitGemm(d, m) for m in ("ieee", "tf32", "tf32x3")
                            for d in ("F", "B", "W")]
    if not _have_kernels():
        return direct
    spec = spec_module()
    maths = {t: m for m, t in _MATH_TYPE.items()}
    listed = {(maths.get(c.split("-")[0], "ieee"), c[-1], layout)
              for layout, table in (("NHWC", spec.VIA_NHWC), ("NHWC", spec.VIA_NHWC_ONE_TAP),
                                    ("NCHW", spec.VIA_NCHW), ("NCHW", spec.VIA_NCHW_FEW_C))
              for cases in table.values() for c in cases}
    return direct + [ConvTritonImplicitGemmRelayout(d, m, lay) for lay in ("NHWC", "NCHW")
                     for m in ("ieee", "tf32") for d in ("F", "B", "W") if (m, d, lay) in listed]


TRITON_SOLVERS: list[Solver] = _solvers()
