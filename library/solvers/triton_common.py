"""What the Triton solver families share: their kernels' launch data, parameters, arguments
and compile jobs.

The implicit GEMM (triton_conv.py), its Via solvers (triton_conv_relayout.py), the Winograd
backward weights (triton_winograd.py), the 1x1 GEMMs (triton_1x1.py) and the depthwise
and grouped direct families (triton_depthwise.py, triton_grouped.py) read the stdlib-only
spec modules of kernels/ (`kernels_spec`, loaded on first use: the runtime never imports
Triton), take the implicit GEMM's seven tunables (PARAM_NAMES, in PerfDb order), pass sizes and
strides as the spec names them (`spec_sizes`, `spec_strides`), pack kernel arguments
(`kernel_arg`, `scratch_args`) and spell one Triton object as one compile job
(`triton_compile_job`); a split reduction is finished by the implicit GEMM's reduce kernel
(`reduce_job`, `companion_jobs`). One module for all of them, so that no family reaches into
another's private names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from ..config import triton_solvers_enabled
from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ConvView, conv_view
from .base import CompileJob, KernelArg, Launch, Params

__all__ = [
    "spec_compile_job",
    "spec_kernel_args",
    "spec_launch",
    "CONV_KERNEL_FILE", "MATH_TYPE", "MMA_PARAM", "PARAM_NAMES", "REDUCE_KERNEL",
    "aligned_object", "companion_jobs", "config_items", "config_of", "config_view",
    "conv_triton_job",
    "has_kernels_spec", "have_kernels", "job_items", "kernel_arg", "kernels_spec", "legal_params",
    "no_matrix_kernels", "padded_problem", "params_of", "problem_view", "reduce_job",
    "reduce_jobs", "reduce_step", "scratch_args", "shape_fits",
    "spec_kind", "spec_module", "spec_sizes", "spec_strides", "splits_reduction",
    "target_kind", "tf32_capable", "tf32x3_capable", "triton_compile_job",
]

CONV_KERNEL_FILE = "conv_triton.py"
PARAM_NAMES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages")
#: An eighth parameter, written only where it is not 0: the matrix instruction (the spec's
#: "MMA"; 2 is mma.sync on sm90, for TF32 solvers). Seven values mean the target's own.
MMA_PARAM = "MMA"

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
    kind = target_kind(target.arch)
    return kind if kind in kernels_spec(name).KINDS else None


def spec_module() -> Any:
    """`kernels/conv_triton_spec.py`: stdlib-only launch data of the Triton kernels."""
    return kernels_spec("conv_triton_spec")


PAD_SPEC = "conv_triton_pad_spec"


@lru_cache(maxsize=4096)
def padded_problem(problem: ConvProblem) -> ConvProblem:
    """The problem with its input channels and filters rounded up to the channel-padding
    copy's MULTIPLE (`kernels/conv_triton_pad_spec.py`): what the padded solvers and the Via
    solvers' padded copies run the aligned objects on."""
    from .._record import replace

    spec = kernels_spec(PAD_SPEC)
    return replace(problem, c=spec.padded(problem.c), k=spec.padded(problem.k))


@lru_cache(maxsize=4096)
def problem_view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], str, bool]:
    """(view, i32 arguments, kernel name, channels_last) of a problem (kept: the ranking asks
    for it per candidate)."""
    spec = spec_module()
    view = conv_view(problem)
    sizes = spec_sizes(view)
    args = spec.conv_args(sizes, spec_strides(view))
    channels_last = args["sxc"] == 1 and args["swc"] == 1 and args["syk"] == 1
    return view, args, spec.kernel_for(view.direction, sizes), channels_last


@lru_cache(maxsize=4096)
def aligned_object(problem: ConvProblem) -> bool:
    """Whether the problem meets its implicit-GEMM kernel's align16 assumption (the aligned
    object applies; kept per problem)."""
    _, args, kernel, channels_last = problem_view(problem)
    return bool(spec_module().meets_align16(args, channels_last, problem.in_type, kernel))


@lru_cache(maxsize=8192)
def kernel_arg(name: str, kind: str, value: int | None) -> KernelArg:
    """A kernel argument (immutable, so shared between launches: a first call packs about 35)."""
    return KernelArg(name, kind, value)


def scratch_args() -> list[KernelArg]:
    """The two scratch pointers Triton appends to every kernel (global, profile): null, as the
    objects here need no scratch (the runtime checks the object's LaunchMetadata says so)."""
    return [kernel_arg("global_scratch", "ptr:workspace", None),
            kernel_arg("profile_scratch", "ptr:workspace", None)]


SCRATCH_ARGS = frozenset({"global_scratch", "profile_scratch"})


def moved(launch: Launch, kinds: Mapping[str, str] | None = None,
          names: Mapping[str, str] | None = None,
          values: Mapping[str, int] | None = None) -> Launch:
    """`launch` with its pointers moved (a composite solver running an inner solver's launch
    on other memory): an argument named in `names` points at that kind, one whose kind is in
    `kinds` at the kind it maps to, and an i32 argument named in `values` takes that value.
    Triton's scratch pointers stay null. ProblemError where `names` or `values` names an
    argument the kernel does not have."""
    from .._record import replace

    names, values, kinds = names or {}, values or {}, kinds or {}
    missing = (set(names) | set(values)) - {a.name for a in launch.args}
    if missing:
        raise ProblemError(f"{launch.kernel_name} has no argument {sorted(missing)}")
    args = tuple(a if a.name in SCRATCH_ARGS else
                 kernel_arg(a.name, names[a.name], None) if a.name in names else
                 kernel_arg(a.name, a.kind, values[a.name]) if a.name in values else
                 kernel_arg(a.name, kinds[a.kind], a.value) if a.kind in kinds else a
                 for a in launch.args)
    return replace(launch, args=args)


@lru_cache(maxsize=1024)
def config_items(params: Params) -> tuple[tuple[str, int], ...]:
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


@lru_cache(maxsize=256)
def legal_params(kind: str, data_type: str, kernel: str, ieee: bool
                  ) -> tuple[tuple[Params, int], ...]:
    """(parameters, SPLIT_K) of every legal configuration of a kernel on a target kind for a
    type (the spec's legal_space, which depends on nothing else: kept), without the MMA
    choices of the IEEE math."""
    out = []
    for config in spec_module().legal_space(kind, data_type, kernel):
        if ieee and config.get(MMA_PARAM):
            continue
        mma = int(config.get(MMA_PARAM, 0))
        params = tuple(int(config.get(k, 1)) for k in PARAM_NAMES) + ((mma,) if mma else ())
        out.append((params, int(config.get("SPLIT_K", 1))))
    return tuple(out)


@lru_cache(maxsize=1024)
def job_items(params: Params) -> tuple[tuple[str, int], ...]:
    """The configuration as a job's key: its items sorted by name."""
    return tuple(sorted(config_items(params)))


@lru_cache(maxsize=1024)
def config_view(params: Params) -> dict[str, int]:
    """The configuration of a parameter set, shared: read it, never change it."""
    return dict(config_items(params))



@lru_cache(maxsize=64)
def target_kind(arch: str) -> str | None:
    """The spec's kind of an arch; None without the kernels or for an arch it does not know."""
    if not have_kernels():
        return None
    try:
        return str(spec_module().target_kind(arch))
    except ValueError:
        return None


REDUCE_KERNEL = "conv2d_bwd_weight_reduce"


def packed_kernel(kernel: str) -> bool:
    """Whether `kernel` is one of the packed kernels (several groups of few channels to a
    tile, conv_triton_packed.py): 16-bit types only (FP32 grouped problems of few channels
    take the grouped direct family, whose kernels waste no multiply-adds)."""
    return bool(spec_module().KERNELS[kernel].get("packed"))


def splits_reduction(kernel: str) -> bool:
    """Whether the solvers use `kernel`'s SPLIT_K > 1 variant (the spec's SPLIT_BY_DEFAULT:
    backward weights, forward, backward data); its partial sums go to the workspace and
    REDUCE_KERNEL adds them into the output in a second launch."""
    return kernel in spec_module().SPLIT_BY_DEFAULT



@lru_cache(maxsize=256)
def reduce_job(data_type: str, target: Target, wide: bool = False) -> CompileJob:
    """The job of the reduce kernel that finishes a split launch of any SPLIT_K (a run-time
    argument; no alignment assumptions: its output is any tensor the caller passes); `wide`:
    the object of the spec's REDUCE_WIDE tile (small outputs split in many parts)."""
    spec = spec_module()
    if wide:
        config = tuple(sorted({**spec.REDUCE_WIDE, "num_stages": 1}.items()))
    else:
        config = (("num_warps", int(spec.REDUCE_WARPS)), ("num_stages", 1))
    return conv_triton_job(CONV_KERNEL_FILE, "ieee", REDUCE_KERNEL, data_type, config, False, False,
                       target)


def reduce_jobs(data_type: str, target: Target) -> list[CompileJob]:
    """Both reduce objects of a type (`reduce_step` takes either, by the launch): what a
    package holds beside any split object."""
    return [reduce_job(data_type, target), reduce_job(data_type, target, True)]


def reduce_step(data_type: str, split: int, target: Target, out_tensor: str,
                values: dict[str, int]) -> tuple[CompileJob, Launch]:
    """The follow-up that finishes a SPLIT_K = `split` launch: the reduce kernel's job and its
    launch, which sums the FP32 partials in the workspace into `out_tensor` (the caller's
    name for it; `values`: the spec's REDUCE_ARGS, any strides). The wide object where the
    usual one would leave most SMs idle (`spec.wide_reduce`)."""
    spec = spec_module()
    args = [kernel_arg("ws_ptr", "ptr:workspace", None),
            kernel_arg("w_ptr", "ptr:" + out_tensor, None)]
    values = {**values, "SPLIT_K": int(split)}
    args += [kernel_arg(name, "i32", int(values[name])) for name, kind in spec.REDUCE_ARGS
             if kind == "i32"]
    args += scratch_args()
    wide = bool(spec.wide_reduce(int(values["TOTAL"]), int(split), target.cu))
    block, warps = (int(spec.REDUCE_WIDE["BLOCK"]), int(spec.REDUCE_WIDE["num_warps"])) \
        if wide else (int(spec.REDUCE_BLOCK), int(spec.REDUCE_WARPS))
    grid = (int(spec.cdiv(values["TOTAL"], block)), 1, 1)
    launch = Launch(REDUCE_KERNEL, grid, (warps * 32, 1, 1), tuple(args), needs_meta=True)
    return reduce_job(data_type, target, wide), launch


def companion_jobs(job: CompileJob) -> tuple[CompileJob, ...]:
    """The jobs a launch of `job`'s object needs after it: the reduce kernel of a SPLIT_K > 1
    object of a splitting kernel (read from the job's options), else none."""
    if job.kernel_file != CONV_KERNEL_FILE or not splits_reduction(job.kernel_name):
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
    return tuple(reduce_jobs(data_type, job.target))


@lru_cache(maxsize=4096)
def conv_triton_job(kernel_file: str, math: str, kernel: str, data_type: str,
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
                              spec.align_assumptions(kernel, data_type, channels_last)
                              if aligned else (),
                              int(config.get(MMA_PARAM, 0)))


def triton_compile_job(kernel_file: str, kernel: str, sig: dict[str, str],
                       constexprs: dict[str, Any], warps: int, stages: int, target: Target,
                       assume16: Sequence[str | tuple[str, int]] = (), mma: int = 0
                       ) -> CompileJob:
    """The job of one Triton object, its options spelling everything that shapes it: the
    symbol (part of the kdb row's args: one row per (source, args) holds one kernel), the
    constexprs, the run-time signature, warps and stages, mma.sync where `mma` is 2, and the
    arguments `assume16` assumes multiples of 16 (pointers: 16-byte aligned), or of the
    divisor given beside a name."""
    options = [f"--kernel={kernel}", *(f"-D{k}={v}" for k, v in constexprs.items()),
               "--signature=" + ",".join(f"{k}:{v}" for k, v in sig.items()
                                         if v != "constexpr"),
               f"--num-warps={int(warps)}", f"--num-stages={int(stages)}"]
    if mma:
        options.append(f"--mma={int(mma)}")
    if assume16:
        options.append("--assume=" + ",".join(
            f"{a}:16" if isinstance(a, str) else f"{a[0]}:{int(a[1])}" for a in assume16))
    return CompileJob(kernel_file, tuple(options), kernel, target)


def spec_compile_job(kernel_file: str, spec: Any, kernel: str, sig: dict[str, str],
                     constexprs: dict[str, Any], values: dict[str, int], target: Target,
                     aligned: bool, divisor: int = 16,
                     names: Sequence[str] | None = None) -> CompileJob:
    """`triton_compile_job` of one kernel of a family's spec (its ARGS and ALIGN16 tables):
    where `aligned`, its pointers are assumed 16-byte aligned and its ALIGN16 arguments (or
    `names`, where a family's assumptions depend on more than the kernel) multiples of
    `divisor` (16 elements, or what the spec's `align_divisor` says)."""
    assumed = spec.ALIGN16[kernel] if names is None else names
    assume: tuple[str | tuple[str, int], ...] = (
        (*(n for n, k in spec.ARGS[kernel] if k.startswith("ptr")),
         *((a, int(divisor)) for a in assumed)) if aligned else ())
    return triton_compile_job(kernel_file, kernel, sig, constexprs, values["num_warps"],
                              values["num_stages"], target, assume)


def spec_kernel_args(spec: Any, direction: str, view: ConvView, sizes: dict[str, int],
                     strides: Mapping[str, tuple[int, ...]]) -> tuple[KernelArg, ...]:
    """The arguments of a family's kernel for one direction, from its spec (ARGS, TENSORS,
    arg_values): pointers to the layer's tensors or the workspace, i32 sizes and strides, and
    the scratch arguments every Triton kernel takes."""
    names = {"x": view.in_tensor, "w": view.wei_tensor, "y": view.out_tensor,
             "ws": "workspace"}
    tensors = spec.TENSORS[direction]
    values = spec.arg_values(direction, sizes, strides)
    args = []
    for name, kind in spec.ARGS[spec.KERNEL[direction]]:
        if kind.startswith("ptr"):
            args.append(kernel_arg(name, "ptr:" + names[tensors[name]], None))
        elif kind == "i32":
            args.append(kernel_arg(name, "i32", int(values[name])))
    return (*args, *scratch_args())


def spec_launch(spec: Any, direction: str, view: ConvView, sizes: dict[str, int],
                strides: Mapping[str, tuple[int, ...]],
                geometry: tuple[tuple[int, int, int], tuple[int, int, int]],
                workspace: int) -> Launch:
    """The launch of a family's kernel for one direction (`spec.KERNEL`): its arguments
    (`spec_kernel_args`), grid and block, and the workspace it needs; block and shared memory
    are checked against the object's metadata."""
    grid, block = geometry
    return Launch(spec.KERNEL[direction], grid, block,
                  spec_kernel_args(spec, direction, view, sizes, strides),
                  workspace_bytes=workspace, needs_meta=True)


#: The spec modules whose kernels a package may hold (each may list NO_MATRIX_KERNELS).
_KERNEL_SPECS = ("conv_triton_spec", "conv_triton_1x1_spec", "conv_triton_winograd_spec",
                 "conv_triton_depthwise_spec", "conv_triton_grouped_spec",
                 "conv_triton_depthwise3d_spec",
                 "conv_triton_3d_spec", "conv_triton_pad_spec", "conv_triton_fma_spec",
                 "conv_triton_fewk_spec", "conv_triton_fewk_wrw_spec",
                 "conv_triton_fewc_wrw_spec", "conv_triton_fewk_bwd_spec",
                 "conv_triton_kn2row_spec", "conv_triton_im2col_spec")


@lru_cache(maxsize=1)
def no_matrix_kernels() -> frozenset[str]:
    """Triton kernels that run no matrix instruction by design (every installed spec's
    NO_MATRIX_KERNELS): the code-object check does not ask their objects for one."""
    names: set[str] = set()
    for name in _KERNEL_SPECS:
        if has_kernels_spec(name):
            names.update(getattr(kernels_spec(name), "NO_MATRIX_KERNELS", ()))
    return frozenset(names)


def have_kernels() -> bool:
    """Whether the Triton kernels' spec is installed."""
    return has_kernels_spec("conv_triton_spec")


def tf32x3_capable(target: Target) -> bool:
    """Kinds whose TF32 tensor cores run the three-product FP32 solvers (spec TF32X3_KINDS)."""
    kind = target_kind(target.arch)
    return kind is not None and kind in spec_module().TF32X3_KINDS


#: The spec's name of a math mode's type in tuned cases and Via tables ("FP32" for IEEE).
MATH_TYPE = {"tf32": "TF32", "tf32x3": "FP32X3"}


def tf32_capable(target: Target) -> bool:
    """Matrix cores with a TF32 mode: NVIDIA sm80+, CDNA 3 (gfx942 xf32)."""
    matrix = spec_for(target.arch).matrix
    return bool(matrix) and (target.vendor == "nvidia" or target.arch == "gfx942")



@lru_cache(maxsize=4096)
def spec_sizes(view: ConvView) -> dict[str, int]:
    """The spec's sizes of a view (kept per view: read them, never change them)."""
    f = view.field
    g = f("g")
    return {"N": f("n"), "C": f("c") // g, "H": f("in_h"), "W": f("in_w"), "K": f("k") // g,
            "P": f("out_h"), "Q": f("out_w"), "R": f("fil_h"), "S": f("fil_w"), "G": g,
            "stride_h": f("str_h"), "stride_w": f("str_w"), "pad_h": f("pad_h"),
            "pad_w": f("pad_w"), "dil_h": f("dil_h"), "dil_w": f("dil_w")}


def spec_strides(view: ConvView) -> dict[str, tuple[int, int, int, int]]:
    f = view.field
    return {"x": (f("xs_n"), f("xs_c"), f("xs_h"), f("xs_w")),
            "w": (f("ws_k"), f("ws_c"), f("ws_h"), f("ws_w")),
            "y": (f("ys_n"), f("ys_k"), f("ys_h"), f("ys_w"))}


@lru_cache(maxsize=4096)
def spec_view(problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                             dict[str, tuple[int, int, int, int]]]:
    """(view, spec sizes, spec strides) of a 2-D problem, kept per problem: the direct and
    library families' launch data reads them (read them, never change them)."""
    view = conv_view(problem)
    return view, spec_sizes(view), spec_strides(view)

def spec_sizes_3d(view: ConvView) -> dict[str, int]:
    """The 3-D families' sizes of a view (C and K per group; Z, P, Q the output's depth,
    height and width, D, H, W the input's, T, R, S the filter's)."""
    f = view.field
    g = f("g")
    sizes = {"N": f("n"), "C": f("c") // g, "K": f("k") // g, "G": g, "Z": f("out_d"),
             "P": f("out_h"), "Q": f("out_w"), "T": f("fil_d"), "R": f("fil_h"),
             "S": f("fil_w")}
    for axis in ("d", "h", "w"):
        sizes[axis.upper()] = f(f"in_{axis}")
        for name, field in (("stride", "str"), ("pad", "pad"), ("dil", "dil")):
            sizes[f"{name}_{axis}"] = f(f"{field}_{axis}")
    return sizes


def spec_strides_3d(view: ConvView) -> dict[str, tuple[int, ...]]:
    """Strides of x, w, y in (n, c, d, h, w) / (k, c, t, r, s) / (n, k, d, h, w) order."""
    return {t: tuple(view.field(f"{t}s_{a}") for a in axes)
            for t, axes in (("x", "ncdhw"), ("w", "kcdhw"), ("y", "nkdhw"))}




_GRID_YZ_MAX = 65535


@lru_cache(maxsize=4096)
def shape_fits(view: ConvView) -> bool:
    """Whether the conv kernels index a view's tensors in 32 bits and its grid keeps within
    the y and z limits."""
    sizes = spec_sizes(view)
    if not spec_module().fits_int32(sizes):
        return False
    return (sizes["G"] <= _GRID_YZ_MAX and sizes["G"] * sizes["R"] * sizes["S"]
            <= _GRID_YZ_MAX and sizes["stride_h"] * sizes["stride_w"] <= _GRID_YZ_MAX)
