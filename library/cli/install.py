"""`miopenkernels install` and `miopenkernels verify`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import IntegrityError, MIOpenKernelsError
from ._options import JsonFlag, globs, path_option, targets_option
from ._output import console, err_console, print_json


def register(app: typer.Typer) -> None:
    @app.command("install")
    def install_cmd(
        channel: str | None = typer.Option(None, "--channel", help="Conda channel (path or URL)."),
        index_url: str | None = typer.Option(None, "--index-url",
                                             help="PEP 503 simple index (path or URL)."),
        find_links: str | None = typer.Option(
            None, "--find-links",
            help="Folder or page of wheels (the --out folder of 'package' works as it is)."),
        prefix: Path | None = path_option("--prefix",
                                          help="Install prefix (default: the active env)."),
        conda: bool = typer.Option(False, "--conda", help="Install conda packages."),
        pip: bool = typer.Option(False, "--pip", help="Install wheels with pip."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Only say what would happen."),
        as_json: JsonFlag = False,
        force: bool = typer.Option(
            False, "--force",
            help="Reinstall what is installed, and install --targets of another arch than the "
                 "GPU found."),
        rocminfo_file: Path | None = path_option("--rocminfo-file",
                                                 help="Read this saved rocminfo output."),
        targets_given: list[str] | None = targets_option(
            "Install these targets ('gfx90a-110,sm90-132') instead of those of the GPUs found; "
            "needs no GPU."),
        version: str | None = typer.Option(None, "--version", help="Package version to install."),
    ) -> None:
        """Install the kernel package of every GPU of this machine and verify its files.

        With --targets, install those packages instead: on a machine without a GPU (an image
        being prepared) they are installed as asked; where a GPU of another arch is found,
        --force is needed.
        """
        from ..install import Source, install
        from ..target import select_targets

        targets = globs(targets_given)

        if conda and pip:
            raise typer.BadParameter("--conda and --pip exclude each other")
        sources = [Source(kind, loc) for kind, loc in
                   (("channel", channel), ("index", index_url), ("find-links", find_links))
                   if loc]
        if not sources:
            raise typer.BadParameter("say where the packages are: --channel, --index-url or "
                                     "--find-links")
        report = install(sources, prefix, "conda" if conda else "pip" if pip else None,
                         dry_run=dry_run, force=force, rocminfo_file=rocminfo_file,
                         targets=select_targets(targets) if targets else None, version=version)
        for w in report.warnings:
            err_console.print(f"[yellow]warning:[/yellow] {escape(w)}")
        for note in report.notes:
            err_console.print(f"note: {note}", highlight=False)
        if as_json:
            print_json(report.to_dict())
            return
        # Package names and statuses stay whole; the GPUs a package is for go under its name,
        # so that no column is squeezed at 80 columns; file counts go on the last line.
        table = Table(title=f"{report.method} -> {report.prefix}")
        table.add_column("package (GPU)", overflow="fold", min_width=24)
        for col in ("version", "contents", "status"):
            table.add_column(col, no_wrap=True)
        for item in report.items:
            table.add_row("\n".join([item["package"], *item["devices"]]), item["version"],
                          _contents(report.prefix, item), item["status"])
        console.print(table)
        if report.items:
            files = sum(len(item["files"]) for item in report.items)
            count = f": {files} file{'s' * (files != 1)} installed" if files else ""
            console.print(f"into {report.items[0]['location']}{count}", highlight=False)

    @app.command("verify")
    def verify_cmd(
        prefix: Path | None = path_option("--prefix",
                                          help="Prefix to check (default: this env)."),
        as_json: JsonFlag = False,
    ) -> None:
        """Re-check the sha256 of every installed kernel package file against its manifest."""
        import os
        import sys

        from ..install import verify_prefix
        from ..install.contain import shown

        root = prefix or Path(os.environ.get("CONDA_PREFIX") or sys.prefix)
        checks = verify_prefix(root, raise_on_error=False)
        if as_json:
            print_json({"prefix": str(root), "ok": all(c.ok for c in checks),
                        "packages": [c.to_dict() for c in checks]})
        else:
            # The package name says the target (--json has it apart); names stay whole.
            table = Table(title=f"installed kernel packages in {root}")
            for col in ("package", "version", "contents", "files", "status"):
                table.add_column(col, overflow="fold", no_wrap=col != "status")
            for c in checks:
                # Names come from the package: control bytes escaped, no rich markup.
                status = "ok" if c.ok else "; ".join(f"{shown(p.path)}: {p.problem}"
                                                     for p in c.problems)
                table.add_row(*(escape(shown(x)) for x in (c.package, c.version, c.contents,
                                                           str(c.files), status)))
            console.print(table)
        bad = [c for c in checks if not c.ok]
        if bad:
            raise IntegrityError(f"{len(bad)} package(s) have missing or altered files; "
                                 "reinstall with 'miopenkernels install --force'")


def _contents(prefix: Path, item: dict[str, Any]) -> str:
    """What an installed package holds in `verify`'s words (its manifest), else the listing's
    word (a dry run: not installed yet)."""
    from ..install.manifest import manifest_relpath, read_manifest
    from ..install.verify import manifest_contents
    from ..target import Target

    try:
        basename = Target.from_package(item["package"]).basename
        return manifest_contents(read_manifest(prefix / manifest_relpath(basename)))
    except (MIOpenKernelsError, OSError):
        return str(item["contents"])
