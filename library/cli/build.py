"""`miopenkernels build`: compile the kernels of the chosen targets into one kdb per target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import CompileError
from ..target import select_targets
from ._output import console, err_console, print_json, run_guarded


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _summary_table(result: Any) -> Table:
    table = Table(title=f"build: {result.wall_seconds:.1f} s, {result.compiled} objects "
                        f"compiled, {result.cached} from cache")
    for col in ("target", "jobs", "compiled", "cached", "failed", "kdb bytes"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for t in result.targets:
        table.add_row(t.target.name, str(t.jobs), str(t.compiled), str(t.cached),
                      f"[red]{t.failed}[/red]" if t.failed else "0",
                      _human(t.kdb_bytes) if t.kdb else "-")
    table.add_row("[b]total[/b]", str(sum(t.jobs for t in result.targets)),
                  str(sum(t.compiled for t in result.targets)),
                  str(sum(t.cached for t in result.targets)),
                  str(sum(t.failed for t in result.targets)),
                  _human(sum(t.kdb_bytes for t in result.targets)))
    return table


def register(app: typer.Typer) -> None:
    @app.command("build")
    def build_cmd(
        targets: str = typer.Option(
            None, "--targets", "-t",
            help="Comma-separated globs over target names ('gfx9*,sm90-132'); default: all."),
        manifests: list[str] = typer.Option(
            None, "--manifest", "-m",
            help="Manifest name under dbs/manifests or a file; repeatable. Default: all."),
        out: Path = typer.Option(Path("build/kdb"), "--out", "-o",
                                 help="Folder for the <basename>.kdb files."),
        workers: int = typer.Option(0, "-j", "--jobs",
                                    help="Parallel compiles (default: all cores)."),
        cache_dir: Path = typer.Option(
            None, "--cache-dir",
            help="Object cache (default $MIOPENKERNELS_CACHE or ~/.cache/miopenkernels/objects)."),
        kernels_dir: Path = typer.Option(
            None, "--kernels-dir",
            help="Read kernel sources from here instead of the installed kernels "
                 "(also $MIOPENKERNELS_KERNELS_DIR)."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Compile every job of the chosen targets (cached, in parallel) into <basename>.kdb."""
        from miopenkernels.builder.build import build, failure_text
        from miopenkernels.builder.manifest import load_manifests

        chosen = run_guarded(select_targets, targets)
        problems = run_guarded(load_manifests, manifests)

        def show_failure(failure: Any) -> None:
            err_console.print(f"[red]error:[/red] {failure_text(failure)}", markup=True,
                              highlight=False, soft_wrap=True)

        progress = Progress(TextColumn("compiling"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err_console, transient=True)
        with progress:
            task = progress.add_task("compile", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            result = run_guarded(build, chosen, problems, out, workers=workers or None,
                                 cache_dir=cache_dir, kernels=kernels_dir,
                                 on_progress=on_progress, on_failure=show_failure)
        if as_json:
            print_json(result.to_dict())
        else:
            console.print(_summary_table(result))
        if not result.ok:
            typer.echo(f"error: {len(result.failures)} compile job(s) failed; the kdb of a "
                       "target with a failed job was not written", err=True)
            raise typer.Exit(CompileError.exit_code)
