"""`miopenkernels build`: compile the kernels of the chosen targets into one kdb per target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import CompileError
from ..target import select_targets
from ._options import JsonFlag, ManifestsOption, globs, out_option, path_option, targets_option
from ._output import console, err_console, human_bytes, print_json


def _summary_table(result: Any) -> Table:
    # Per-target rows count jobs (one target's view); the last row counts distinct objects,
    # as the build compiles each once however many targets use it.
    table = Table(title=f"build: {result.wall_seconds:.1f} s")
    for col in ("target", "jobs", "compiled", "cached", "failed", "kdb"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for t in result.targets:
        kdb = "-" if not t.kdb else human_bytes(t.kdb_bytes) + (" =" if t.kdb_unchanged else "")
        table.add_row(t.target.name, str(t.jobs), str(t.compiled), str(t.cached),
                      f"[red]{t.failed}[/red]" if t.failed else "0", kdb)
    table.add_section()
    table.add_row("distinct", str(result.objects), str(result.compiled), str(result.cached),
                  str(len(result.failures)),
                  human_bytes(sum(t.kdb_bytes for t in result.targets)))
    table.caption = "distinct: objects, each compiled once for all targets; =: kdb unchanged"
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
        from miopenkernels.builder.build import build, failure_text
        from miopenkernels.builder.manifest import available_manifests, load_manifests

        targets = globs(targets_given)

        chosen = select_targets(targets)
        names = list(manifests or available_manifests())
        problems = load_manifests(names)

        def show_failure(failure: Any) -> None:
            err_console.print(f"[red]error:[/red] {failure_text(failure)}", markup=True,
                              highlight=False, soft_wrap=True)

        progress = Progress(TextColumn("compiling"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err_console, transient=True)
        with progress:
            task = progress.add_task("compile", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            result = build(chosen, problems, out, workers=workers or None, cache_dir=cache_dir,
                           kernels=kernels_dir, manifests=names, on_progress=on_progress,
                           on_failure=show_failure, predict_dbs=predict_dbs)
        if as_json:
            print_json(result.to_dict())
        else:
            console.print(_summary_table(result))
        if not result.ok:
            raise CompileError(f"{len(result.failures)} compile job(s) failed; the kdb of a "
                               "target with a failed job was not written")
