"""`miopenkernels kdb`: list and verify kernel databases (`.kdb`, `.ukdb`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.table import Table

from ..errors import CodeObjectError, DbError, IntegrityError
from ._app import new_app
from ._options import JsonFlag, WideFlag
from ._output import console, print_json, print_table

if TYPE_CHECKING:
    from miopenkernels.builder.closure import Requirement


def kdb_table(rows: Sequence[Mapping[str, Any]], *, wide: bool, title: str | None = None) -> Table:
    """KernelDb rows as a table. Compact (one line a row, the terminal's width): kernel name,
    the start of the kernel args (compile options, often 1-2 KiB), sizes and the md5's first 8
    digits; `wide`: the args and the md5 whole."""
    cells = []
    for e in rows:
        size = e.get("size") or e.get("uncompressed_size") or e["stored_size"]
        md5 = e["kernel_hash"] if wide else e["kernel_hash"][:8]
        cells.append([e["kernel_name"], e["kernel_args"], str(size), str(e["stored_size"]), md5])
    headers = ("kernel_name", "kernel_args", "size", "stored", "md5")
    if not wide and cells:
        # What is left of the line for the args: each other column's widest cell or header,
        # plus its padding.
        others = sum(max(len(headers[i]), *(len(c[i]) for c in cells)) + 2 for i in (0, 2, 3, 4))
        room = max(12, console.size.width - others - 6)
        for c in cells:
            if len(c[1]) > room:
                c[1] = c[1][:room - 1] + "…"
    table = Table(title=title, box=box.SIMPLE, pad_edge=False)
    for i, name in enumerate(headers):
        table.add_column(name, no_wrap=True, justify="right" if i in (2, 3) else "left")
    for c in cells:
        table.add_row(*c)
    return table


def register(app: typer.Typer) -> None:
    kdb = new_app("kdb", "List and verify kernel databases (.kdb, .ukdb).")
    app.add_typer(kdb, name="kdb")

    @kdb.command("list")
    def list_cmd(
        file: Path = typer.Argument(..., help="A .kdb or .ukdb file."),
        as_json: JsonFlag = False,
        wide: WideFlag = False,
    ) -> None:
        """List the entries: kernel name, code-object and stored sizes, md5.

        One line an entry; --wide adds each entry's kernel args (its compile options) and the
        whole md5, --json prints every field.
        """
        from ..db.kerneldb import KernelDb

        with KernelDb(file) as db:
            rows = [{**e.to_dict(), "size": e.size} for e in db.entries()]
        if as_json:
            print_json(rows)
            return
        title = f"{file.name}: {len(rows)} entries"
        print_table(kdb_table(rows, wide=wide, title=title), wide=wide)

    @kdb.command("verify")
    def verify_cmd(
        file: Path = typer.Argument(..., help="A .kdb or .ukdb file."),
        as_json: JsonFlag = False,
    ) -> None:
        """Re-check every entry's md5 and that its code object is for the arch it names; with
        the FindDb (and PerfDb) of the same basename beside it, that every kernel they name is
        in the kdb (a package is closed).

        Exits 12 if a hash does not match, 9 if a code object is for the wrong GPU (or is not a
        code object), 5 if the databases beside it name a kernel it lacks, 0 otherwise.
        """
        from miopenkernels.builder.closure import database_files, missing_kernels
        from miopenkernels.builder.codeobject import verify_kdb
        from miopenkernels.target import Target

        checks = verify_kdb(file)
        bad = [c for c in checks if not c.ok]
        basename = file.name.split(".", 1)[0]
        fdb, perf = database_files(file.parent, basename)
        missing: list[Requirement] = []
        if fdb is not None:
            rows = {(c.kernel_name, c.kernel_args) for c in checks}
            missing = missing_kernels(Target.from_basename(basename), rows, fdb, perf)
        if as_json:
            print_json({"file": str(file), "entries": len(checks), "ok": not bad and not missing,
                        "checks": [c.to_dict() for c in checks],
                        "databases": str(fdb) if fdb else None,
                        "missing": [m.describe() for m in missing]})
        else:
            for c in bad[1:]:
                typer.echo(f"error: {c.error}", err=True)
            status = "ok" if not bad and not missing else \
                f"{len(bad)} bad, {len(missing)} missing"
            console.print(f"{file}: {len(checks)} entries, {status}", highlight=False)
        if bad:
            hash_bad = [c for c in bad if c.error_kind == "hash"]
            first = (hash_bad or bad)[0]
            cls = IntegrityError if hash_bad else CodeObjectError
            raise cls(first.error if len(bad) == 1 else
                      f"{len(bad)} bad entries in {file}, first: {first.error}")
        if missing:
            raise DbError(f"{len(missing)} kernels that {fdb.name if fdb else ''} names are "
                          f"not in {file.name}, e.g. {missing[0].describe()}; rebuild the kdb "
                          "beside those databases")
