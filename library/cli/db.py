"""`miopenkernels db`: inspect, convert, look up and merge MIOpen database files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ..errors import IntegrityError
from ._output import console, print_json, run_guarded

db_app = typer.Typer(
    name="db",
    help="Inspect, convert, look up and merge FindDb, PerfDb and KernelDb files.",
    no_args_is_help=True,
)


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


def _print_lookup(report: dict[str, Any]) -> None:
    if report["kind"] in ("kdb", "ukdb"):
        table = Table("kernel_name", "kernel_args", "size", "stored", "md5")
        for e in report["results"]:
            table.add_row(e["kernel_name"], e["kernel_args"],
                          str(e["uncompressed_size"] or e["stored_size"]),
                          str(e["stored_size"]), e["kernel_hash"])
        console.print(table)
        return
    for r in report["results"]:
        if not r["found"]:
            console.print(f"{r['key']}: no record", highlight=False)
            continue
        if "solutions" in r:
            table = Table("solver", "time ms", "workspace", "algorithm", title=r["key"])
            for s in r["solutions"]:
                table.add_row(s["solver"], f"{s['time_ms']:.6g}", str(s["workspace"]),
                              s["algorithm"])
        else:
            table = Table("solver", "params", title=f"{r['key']}\n{r['perfdb_key']}")
            for solver, params in r["entries"].items():
                table.add_row(solver, params)
        console.print(table)


@db_app.command("inspect")
def inspect_cmd(
    file: Path = typer.Argument(..., help="A FindDb, PerfDb (SQLite or text) or KernelDb file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Kind, target (from the name), counts and integrity of a database file.

    Integrity: PRAGMA integrity_check for SQLite, and the md5 of every blob for a KernelDb.
    Exits 12 when an integrity check fails.
    """
    from ..db.inspect import inspect_file

    report = run_guarded(inspect_file, file)
    if as_json:
        print_json(report)
    else:
        _print_inspect(report)
    if not report["integrity"]["ok"]:
        run_guarded(_fail_integrity, report)


def _fail_integrity(report: dict[str, Any]) -> None:
    problems = report["integrity"]["problems"]
    raise IntegrityError(f"{report['path']}: {len(problems)} integrity problem(s), first: "
                         f"{problems[0]}")


@db_app.command("convert")
def convert_cmd(
    src: Path = typer.Argument(..., help="Source database file."),
    dst: Path = typer.Argument(..., help="Output: *.db/*.udb (SQLite) or *.txt (text)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Convert a PerfDb between SQLite and text (legacy .pdb.txt too), or a FindDb 1.0 to 2.0."""
    from ..db.convert import convert

    report = run_guarded(convert, src, dst)
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
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print the record(s) of a problem. Exits 1 when nothing matches."""
    from ..db.inspect import lookup_file

    report = run_guarded(lookup_file, file, query)
    if as_json:
        print_json(report)
    else:
        _print_lookup(report)
    if not any(r.get("found", True) for r in report["results"]):
        raise typer.Exit(1)


@db_app.command("merge")
def merge_cmd(
    shards: list[Path] = typer.Argument(..., help="FindDb and PerfDb shard files."),
    out: Path = typer.Option(..., "--out", help="Folder for the merged files."),
    basename: str = typer.Option(
        None, "--basename", help="Target basename of the outputs (default: from shard names)."),
    perfdb_format: str = typer.Option("text", "--perfdb-format",
                                      help="'text' (<base>.db.txt) or 'sqlite' (<base>.db)."),
    replace: bool = typer.Option(False, "--replace",
                                 help="Overwrite databases already in --out instead of merging "
                                      "with them."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Merge shards deterministically (same shards in any order give the same bytes).

    FindDb: union of solutions per key, the fastest time per solver, fastest first. PerfDb: per
    (problem, solver) the shard whose file name sorts last (then full path) wins. Databases
    already in --out are merged with (a shard overrides them), unless --replace.
    """
    from ..db.merge import merge_shards

    report = run_guarded(merge_shards, shards, out, basename=basename,
                         perfdb_format=perfdb_format, replace=replace)
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
