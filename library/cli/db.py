"""`miopenkernels db`: inspect, convert, look up and merge MIOpen database files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.table import Table

from ..errors import IntegrityError
from ._app import new_app
from ._options import JsonFlag, PerfDbFormat, WideFlag, check_out_file, out_option
from ._output import console, print_json, print_table

db_app = new_app("db", "Inspect, convert, look up and merge FindDb, PerfDb and KernelDb files.")


def _print_inspect(report: dict[str, Any]) -> None:
    target = report["target"]
    console.print(f"[bold]{report['path']}[/bold]")
    console.print(f"  kind:      {report['kind']} {report['version']}".rstrip())
    where = (
        f"{target['basename']} ({target['arch']}, {target['cu']} CUs)"
        if target else "unknown from the name"
    )
    console.print(f"  target:    {where}")
    for name, value in report["counts"].items():
        if isinstance(value, dict):
            # One line per entry: solver and algorithm names are long.
            console.print(f"  {name + ':':<10} {'none' if not value else ''}", highlight=False)
            for k, v in value.items():
                console.print(f"    {k} {v}", highlight=False, soft_wrap=True)
            continue
        console.print(f"  {name + ':':<10} {value}", highlight=False)
    integrity = report["integrity"]
    state = "ok" if integrity["ok"] else f"{len(integrity['problems'])} problem(s)"
    console.print(f"  integrity: {state} ({integrity['checked']})")
    for problem in integrity["problems"]:
        console.print(f"    {problem}", highlight=False, markup=False)


def _print_lookup(report: dict[str, Any], wide: bool) -> None:
    if report["kind"] in ("kdb", "ukdb"):
        from .kdb import kdb_table

        print_table(kdb_table(report["results"], wide=wide), wide=wide)
        return
    for r in report["results"]:
        if not r["found"]:
            console.print(f"{r['key']}: no record", highlight=False)
            continue
        # Solver names stay whole; the algorithm column (implied by the solver) only with --wide.
        console.print(f"[bold]{r['key']}[/bold]", highlight=False, soft_wrap=True)
        table = Table(box=box.SIMPLE, pad_edge=False)
        table.add_column("solver", no_wrap=True)
        if "solutions" in r:
            table.add_column("time ms", justify="right", no_wrap=True)
            table.add_column("workspace", justify="right", no_wrap=True)
            if wide:
                table.add_column("algorithm", no_wrap=True)
            for s in r["solutions"]:
                row = [s["solver"], f"{s['time_ms']:.6g}", str(s["workspace"])]
                table.add_row(*row, *([s["algorithm"]] if wide else []))
        else:
            console.print(f"perfdb key: {r['perfdb_key']}", highlight=False, soft_wrap=True)
            table.add_column("params", overflow="fold")
            for solver, params in r["entries"].items():
                table.add_row(solver, params)
        print_table(table, wide=wide)


@db_app.command("inspect")
def inspect_cmd(
    file: Path = typer.Argument(..., help="A FindDb, PerfDb (SQLite or text) or KernelDb file."),
    as_json: JsonFlag = False,
) -> None:
    """Kind, target (from the name), counts and integrity of a database file.

    Integrity: PRAGMA integrity_check for SQLite, and the md5 of every blob for a KernelDb.
    Exits 12 when an integrity check fails.
    """
    from ..db.inspect import inspect_file
    from ..solvers import SOLVERS

    report = inspect_file(file, {s.name for s in SOLVERS})
    if as_json:
        print_json(report)
    else:
        _print_inspect(report)
    problems = report["integrity"]["problems"]
    if problems:
        raise IntegrityError(f"{report['path']}: {len(problems)} integrity problem(s), first: "
                         f"{problems[0]}")


@db_app.command("convert")
def convert_cmd(
    src: Path = typer.Argument(..., help="Source database file."),
    dst: Path = typer.Argument(..., help="Output: *.db/*.udb (SQLite) or *.txt (text).",
                               callback=lambda value: check_out_file(value, "DST")),
    as_json: JsonFlag = False,
) -> None:
    """Convert a PerfDb between SQLite and text (legacy .pdb.txt too), or a FindDb 1.0 to 2.0."""
    from ..db.convert import convert

    report = convert(src, dst)
    if as_json:
        print_json(report)
        return
    counts = ", ".join(f"{report[k]} {k}" for k in ("records", "configs", "entries")
                       if k in report)
    console.print(f"{report['source']} ({report['source_kind']}) -> {report['dest']} "
                  f"({report['dest_kind']}): {counts}", highlight=False)
    if report.get("skipped_lines"):
        console.print(f"  {report['skipped_lines']} malformed line(s) skipped, as MIOpen skips "
                      f"them; first: {report['skipped'][0]}", highlight=False, markup=False)


@db_app.command("lookup")
def lookup_cmd(
    file: Path = typer.Argument(..., help="A FindDb, PerfDb or KernelDb file."),
    query: str = typer.Argument(
        ..., help="An MIOpenDriver line or FindDb key; for a KernelDb a kernel name or glob."),
    as_json: JsonFlag = False,
    wide: WideFlag = False,
) -> None:
    """Print the record(s) of a problem. Exits 1 when nothing matches."""
    from .. import config
    from ..db.inspect import lookup_file

    report = lookup_file(file, query, config.user_db_dir() / "index")
    if as_json:
        print_json(report)
    else:
        _print_lookup(report, wide)
    if not any(r.get("found", True) for r in report["results"]):
        raise typer.Exit(1)


@db_app.command("merge")
def merge_cmd(
    shards: list[Path] = typer.Argument(..., help="FindDb and PerfDb shard files."),
    out: Path = out_option("Folder for the merged files."),
    basename: str | None = typer.Option(
        None, "--basename", help="Target basename of the outputs (default: from shard names)."),
    perfdb_format: PerfDbFormat = typer.Option(
        PerfDbFormat.text, "--perfdb-format",
        help="PerfDb output: text (<base>.db.txt) or sqlite (<base>.db)."),
    replace: bool = typer.Option(False, "--replace",
                                 help="Overwrite databases already in --out instead of merging "
                                      "with them."),
    as_json: JsonFlag = False,
) -> None:
    """Merge shards deterministically (same shards in any order give the same bytes).

    FindDb: union of solutions per key, the fastest time per solver, fastest first. PerfDb: per
    (problem, solver) the shard whose file name sorts last (then full path) wins. Databases
    already in --out are merged with (a shard overrides them), unless --replace; merges into
    the same --out at once take turns on each output's lock, so none loses another's records.
    """
    from ..db.merge import merge_shards

    report = merge_shards(shards, out, basename=basename, perfdb_format=perfdb_format.value,
                          replace=replace)
    if as_json:
        print_json(report)
        return
    for o in report["outputs"]:
        counts = ", ".join(f"{o[k]} {k}" for k in ("records", "configs", "entries") if k in o)
        also = " and the existing file" if o.get("merged_with_existing") else ""
        console.print(f"{o['path']}: {counts} from {o['shards']} shard(s){also}",
                      highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
