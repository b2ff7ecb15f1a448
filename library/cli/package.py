"""`miopenkernels package`: wheels and conda packages from a build or from existing dbs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ._output import console, print_json, run_guarded


def register(app: typer.Typer) -> None:
    @app.command("package")
    def package_cmd(
        targets: str = typer.Option(None, "--targets",
                                    help="Targets (globs) to package from --from-build."),
        from_build: Path = typer.Option(None, "--from-build",
                                        help="The builder's out folder (<basename>.kdb)."),
        from_dir: Path = typer.Option(None, "--from-dir",
                                      help="Existing MIOpen databases (share/miopen/db, cache)."),
        target: str = typer.Option(None, "--target", help="Target of --from-dir ('gfx90a-104')."),
        out: Path = typer.Option(Path("dist"), "--out", help="Output folder."),
        kind: str = typer.Option("both", "--kind", help="wheel, conda or both."),
        manifest: list[str] = typer.Option(None, "--manifest",
                                           help="Problem manifest(s) the build covered."),
        dbs: Path = typer.Option(None, "--dbs", help="Measured databases (default: dbs/)."),
        version: str = typer.Option(None, "--version", help="Package version."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Build kernel packages (wheels + PEP 503 index, conda + channel)."""
        if (from_build is None) == (from_dir is None):
            raise typer.BadParameter("give exactly one of --from-build and --from-dir")
        if from_dir is not None and not target:
            raise typer.BadParameter("--from-dir needs --target")

        def run():  # type: ignore[no-untyped-def]
            from ..builder.package import package_from_build, package_from_dir
            from ..target import Target, select_targets

            if from_dir is not None:
                return package_from_dir(from_dir, Target.parse(target), out, kind, version)
            assert from_build is not None
            chosen = select_targets(targets) if targets else _built_targets(from_build)
            return package_from_build(chosen, from_build, out, kind, version,
                                      list(manifest or []), dbs)

        results = run_guarded(run)
        if as_json:
            print_json({"out": str(out), "packages": [r.to_dict() for r in results]})
            return
        table = Table(title=f"packages in {out}")
        for col in ("target", "package", "wheel", "conda"):
            table.add_column(col, overflow="fold")
        for r in results:
            table.add_row(r.target.name, r.target.package, r.wheel.name if r.wheel else "-",
                          r.conda.name if r.conda else "-")
        console.print(table)


def _built_targets(build_dir: Path) -> list:
    """Targets of every <basename>.kdb in the build folder."""
    from ..db.sniff import target_from_name
    from ..errors import DbError

    found = [t for p in sorted(build_dir.glob("*.kdb")) if (t := target_from_name(p.name))]
    if not found:
        raise DbError(f"no <basename>.kdb in {build_dir}; pass --targets or build first")
    return found
