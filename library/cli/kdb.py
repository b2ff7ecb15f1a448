"""`miopenkernels kdb`: list and verify kernel databases (`.kdb`, `.ukdb`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ..errors import CodeObjectError, IntegrityError
from ._output import console, print_json, run_guarded


def register(app: typer.Typer) -> None:
    kdb = typer.Typer(help="List and verify kernel databases (.kdb, .ukdb).",
                      no_args_is_help=True)
    app.add_typer(kdb, name="kdb")

    @kdb.command("list")
    def list_cmd(
        file: Path = typer.Argument(..., help="A .kdb or .ukdb file."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the entries: kernel name, args, stored and code-object sizes, md5."""
        from ..db.kerneldb import KernelDb

        def entries() -> list:
            with KernelDb(file) as db:
                return db.entries()

        rows = run_guarded(entries)
        if as_json:
            print_json([{**e.to_dict(), "size": e.size} for e in rows])
            return
        table = Table(title=f"{file}: {len(rows)} entries")
        table.add_column("kernel_name", no_wrap=True)
        table.add_column("kernel_args", overflow="fold")
        table.add_column("size", justify="right")
        table.add_column("stored", justify="right")
        table.add_column("md5", no_wrap=True)
        for e in rows:
            table.add_row(e.kernel_name, e.kernel_args, str(e.size), str(e.stored_size),
                          e.kernel_hash)
        console.print(table)

    @kdb.command("verify")
    def verify_cmd(
        file: Path = typer.Argument(..., help="A .kdb or .ukdb file."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Re-check every entry's md5 and that its code object is for the arch it names.

        Exits 12 if a hash does not match, 9 if a code object is for the wrong GPU (or is not
        a code object), 0 when every entry is sound.
        """
        from miopenkernels.builder.codeobject import verify_kdb

        checks = run_guarded(verify_kdb, file)
        bad = [c for c in checks if not c.ok]
        if as_json:
            print_json({"file": str(file), "entries": len(checks), "ok": not bad,
                        "checks": [c.to_dict() for c in checks]})
        else:
            for c in bad:
                typer.echo(f"error: {c.error}", err=True)
            status = "ok" if not bad else f"{len(bad)} bad"
            console.print(f"{file}: {len(checks)} entries, {status}")
        if bad:
            hash_bad = any(c.error_kind == "hash" for c in bad)
            raise typer.Exit(IntegrityError.exit_code if hash_bad else CodeObjectError.exit_code)
