"""`miopenkernels tune`: measure PerfDb parameters and FindDb records on this machine's GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..config import MathMode
from ..errors import BackendError, NoDeviceError, ProblemError, TargetError
from ._app import require_extra
from ._options import JsonFlag, ManifestsOption, PerfDbFormats, globs, out_option, targets_option
from ._output import Progress, err_console, print_json

_NO_GPU = ("tuning measures kernels on this machine's GPU and {what}; run 'miopenkernels tune' "
           "on a machine with the GPU to tune ('miopenkernels detect' shows a machine's GPUs)")


def _maths(text: str) -> tuple[MathMode, ...]:
    """`--fp32-math`: () for the environment's mode, else the modes named."""
    if not text:
        return ()
    name = text.strip().upper()
    if name == "BOTH":
        return (MathMode.IEEE, MathMode.TF32)
    if name not in MathMode.__members__:
        raise ProblemError(f"--fp32-math {text!r} is not IEEE, TF32 or BOTH")
    return (MathMode[name],)


def register(app: typer.Typer) -> None:
    @app.command("tune")
    def tune_cmd(
        out: Path = out_option("Folder for the database shards."),
        manifests: ManifestsOption = None,
        solvers: str = typer.Option("*", "--solvers", help="Glob over solver names."),
        targets_given: list[str] | None = targets_option(
            "Globs the GPU found must match ('sm90-*'): a guard for scripts, as tuning "
            "measures the GPU of this machine only."),
        directions: str = typer.Option("FBW", "--directions", help="Directions to tune."),
        shard: str = typer.Option(None, "--shard", help="I/N: every N-th problem from I."),
        max_problems: int = typer.Option(0, "--max-problems", help="Stop after N problems."),
        resume: list[Path] = typer.Option(
            None, "--resume",
            help="FindDb shard(s) of an earlier run: problems with a record are skipped."),
        time_limit: float = typer.Option(600.0, "--time-limit",
                                         help="Seconds for the whole run."),
        per_solver: float = typer.Option(20.0, "--per-solver",
                                         help="Seconds per tunable solver and problem."),
        candidates: int = typer.Option(24, "--candidates",
                                       help="Parameter sets tried per tunable solver."),
        precompile: bool = typer.Option(
            True, "--precompile/--no-precompile",
            help="Compile every candidate on all cores into the user kernel cache first."),
        fp32_math: str = typer.Option(
            "", "--fp32-math", metavar="IEEE|TF32|BOTH",
            help="Math mode(s) FP32 problems are tuned under; TF32 records are keyed "
                 "'<key>_tf32'. Default: MIOPENKERNELS_FP32_MATH, else IEEE."),
        fmt: PerfDbFormats = typer.Option(PerfDbFormats.text, "--perfdb-format",
                                          help="Format of the PerfDb shard."),
        as_json: JsonFlag = False,
    ) -> None:
        """Search tunable solvers' parameters and time every solver; write <basename> shards."""
        from miopenkernels.builder.manifest import load_manifests
        from miopenkernels.builder.tune import select_shard, tune
        from miopenkernels.handle import Handle
        from miopenkernels.target import select_targets

        targets = globs(targets_given)
        maths = _maths(fp32_math)
        # Tuning compiles its candidates (Triton ones too) with the builder's tools.
        require_extra("tune", ["compile"])

        def run() -> Any:
            try:
                handle = Handle()
            except NoDeviceError:
                raise NoDeviceError(_NO_GPU.format(what="none was found")) from None
            if handle.backend.name == "null":  # MIOPEN_DEVICE_ARCH/CU name a GPU not present
                raise NoDeviceError(_NO_GPU.format(
                    what=f"no {handle.target.name} GPU was found"))
            if targets:
                wanted = select_targets(targets)
                if handle.target not in wanted:
                    names = ", ".join(t.name for t in wanted)
                    raise TargetError(f"this GPU is {handle.target.name}; cannot tune for "
                                      f"{names} here")
            problems = [p for p in load_manifests(manifests) if p.direction in directions]
            problems = select_shard(problems, shard)
            done: set[str] = set()
            if resume:
                from miopenkernels.db.finddb import FindDbFile

                for path in resume:
                    done |= set(FindDbFile.read(path).records)
            if max_problems:
                problems = problems[:max_problems]
            formats = ("text", "sqlite") if fmt == PerfDbFormats.both else (fmt.value,)
            if precompile and not handle.cache_disabled:
                from miopenkernels.builder.precompile import precompile as compile_ahead
                from miopenkernels.builder.precompile import tuning_jobs

                jobs = tuning_jobs(problems, handle.target, candidates)
                compiled = compile_ahead(jobs, handle.paths.user_kdb)
                err_console.print(f"precompiled: {compiled}", highlight=False)

            with Progress("tune", "problems") as bar:
                def progress(i: int, n: int, key: str, sols: list[Any]) -> None:
                    best = (f"{sols[0].solver} {sols[0].time:.4g} ms" if sols
                            else "no solver ran")
                    bar.step(f"{i}/{n} {key}: {best}")
                    if bar.terminal:  # a log has the line above per problem already
                        bar.update(i, n)

                return tune(handle, problems, out, solver_glob=solvers,
                            time_limit_s=time_limit, per_solver_s=per_solver, formats=formats,
                            progress=progress, max_candidates=candidates,
                            maths=maths or None, done=done)

        result = run()
        if as_json:
            print_json(result.to_dict())
        else:
            s = result.to_dict()
            typer.echo(f"tuned {s['tuned']}/{s['problems']} problems of {s['basename']} in "
                       f"{s['seconds']} s ({s['not_reached']} not reached); wrote "
                       + ", ".join(s["files"]))
        if result.stopped:
            raise BackendError(f"tuning stopped, the GPU context was lost: {result.stopped}; "
                               "what was measured before is written; --resume from its FindDb "
                               "in a new process")
