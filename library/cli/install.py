"""`miopenkernels install` and `miopenkernels verify`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ._output import console, err_console, print_json, run_guarded


def register(app: typer.Typer) -> None:
    @app.command("install")
    def install_cmd(
        channel: str = typer.Option(None, "--channel", help="Conda channel (path or URL)."),
        index_url: str = typer.Option(None, "--index-url",
                                      help="PEP 503 simple index (path or URL)."),
        find_links: str = typer.Option(None, "--find-links", help="Folder or page of wheels."),
        prefix: Path = typer.Option(None, "--prefix",
                                    help="Install prefix (default: the active env)."),
        conda: bool = typer.Option(False, "--conda", help="Install conda packages."),
        pip: bool = typer.Option(False, "--pip", help="Install wheels with pip."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Only say what would happen."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
        force: bool = typer.Option(False, "--force",
                                   help="Reinstall; allow a package for another arch."),
        rocminfo_file: Path = typer.Option(None, "--rocminfo-file",
                                           help="Read this saved rocminfo output."),
        target: list[str] = typer.Option(None, "--target",
                                         help="Install for this target ('gfx90a-104')."),
        version: str = typer.Option(None, "--version", help="Package version to install."),
    ) -> None:
        """Install the kernel package of every GPU of this machine and verify its files."""
        from ..install import Source, install
        from ..target import Target

        if conda and pip:
            raise typer.BadParameter("--conda and --pip exclude each other")
        sources = [Source(kind, loc) for kind, loc in
                   (("channel", channel), ("index", index_url), ("find-links", find_links))
                   if loc]
        if not sources:
            raise typer.BadParameter("give --channel, --index-url or --find-links")

        def run():  # type: ignore[no-untyped-def]
            targets = [Target.parse(t) for t in target] if target else None
            return install(sources, prefix, "conda" if conda else "pip" if pip else None,
                           dry_run=dry_run, force=force, rocminfo_file=rocminfo_file,
                           targets=targets, version=version)

        report = run_guarded(run)
        for w in report.warnings:
            err_console.print(f"[yellow]warning:[/yellow] {w}")
        if as_json:
            print_json(report.to_dict())
            return
        table = Table(title=f"{report.method} -> {report.prefix}")
        for col in ("GPU", "package", "version", "status", "files", "location"):
            table.add_column(col, overflow="fold")
        for item in report.items:
            table.add_row("\n".join(item["devices"]), item["package"], item["version"],
                          item["status"], str(len(item["files"]) or "-"), item["location"])
        console.print(table)

    @app.command("verify")
    def verify_cmd(
        prefix: Path = typer.Option(None, "--prefix", help="Prefix to check (default: this env)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Re-check the sha256 of every installed kernel package file against its manifest."""
        import os
        import sys

        from ..errors import IntegrityError
        from ..install import verify_prefix

        root = prefix or Path(os.environ.get("CONDA_PREFIX") or sys.prefix)
        checks = run_guarded(verify_prefix, root, raise_on_error=False)
        if as_json:
            print_json({"prefix": str(root), "ok": all(c.ok for c in checks),
                        "packages": [c.to_dict() for c in checks]})
        else:
            table = Table(title=f"installed kernel packages in {root}")
            for col in ("package", "version", "target", "contents", "files", "status"):
                table.add_column(col, overflow="fold")
            for c in checks:
                status = "ok" if c.ok else "; ".join(f"{p.path}: {p.problem}"
                                                     for p in c.problems)
                table.add_row(c.package, c.version, c.target, c.contents, str(c.files), status)
            console.print(table)
        bad = [c for c in checks if not c.ok]
        if bad:
            typer.echo(f"error: {len(bad)} package(s) have missing or altered files; reinstall "
                       "with 'miopenkernels install --force'", err=True)
            raise typer.Exit(IntegrityError.exit_code)
