"""`miopenkernels kdb`: list and verify kernel databases (`.kdb`, `.ukdb`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.table import Table

from ..errors import CodeObjectError, DbError, IntegrityError
from ._app import new_app
from ._options import JsonFlag, WideFlag
from ._output import console, print_json

if TYPE_CHECKING:
    from miopenkernels.builder.closure import Requirement

    from ..db.kerneldb import KernelDb


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


def _write_json_rows(rows: Iterable[Mapping[str, Any]]) -> None:
    """A JSON list of flat rows, written as `print_json` writes it (indent 2), a row at a
    time: a listing of hundreds of thousands of entries is never held whole."""
    import json
    from json.encoder import encode_basestring_ascii

    out = sys.stdout
    first = True
    keys: dict[str, str] = {}  # each key's `    "key": `, encoded once
    for row in rows:
        fields = []
        for k, v in row.items():
            key = keys.get(k)
            if key is None:
                key = keys[k] = f"    {encode_basestring_ascii(k)}: "
            fields.append(key + (encode_basestring_ascii(v) if type(v) is str else
                                 str(v) if type(v) is int else json.dumps(v)))
        out.write(("[\n" if first else ",\n") + "  {\n" + ",\n".join(fields) + "\n  }")
        first = False
    out.write("[]\n" if first else "\n]\n")


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _write_listing(db: KernelDb, name: str, *, wide: bool) -> None:
    """The entries as `kdb_table` lays them out, a row at a time: column widths come from one
    SQL query, so a kdb of any size lists in time linear in its rows and constant memory."""
    count, name_len, args_len, digits = db.widths()
    out = sys.stdout
    out.write(f"{name}: {count} entries\n")
    headers = ("kernel_name", "kernel_args", "size", "stored", "md5")
    name_w = max(len(headers[0]), name_len)
    size_w, stored_w, md5_w = max(4, digits), max(6, digits), 32 if wide else 8
    if wide:
        args_w = max(len(headers[1]), args_len)
    else:
        width = console.size.width
        name_w = min(name_w, max(len(headers[0]), width // 3))
        room = width - (name_w + size_w + stored_w + md5_w + 8)
        args_w = max(12, min(max(len(headers[1]), args_len), room))

    def line(cells: tuple[str, str, str, str, str]) -> str:
        n, a, s, st, m = cells
        return (f"{_fit(n, name_w):<{name_w}}  {_fit(a, args_w):<{args_w}}  {s:>{size_w}}  "
                f"{st:>{stored_w}}  {m}").rstrip() + "\n"

    out.write(line(headers))
    out.write(line(("─" * name_w, "─" * args_w, "─" * size_w, "─" * stored_w, "─" * md5_w)))
    for e in db.iter_entries():
        out.write(line((e.kernel_name, e.kernel_args, str(e.size), str(e.stored_size),
                        e.kernel_hash[:md5_w])))


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

        One line an entry, written as it is read (a kdb of any size lists in constant memory);
        --wide adds each entry's kernel args (its compile options) and the whole md5, --json
        prints every field.
        """
        from ..db.kerneldb import KernelDb

        with KernelDb(file) as db:
            if as_json:
                _write_json_rows({**e.to_dict(), "size": e.size} for e in db.iter_entries())
            else:
                _write_listing(db, file.name, wide=wide)

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
