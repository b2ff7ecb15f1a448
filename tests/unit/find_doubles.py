"""Doubles for handle/find unit tests: a solver family and a compiler that makes fake cubins."""

from __future__ import annotations

import struct
from pathlib import Path

from miopenkernels.problem import ConvProblem
from miopenkernels.solvers.base import CompileJob, KernelArg, Launch, Solver
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
PROBLEM = ConvProblem(n=2, c=4, k=8, in_spatial=(6, 6), filter=(3, 3), pad=(1, 1))


def fake_cubin(sm: int, symbols: list[str]) -> bytes:
    """An ELF header that says EM_CUDA / ABI 8 / sm in e_flags bits 8-15, then the names."""
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4], head[5], head[7], head[8] = 2, 1, 0x41, 8
    struct.pack_into("<H", head, 18, 190)
    struct.pack_into("<I", head, 48, 0x6000004 | (sm << 8))
    return bytes(head) + b"\0".join(s.encode() for s in symbols) + b"\0" * 600


class FakeSolver(Solver):
    """Direction-agnostic solver; tunable over one int P (kernel symbol carries it)."""

    def __init__(self, name: str, rank: float, tunable: bool = False,
                 space: tuple[int, ...] = (1,), broken: tuple[int, ...] = ()) -> None:
        self.name = name
        self.rank = rank
        self.tunable = tunable
        self.space = space
        self.broken = broken
        self.algorithm_names = {"F": "miopenConvolutionFwdAlgoDirect",
                                "B": "miopenConvolutionBwdDataAlgoDirect",
                                "W": "miopenConvolutionBwdWeightsAlgoDirect"}
        self.directions = frozenset("FBW")

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        return True

    def param_space(self, problem: ConvProblem, target: Target) -> list[tuple[int, ...]]:
        return [(p,) for p in self.space]

    def default_params(self, problem: ConvProblem, target: Target) -> tuple[int, ...]:
        return (self.space[0],) if self.tunable else ()

    def symbol(self, params: tuple[int, ...]) -> str:
        return f"{self.name.lower()}_p{params[0] if params else 0}"

    def compile_job(self, problem: ConvProblem, params: tuple[int, ...], target: Target,
                    specialised: bool = False) -> CompileJob:
        opts = [f"-DP={params[0] if params else 0}", f"-DSOLVER={self.name}"]
        if specialised:
            opts.append(f"-DMK_SPEC=1 -DKEY={problem.key()}")
        return CompileJob("fake.hip", tuple(opts), self.symbol(params), target)

    def launch(self, problem: ConvProblem, params: tuple[int, ...],
               specialised: bool = False) -> Launch:
        names = {"F": ("x", "w", "y"), "B": ("dy", "w", "dx"), "W": ("x", "dy", "dw")}
        ptrs = tuple(KernelArg(n, f"ptr:{n}") for n in names[problem.direction])
        return Launch(self.symbol(params), (problem.n, 1, 1), (64, 1, 1),
                      (*ptrs, KernelArg("n", "i32", problem.n), KernelArg("a", "f32", 0.5)))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return self.rank


class FakeCompiler:
    """Counts compiles; jobs whose P is in a solver's `broken` fail."""

    def __init__(self, broken: set[int] | None = None) -> None:
        self.jobs: list[CompileJob] = []
        self.broken = broken or set()

    def __call__(self, job: CompileJob) -> bytes:
        from miopenkernels.errors import CompileError

        self.jobs.append(job)
        p = int(next((o[4:] for o in job.options if o.startswith("-DP=")), "0"))
        if p in self.broken:
            raise CompileError(f"fake compile of P={p} failed", log="error: nope")
        return fake_cubin(job.target.sm, [job.kernel_name])


def db_env(monkeypatch, tmp_path: Path) -> dict[str, Path]:  # noqa: ANN001
    dirs = {"system": tmp_path / "sys", "user": tmp_path / "user", "cache": tmp_path / "cache"}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(dirs["system"]))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(dirs["user"]))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(dirs["cache"]))
    for var in ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_DISABLE_CACHE",
                "MIOPEN_DEVICE_ARCH", "MIOPEN_DEVICE_CU"):
        monkeypatch.delenv(var, raising=False)
    return dirs


def triton_compiler(assumed: str = "x_ptr % 16 == 0"):  # noqa: ANN201
    """A compiler double for Triton jobs: a fake sm90 cubin carrying LaunchMetadata (128
    threads, no shared memory, Triton's two scratch pointers), whose assumptions are `assumed`
    where the job names any (--assume=)."""
    from miopenkernels.codeobject import LaunchMetadata, attach_launch_metadata

    def compile_job(job: CompileJob) -> bytes:
        aligned = any(o.startswith("--assume") for o in job.options)
        meta = LaunchMetadata(job.kernel_name, threads_per_block=128, shared_bytes=0,
                              scratch_args=(("global_scratch", 0, 1),
                                            ("profile_scratch", 0, 1)),
                              assumptions=(assumed,) if aligned else ())
        return attach_launch_metadata(fake_cubin(90, [job.kernel_name]), meta)

    return compile_job


def run_recorded(backend, inv):  # noqa: ANN001, ANN201
    """Run an invoker on the null backend with fresh buffers (x, w, y of 4 KiB each and its
    workspace): (the launches it recorded, the pointers it was given)."""
    ws = backend.alloc(inv.workspace_bytes) if inv.workspace_bytes else None
    bufs = {r: backend.alloc(4096) for r in ("x", "w", "y")}
    ptrs = {r: b.ptr for r, b in bufs.items()} | {"workspace": ws.ptr if ws else 0}
    before = len(backend.recorded)
    inv(ptrs)
    return backend.recorded[before:], ptrs
