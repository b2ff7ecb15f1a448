"""The solver protocol: what the registry tells the builder (jobs) and the runtime (launches).

A *solver* is one way of computing a convolution direction (MIOpen's word). It says whether it can
solve a problem on a target, which tunable parameters it has, which compile job builds its kernel,
and how to launch that kernel. Primitives (activation, pooling, ...) use the same `CompileJob` and
`Launch` records.

Kernels
-------
Every kernel is one `extern "C"` symbol in a portable HIP C++ file under `kernels/`; element type,
direction and (for specialised kernels) the shape come from `-D` options. A *dynamic* job takes the
shape (sizes and element strides) as kernel arguments, so one binary per (solver, params, type,
direction) serves every problem and layout; a *specialised* job additionally bakes the shape in as
`-DMK_SPEC=1 -DMK_S_<field>=<value>` so that index arithmetic folds to constants. Both kinds take
the same argument list, so `launch()` is the same for both.

Sources include `mk_portable.h` (and sometimes a sibling header) with `#include "..."`. A compiler
that reads the file from `kernels/` finds them by itself; a compiler fed a string (NVRTC) either
gets `--include-path=<kernels dir>` or the text from `kernel_sources.expand_source()`, which
inlines the includes.

Compile commands (verified on this repository's CI image)
--------------------------------------------------------
AMD, a bare code object (ELF, e_machine EM_AMDGPU = 224, symbols `<name>` and `<name>.kd`), no HIP
headers and no device libraries needed, so any arch the compiler knows works::

    clang-19 -x hip -std=c++17 --offload-arch=<compile_arch> --cuda-device-only \
        --no-gpu-bundle-output -nogpuinc -nogpulib -O3 <options> -c -o out.co kernels/<file>
    HIP_PLATFORM=amd hipcc <same flags>          # Debian's hipcc (clang 15)

Without `--no-gpu-bundle-output` the result is a clang offload bundle, not an ELF. clang-19 writes
code object v5 (EI_ABIVERSION 3), clang 15 v4 (EI_ABIVERSION 2); both load on ROCm >= 5.
`HIP_PLATFORM=amd` matters where nvcc is installed too: hipcc would otherwise pick nvcc.

NVIDIA, a cubin through NVRTC (cuda.bindings.nvrtc): source = `expand_source(job.kernel_file)`,
options = `job.options + ("-arch=sm_90", "-std=c++17")` (the arch is the target's
`spec_for(arch).compile_arch`), then `nvrtcGetCUBIN`. No CUDA headers are needed.

KernelDb row: `kernel_name = job.kdb_name` (`conv_direct.hip.o`), `kernel_args = job.kdb_args`
(`"<options joined by spaces> -mcpu=<arch>"`, where arch is the target's DbId without target
features: `gfx90a`, and for NVIDIA the `sm<NN>` spelling of Target.arch: ` -mcpu=sm90`).

Launch
------
`Launch.grid` is the number of blocks per dimension (CUDA's gridDim and hipModuleLaunchKernel's
convention, not HIP's global work size); `block` is threads per block. Arguments are marshalled in
order, each at its natural alignment: pointers 8 bytes, `i32` and `f32` 4 bytes. A pointer
argument's kind names the problem tensor to pass, in the problem's own words for its direction:
forward `x, w, y`; backward data `dy, w, dx`; backward weights `x, dy, dw`; primitives name theirs
(`ptr:scale`, `ptr:mean`, ...). `ptr:workspace` is a device buffer of `Launch.workspace_bytes`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from .._lazy_re import lazy
from .._record import dataclass, field
from ..errors import ProblemError
from ..kernel_sources import kernels_dir
from ..problem import ConvProblem
from ..target import Target, spec_for

__all__ = [
    "CompileJob",
    "KernelArg",
    "Launch",
    "Solver",
    "Params",
    "ARG_KINDS",
]

Params = tuple[int, ...]
"""A solver's tunable parameters: ints in the solver's own order (empty when not tunable)."""

ARG_KINDS = ("i32", "f32")
"""Scalar argument kinds; pointer kinds are `ptr:<tensor name>`."""

_PTR_RE = lazy(r"^ptr:[a-z_][a-z_0-9]*(@[0-9]+)?$")


@dataclass(frozen=True)
class CompileJob:
    """One kernel binary to build: source file, compile options, symbol and target.

    `options` are sorted `-D` defines so that equal jobs compare, hash and serialise equal; one
    code object per job holds exactly the symbol `kernel_name`.
    """

    kernel_file: str
    options: tuple[str, ...]
    kernel_name: str
    target: Target

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(sorted(self.options)))

    @cached_property
    def kdb_name(self) -> str:
        """KernelDb `kernel_name`: the source file name plus `.o`."""
        return self.kernel_file + ".o"

    @cached_property
    def kdb_args(self) -> str:
        """KernelDb `kernel_args`: options, then ` -mcpu=<arch>` (DbId; NVIDIA: `sm90`)."""
        return " ".join(self.options) + " -mcpu=" + self.target.arch

    @property
    def source_path(self) -> Path:
        return kernels_dir() / self.kernel_file

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel_file": self.kernel_file,
            "options": list(self.options),
            "kernel_name": self.kernel_name,
            "target": self.target.name,
            "kdb_name": self.kdb_name,
            "kdb_args": self.kdb_args,
        }


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument: `kind` is `ptr:<tensor>`, `i32` or `f32`; scalars carry `value`."""

    name: str
    kind: str
    value: int | float | None = None

    def __post_init__(self) -> None:
        if self.kind in ARG_KINDS:
            if self.value is None:
                raise ValueError(f"scalar argument {self.name} needs a value")
            if self.kind == "i32" and not -(2**31) <= int(self.value) < 2**31:
                raise ProblemError(f"argument {self.name}={self.value} does not fit in 32 bits")
        elif not _PTR_RE.match(self.kind):
            raise ValueError(f"argument kind {self.kind!r} is not ptr:<name>, i32 or f32")

    @cached_property
    def is_pointer(self) -> bool:
        return self.kind.startswith("ptr:")

    @cached_property
    def tensor(self) -> str:
        """The tensor a pointer argument names (`x`, `dw`, `workspace`...)."""
        return self.kind[4:] if self.is_pointer else ""

    @cached_property
    def whole(self) -> str:
        """The tensor a pointer argument points into (`x` of `x@4096`: `split_offset`)."""
        return split_offset(self.tensor)[0]


def split_offset(name: str) -> tuple[str, int]:
    """A launch's pointer name as (tensor, byte offset): "x@4096" is 4096 bytes into x (a part
    of the layer's tensor, as a batch chunk's launches take), "x" is x itself."""
    tensor, _, offset = name.partition("@")
    return tensor, int(offset) if offset else 0


@dataclass(frozen=True)
class Launch:
    """How to launch one kernel: symbol, grid (blocks), block (threads), shared memory, args.

    `shared_bytes` is dynamic shared memory; the kernels here declare theirs statically, so the
    code object carries it and this is 0.
    """

    kernel_name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[KernelArg, ...]
    shared_bytes: int = 0
    workspace_bytes: int = 0
    # Tensors (by role: "y", "dx", ...) the runtime clears before the launch: the 3-D backward
    # data launch that runs stride phase 0 alone (its other phases are zero).
    zero_first: tuple[str, ...] = field(default=())
    # The code object carries its own block size and shared memory (a Triton kernel's
    # LaunchMeta); the runtime takes them from there and refuses an object without.
    needs_meta: bool = False

    @property
    def threads(self) -> int:
        g, b = self.grid, self.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]

    def pointer_args(self) -> list[str]:
        """Tensor names in argument order."""
        return [a.tensor for a in self.args if a.is_pointer]

    def scalars(self) -> dict[str, int | float]:
        return {a.name: a.value for a in self.args if not a.is_pointer and a.value is not None}


class Solver:
    """Base class of every convolution solver; subclasses fill in the class attributes.

    `directions` lists the directions (as solved, see `solved_direction`) a solver handles;
    `algorithm` maps each to MIOpen's FindDb algorithm name.
    """

    name: str = ""
    algorithm_names: dict[str, str] = {}
    directions: frozenset[str] = frozenset()
    tunable: bool = False
    #: The miss ranking puts this solver's candidate ahead of those of solvers without it
    #: (the TF32 tensor-core solvers, which apply only under the TF32 math mode); per problem,
    #: `claims_first` says, and the registry's `ranks_first` settles between claims.
    rank_first: bool = False
    kernel_file: str = ""
    language: str = "hip"  # 'hip' (portable C++) or 'triton'
    math: str = "ieee"  # FP32 math: 'ieee', 'tf32' (only under a TF32 math mode) or 'tf32x3'
    # (three TF32 products: FP32 accuracy, either mode)

    # ------------------------------------------------------------------ identity
    @property
    def ranking_name(self) -> str:
        """The name whose weights and parameter sets the miss ranking's model uses: the
        solver's own, or that of the solver whose kernels it launches."""
        return self.name

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Whether this solver's candidate for `problem` should go ahead of those of solvers
        that do not claim it (`rank_first` unless a solver knows better per problem). Where
        several families claim a problem, the registry's precedence (`solvers.YIELDS_TO`)
        says which ranks first: `solvers.ranks_first`."""
        return self.rank_first

    def algorithm(self, problem: ConvProblem) -> str:
        """MIOpen's algorithm name for the problem's key direction."""
        return self.algorithm_names[problem.key_direction]

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        """Whether this solver computes `problem` correctly on `target`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Every legal parameter set for `problem` (just `[()]` for a solver without tunables)."""
        return [()]

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The parameters used without a PerfDb entry."""
        return ()

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Parameter sets whose kernels every package holds, for the miss ranking to try after
        `default_params` when those are not at hand; none by default."""
        return []

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """Whether the miss ranking should consider `default_params` alone for this problem
        (the defaults were shaped to the problem, e.g. a split that fills the GPU, in a way the
        ranking's model cannot weigh against other sets); False by default."""
        return False

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Parameter sets a search tries right after the defaults (e.g. those measured fastest
        on similar problems); none by default."""
        return []

    def params_to_string(self, params: Params) -> str:
        """PerfDb `params` text: values joined by ','."""
        return ",".join(str(int(v)) for v in params)

    def params_from_string(self, text: str) -> Params:
        """Inverse of `params_to_string`; raises ProblemError on malformed text."""
        text = text.strip()
        if not text:
            return ()
        try:
            return tuple(int(v) for v in text.split(","))
        except ValueError:
            raise ProblemError(f"{self.name}: params {text!r} are not integers joined by ','") \
                from None

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """Whether `params` (e.g. read from a PerfDb) are legal for `problem`."""
        return params in self.param_space(problem, target)

    # ------------------------------------------------------------------ kernels
    def compile_job(
        self, problem: ConvProblem, params: Params, target: Target, specialised: bool = False
    ) -> CompileJob:
        """The job whose binary solves `problem`; a dynamic one is shared by many problems."""
        raise NotImplementedError

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The shape-agnostic binaries worth shipping for `target`, in a deterministic order."""
        raise NotImplementedError

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob | None:
        """A variant of `compile_job` without pointer-alignment assumptions, for tensors that
        are not aligned; None when the solver's objects assume no alignment."""
        return None

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False) -> Launch:
        """Grid, block and arguments for the binary of `compile_job(problem, params, ...)`."""
        raise NotImplementedError

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Launches that prepare the main one, in order, each with its own job (a layout
        transpose into the workspace); none for most solvers. Their objects are in the
        solver's `dynamic_jobs`."""
        return ()

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        """Pointer names of this solver's launches that address parts of the workspace, with
        their byte offsets into it ({"ws_x": 0, ...}); none for most solvers."""
        return {}

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Launches that finish the main one, in order, each with its own job (a split
        reduction's sum of partials); none for most solvers. Their objects are built wherever
        the main one is (`solvers.companion_jobs`)."""
        return ()

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The follow-ups of the variant for tensors that miss the alignment assumptions
        (`unaligned_job`'s): `follow_ups`, unless a solver's follow-ups run objects that assume
        the caller's pointers aligned (the batch-chunk solvers' later chunks)."""
        return self.follow_ups(problem, params, target)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) of `launch(problem, params)`, for cost models; solvers may answer
        without building the argument list."""
        launch = self.launch(problem, params)
        return launch.grid, launch.block

    def workspace_bytes(self, problem: ConvProblem) -> int:
        """Device scratch memory the solver needs whatever its parameters (0 for the solvers
        here; see `workspace_for`)."""
        return 0

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        """Device scratch memory one parameter set needs (a split reduction's partial sums);
        `workspace_bytes` unless a solver's parameters change it."""
        return self.workspace_bytes(problem)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """Estimated cost (lower is better) for immediate mode when no FindDb entry exists."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Solver {self.name}>"


class InnerParameters:
    """A solver that runs another's kernels on a relaid form of the problem (`inner`,
    `_relaid`; mixed in ahead of its Solver base): its parameters, their defaults and seeds,
    and its conv objects are the inner solver's on that problem."""

    inner: Solver

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        raise NotImplementedError

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.inner.param_space(self._relaid(problem), target)

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.inner.params_valid(self._relaid(problem), target, params)

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        return self.inner.default_params(self._relaid(problem), target)

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.inner.usual_params(self._relaid(problem), target)

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        return self.inner.defaults_rule(self._relaid(problem), target)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.inner.seed_params(self._relaid(problem), target)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        return self.inner.compile_job(self._relaid(problem), params, target, specialised)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        """The inner solver's variant for unaligned pointers (its only object where it has
        none)."""
        relaid = self._relaid(problem)
        job = self.inner.unaligned_job(relaid, params, target)
        return job if job is not None else self.inner.compile_job(relaid, params, target)


class InnerSolver(InnerParameters):
    """A solver that runs another's launches on a relaid form of the problem under a name of
    its own (mixed in ahead of Solver): `inner`'s direction, math, kernel file and algorithm
    names, its name with `word` before the direction suffix (...SlicesFwd), and the ranking's
    model of `inner`."""

    tunable = True
    language = "triton"

    def __init__(self, inner: Solver, word: str) -> None:
        self.inner = inner
        self.direction = getattr(inner, "direction", "")
        self.math = inner.math
        self.rank_first = False
        self.kernel_file = inner.kernel_file
        self.directions = inner.directions
        self.algorithm_names = dict(inner.algorithm_names)
        self.name = f"{inner.name[:-3]}{word}{inner.name[-3:]}"

    @property
    def ranking_name(self) -> str:
        return self.inner.ranking_name


def family_claims(solvers: Iterable[Solver], family: type[Solver], problem: ConvProblem,
                  target: Target) -> bool:
    """Whether a solver of exactly `family` among `solvers` applies to the problem and claims
    first place on it (`Solver.claims_first`): a family's entry in the registry's
    FIRST_CLAIMS."""
    return any(type(s) is family and s.is_applicable(problem, target) and
               s.claims_first(problem, target) for s in solvers)


class WorkspaceParts:
    """A solver whose workspace is named parts (mixed in ahead of its Solver base): its
    `workspace_slots` and `workspace_for` read `_layout` ({slot: byte offset}, total bytes)."""

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        raise NotImplementedError

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return self._layout(problem, params)[0]

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return self._layout(problem, params)[1]


def hip_kernels(target: Target) -> bool:
    """Whether the portable HIP C++ kernels exist for `target` (a C++ compiler knows its arch;
    targets.toml's compiler "triton" says none does)."""
    return spec_for(target.arch).compiler != "triton"


def type_supported(type_name: str, target: Target) -> bool:
    """Whether the portable kernels (conv and primitives) exist for a type on `target`: FP32
    and FP16 everywhere a C++ compiler knows the arch; BF16 where targets.toml says so."""
    if not hip_kernels(target):
        return False
    if type_name in ("FP32", "FP16"):
        return True
    return type_name == "BF16" and spec_for(target.arch).has_bf16
