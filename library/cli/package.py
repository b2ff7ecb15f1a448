"""`miopenkernels package`: wheels and conda packages from a build or from existing dbs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from ..errors import TargetError
from ..target import Target
from ._app import require_extra
from ._options import (
    JsonFlag,
    ManifestsOption,
    PackageKind,
    globs,
    out_option,
    path_option,
    targets_option,
)
from ._output import Progress, console, print_json

if TYPE_CHECKING:
    from ..builder.package import PackageResult
    from ..target import Target


def register(app: typer.Typer) -> None:
    @app.command("package")
    def package_cmd(
        from_build: Path | None = path_option(
            "--from-build", help="The build's --out folder (<basename>.kdb)."),
        from_dir: Path | None = path_option(
            "--from-dir", help="Existing MIOpen databases (share/miopen/db, a user cache)."),
        targets_given: list[str] | None = targets_option(
            "Targets to package: globs over the kdbs of --from-build (default: every kdb "
            "there); exactly one target ('gfx90a-104') with --from-dir."),
        out: Path = out_option(
            "Output folder: *.whl (pip --find-links), simple/ (--index-url), channel/ "
            "(conda).", Path("dist")),
        kind: PackageKind = typer.Option(PackageKind.both, "--kind",
                                         help="What to build."),
        manifests: ManifestsOption = None,
        dbs: Path | None = path_option("--dbs", help="Measured databases (default: dbs/)."),
        version: str | None = typer.Option(None, "--version", help="Package version."),
        as_json: JsonFlag = False,
    ) -> None:
        """Build kernel packages (wheels + PEP 503 index, conda + channel).

        Each package's manifest records the problem manifests its kdb was built for (from the
        build's record, or --manifest) and lists what it lacks, e.g. measured databases.
        """
        from ..builder.package import package_from_build, package_from_dir
        from ..target import select_targets

        targets = globs(targets_given)
        require_extra("package", {"wheel": ["wheel"], "conda": ["conda"],
                                  "both": ["wheel", "conda"]}[kind.value])

        if (from_build is None) == (from_dir is None):
            raise typer.BadParameter("give exactly one of --from-build and --from-dir")
        if from_dir is not None:
            chosen = select_targets(targets) if targets else []
            if len(chosen) != 1:
                raise TargetError("--from-dir needs exactly one target: --targets <arch>-<cu> "
                                  "(e.g. --targets gfx90a-104)")
            with Progress("package", "targets") as progress:
                results = package_from_dir(from_dir, chosen[0], out, kind.value, version)
                _report(progress, results)
        else:
            assert from_build is not None
            built = _built_targets(from_build)
            have = {t.name for t in built}
            chosen = ([t for t in select_targets(targets) if t.name in have] if targets
                      else built)
            if not chosen:
                names = ", ".join(t.name for t in built)
                raise TargetError(f"no kdb in {from_build} matches --targets {targets!r}; it "
                                  f"holds {names}")
            with Progress("package", "targets") as progress:
                progress.step(f"{len(chosen)} target(s) from {from_build}, --kind {kind.value}")
                results = package_from_build(chosen, from_build, out, kind.value, version,
                                             list(manifests or []), dbs)
                _report(progress, results)
        if as_json:
            print_json({"out": str(out), "packages": [r.to_dict() for r in results]})
            return
        table = Table(title=f"packages in {out}")
        for col in ("target", "wheel", "conda", "lacks"):
            table.add_column(col, no_wrap=col != "lacks")
        for r in results:
            table.add_row(r.target.name, "yes" if r.wheel else "-", "yes" if r.conda else "-",
                          _lacks(r))
        console.print(table)


def _lacks(result: PackageResult) -> str:
    """The table's `lacks`: what the package does not carry, predicted databases named as
    such (they stand in for measured ones)."""
    lacks = [x.split(" (")[0] for x in result.lacks]
    if _predicted(result):
        lacks.append("measured dbs (predicted shipped)")
    return ", ".join(lacks) or "-"


def _predicted(result: PackageResult) -> bool:
    """Whether the staged package's manifest says its databases are predicted."""
    from ..errors import MIOpenKernelsError
    from ..install.manifest import manifest_relpath, read_manifest

    try:
        data = read_manifest(result.staged / manifest_relpath(result.target.basename))
    except MIOpenKernelsError:
        return False
    return (data.get("databases") or {}).get("predicted") is True


def _report(progress: Progress, results: list[PackageResult]) -> None:
    for i, r in enumerate(results, 1):
        made = " + ".join(k for k, v in (("wheel", r.wheel), ("conda", r.conda)) if v)
        progress.step(f"{i}/{len(results)} {r.target.name}: {made or 'nothing'} made")


def _built_targets(build_dir: Path) -> list[Target]:
    """Targets of every <basename>.kdb in the build folder."""
    from ..db.sniff import target_from_name
    from ..errors import DbError

    found = [t for p in sorted(build_dir.glob("*.kdb")) if (t := target_from_name(p.name))]
    if not found:
        raise DbError(f"no <basename>.kdb in {build_dir}; build first "
                      f"(miopenkernels build --out {build_dir})")
    return found
