"""`miopenkernels build`: compile the kernels of the chosen targets into one kdb per target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import CompileError, MissingDependencyError
from ..target import Target, select_targets
from ._app import require_extra
from ._options import JsonFlag, ManifestsOption, globs, out_option, path_option, targets_option
from ._output import Progress, console, err_console, human_bytes, note, print_json


def _summary_table(result: Any) -> Table:
    # Per-target rows count jobs (one target's view); the last row counts distinct objects,
    # as the build compiles each once however many targets use it.
    from miopenkernels.builder.jobs import TargetDbs

    table = Table(title=f"build: {result.wall_seconds:.1f} s")
    for col in ("target", "jobs", "compiled", "cached", "failed", "kdb", "dbs"):
        table.add_column(col, justify="left" if col in ("target", "dbs") else "right")
    for t in result.targets:
        kdb = "-" if not t.kdb else human_bytes(t.kdb_bytes) + (" =" if t.kdb_unchanged else "")
        dbs = ("predicted" if t.predicted else
               "measured" if TargetDbs(t.target).finddb_path is not None else "-")
        table.add_row(t.target.name, str(t.jobs), str(t.compiled), str(t.cached),
                      f"[red]{t.failed}[/red]" if t.failed else "0", kdb, dbs)
    table.add_section()
    table.add_row("distinct", str(result.objects), str(result.compiled), str(result.cached),
                  str(len(result.failures)),
                  human_bytes(sum(t.kdb_bytes for t in result.targets)), "")
    table.caption = ("distinct: objects, each compiled once for all targets; =: kdb unchanged; "
                     "dbs: the databases a package of the target gets")
    return table


def register(app: typer.Typer) -> None:
    @app.command("build")
    def build_cmd(
        targets_given: list[str] | None = targets_option(
            "Comma-separated globs over target names ('gfx9*,sm90-132'); default: all."),
        manifests: ManifestsOption = None,
        out: Path = out_option("Folder for the <basename>.kdb files.", Path("build/kdb")),
        workers: int = typer.Option(0, "--jobs", "-j",
                                    help="Parallel compiles (default: all cores)."),
        cache_dir: Path | None = path_option(
            "--cache-dir",
            help="Object cache (default $MIOPENKERNELS_CACHE, else "
                 "$XDG_CACHE_HOME/miopenkernels/objects, else ~/.cache/miopenkernels/objects)."),
        kernels_dir: Path | None = path_option(
            "--kernels-dir",
            help="Read kernel sources from here instead of the installed kernels "
                 "(also $MIOPENKERNELS_KERNELS_DIR)."),
        predict_dbs: bool = typer.Option(
            False, "--predict-dbs",
            help="For targets without measured databases, also write a FindDb and PerfDb "
                 "predicted by the miss ranking (OUT/predicted/<basename>/, marked predicted)."),
        as_json: JsonFlag = False,
    ) -> None:
        """Compile every job of the chosen targets (cached, in parallel) into <basename>.kdb.

        A kdb that already holds exactly what the build produced is not rewritten.
        """
        from miopenkernels.builder.build import TargetSummary, build, failure_text
        from miopenkernels.builder.manifest import available_manifests, load_manifests

        targets = globs(targets_given)

        chosen = select_targets(targets)
        _check_before_work(chosen)
        names = list(manifests or available_manifests())
        problems = load_manifests(names)

        def show_failure(failure: Any) -> None:
            err_console.print(f"[red]error:[/red] {escape(failure_text(failure))}",
                              markup=True, highlight=False, soft_wrap=True)

        with Progress("build", "objects compiled") as progress:
            def on_target(t: TargetSummary) -> None:
                kdb = ("kdb unchanged" if t.kdb_unchanged else "kdb written" if t.kdb
                       else "kdb not written")
                spills = "" if t.resources is None else (
                    f"; {sum(f.spilling for f in t.resources.families.values())} objects spill "
                    "to scratch")
                progress.step(f"{t.target.name}: {t.jobs} jobs, {t.compiled} compiled, "
                              f"{t.cached} cached, {t.failed} failed; {kdb}{spills}")

            result = build(chosen, problems, out, workers=workers or None, cache_dir=cache_dir,
                           kernels=kernels_dir, manifests=names, on_progress=progress.update,
                           on_failure=show_failure, predict_dbs=predict_dbs,
                           on_target=on_target)
        if as_json:
            print_json(result.to_dict())
        else:
            console.print(_summary_table(result))
        if not result.ok:
            raise CompileError(f"{len(result.failures)} compile job(s) failed; the kdb of a "
                               "target with a failed job was not written")


def _check_before_work(chosen: list[Target]) -> None:
    """Refuse what would fail every job, before any compile: an arch no compiler knows, a
    missing `[build]` extra; note what targets outside targets.toml will lack."""
    from miopenkernels.builder.matrix import check_compilable, unlisted_notes
    from miopenkernels.target import spec_for

    check_compilable(chosen)
    specs = [spec_for(t.arch) for t in chosen]
    needs = (["compile"] if any(s.matrix or s.compiler == "triton" for s in specs) else [])
    needs += ["nvrtc"] if any(s.compiler == "nvrtc" for s in specs) else []
    require_extra("build", needs)
    if "nvrtc" in needs:
        from miopenkernels.compiler.nvidia import load_error

        why = load_error()
        if why is not None:
            raise MissingDependencyError(why)
    for line in unlisted_notes(chosen):
        note(line)
