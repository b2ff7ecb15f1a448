"""Conda packages built by rattler-build from recipes/recipe.yaml and the selector recipe.

The per-target recipe is the committed one; its variants are written for the targets being
built, and the staged files reach the build script through MIOPENKERNELS_STAGE.
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection
from pathlib import Path

from miopenkernels._fsutil import atomic_copy
from miopenkernels.errors import PackageBuildError
from miopenkernels.target import Target

from ._env import scoped_environ
from .recipes import RECIPES_DIR, selector_recipe_yaml, selector_variants_yaml, variants_yaml

__all__ = ["build_conda_packages", "build_selector_package", "package_name", "package_version"]


def _name_version_build(pkg: Path) -> tuple[str, str, str]:
    """A conda file name's three parts (`<name>-<version>-<build>.conda`)."""
    stem = pkg.name.removesuffix(".conda").removesuffix(".tar.bz2")
    name, version, build = stem.rsplit("-", 2)
    return name, version, build


def package_name(pkg: Path) -> str:
    """The package a built conda file holds (`miopenkernels-gfx90a-110`)."""
    return _name_version_build(pkg)[0]


def package_version(pkg: Path) -> str:
    return _name_version_build(pkg)[1]


def _build(recipe: Path, variants_text: str, out_dir: Path, env: dict[str, str]) -> list[Path]:
    from rattler_build import Stage0Recipe, ToolConfiguration, VariantConfig

    with tempfile.TemporaryDirectory(prefix="mk-conda-") as tmp, scoped_environ(env):
        variant_file = Path(tmp) / "variants.yaml"
        variant_file.write_text(variants_text)
        recipe_obj = Stage0Recipe.from_file(recipe)
        tool = ToolConfiguration(test_strategy="skip", channel_priority="strict")
        work_out = Path(tmp) / "out"
        try:
            results = recipe_obj.run_build(
                variant_config=VariantConfig.from_file(variant_file),
                tool_config=tool,
                output_dir=work_out,
                channels=[],
                no_build_id=True,
            )
        except Exception as exc:  # rattler-build raises its own error types
            raise PackageBuildError(f"rattler-build failed on {recipe}: {exc}") from None
        built: list[Path] = []
        (out_dir / "noarch").mkdir(parents=True, exist_ok=True)
        for result in results:
            for pkg in result.packages:
                dest = out_dir / "noarch" / Path(pkg).name
                atomic_copy(Path(pkg), dest)
                built.append(dest)
    return built


def build_conda_packages(
    stage_root: Path, targets: list[Target], version: str, out_dir: Path,
    recipe: Path | None = None, databases_only: Collection[Target] = (),
) -> list[Path]:
    """Build `miopenkernels-<arch>-<cu>` for each staged target; packages go to
    `out_dir/noarch/`. Those of `databases_only` (no kdb) are built as the databases-only
    variant: build string `<arch>_<cu>_databases_only_<n>`, down-prioritized."""
    for t in targets:
        if not (stage_root / t.name).is_dir():
            raise PackageBuildError(f"{t.name} is not staged under {stage_root}")
    return _build(
        recipe or RECIPES_DIR / "recipe.yaml", variants_yaml(targets, databases_only), out_dir,
        {"MIOPENKERNELS_STAGE": str(stage_root.resolve()), "MIOPENKERNELS_VERSION": version},
    )


def build_selector_package(targets: list[Target], version: str, out_dir: Path) -> list[Path]:
    """Build `miopenkernels-gpu`, one build per arch of `targets`, into `out_dir/noarch/`."""
    with tempfile.TemporaryDirectory(prefix="mk-selector-") as tmp:
        recipe = Path(tmp) / "recipe.yaml"
        recipe.write_text(selector_recipe_yaml(targets))
        return _build(recipe, selector_variants_yaml(targets), out_dir,
                      {"MIOPENKERNELS_VERSION": version})
