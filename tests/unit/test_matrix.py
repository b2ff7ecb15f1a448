"""The CI build matrix (`miopenkernels matrix`) is dbs/targets.toml, entry for entry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from miopenkernels.builder import matrix as matrix_mod
from miopenkernels.builder.matrix import build_matrix, matrix_json
from miopenkernels.cli import app
from miopenkernels.errors import TargetError
from miopenkernels.target import TargetSpec
from typer.testing import CliRunner

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TARGETS_TOML = Path(__file__).resolve().parents[2] / "dbs" / "targets.toml"


def _toml_pairs() -> list[tuple[str, int]]:
    data = tomllib.loads(TARGETS_TOML.read_text())
    return [(t["arch"], int(cu)) for t in data["target"] for cu in t["cus"]]


def _cli_matrix(*args: str) -> dict:
    result = CliRunner().invoke(app, ["matrix", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_has_one_entry_per_arch_and_cu_of_targets_toml_in_order() -> None:
    include = _cli_matrix()["include"]
    assert [(e["arch"], e["cu"]) for e in include] == _toml_pairs()


def test_entries_carry_names_runners_and_the_compiler_of_targets_toml() -> None:
    specs = {t["arch"]: t for t in tomllib.loads(TARGETS_TOML.read_text())["target"]}
    for e in _cli_matrix()["include"]:
        spec = specs[e["arch"]]
        assert e["target"] == f"{e['arch']}-{e['cu']}"
        assert e["package"] == f"miopenkernels-{e['arch']}-{e['cu']}"
        assert e["vendor"] == ("nvidia" if e["arch"].startswith("sm") else "amd")
        assert e["compiler"] == spec["compiler"]
        assert e["compile_arch"] == spec["compile_arch"]
        assert e["runner"] == "ubuntu-latest"
        assert e["tune_runner"] == ["self-hosted", "linux", e["arch"]]


def test_basename_is_miopens_decimal_up_to_64_cus_and_hex_above() -> None:
    by_target = {e["target"]: e for e in _cli_matrix()["include"]}
    assert by_target["gfx906-60"]["basename"] == "gfx906_60"
    assert by_target["gfx90a-110"]["basename"] == "gfx90a6e"
    assert by_target["sm90-132"]["basename"] == "sm9084"


def test_artefact_names_are_unique_across_the_matrix() -> None:
    names = [e["basename"] for e in _cli_matrix()["include"]]
    assert len(names) == len(set(names))


def test_globs_select_by_name_arch_and_basename() -> None:
    assert [e.target for e in build_matrix("gfx90a*")] == ["gfx90a-104", "gfx90a-110"]
    assert [e.target for e in build_matrix("sm90-132,gfx906")] == ["sm90-132", "gfx906-60"]
    assert [e.target for e in build_matrix("gfx90a6e")] == ["gfx90a-110"]
    assert [e["target"] for e in _cli_matrix("--targets", "sm8*")["include"]] == [
        "sm80-108", "sm86-84", "sm89-128"
    ]


def test_star_and_empty_select_every_target() -> None:
    assert matrix_json("*") == matrix_json(None) == _cli_matrix()
    assert len(matrix_json("*")["include"]) == len(_toml_pairs())


def test_a_glob_that_matches_nothing_exits_with_the_bad_target_code() -> None:
    result = CliRunner().invoke(app, ["matrix", "--targets", "gfx7*", "--json"])
    assert result.exit_code == TargetError.exit_code
    assert "no target matches 'gfx7*'" in result.output
    assert '"include"' not in result.stdout


def test_an_exact_target_outside_the_defaults_gets_its_vendors_compiler() -> None:
    (entry,) = build_matrix("gfx1100-96")
    assert (entry.arch, entry.cu, entry.basename) == ("gfx1100", 96, "gfx110060")
    assert entry.compiler == "clang-19"
    assert entry.tune_runner == ["self-hosted", "linux", "gfx1100"]


def test_targets_toml_may_override_the_runners(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = TargetSpec("gfx942", "amd", "clang-19", "gfx942", (304,),
                      extra={"runner": "ubuntu-24.04-16core",
                             "tune_runner": ["self-hosted", "linux", "mi300x"]})
    monkeypatch.setattr(matrix_mod, "spec_for", lambda arch: spec)
    (entry,) = build_matrix("gfx942-304")
    assert entry.runner == "ubuntu-24.04-16core"
    assert entry.tune_runner == ["self-hosted", "linux", "mi300x"]


def test_a_malformed_runner_override_is_a_target_error(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = TargetSpec("gfx942", "amd", "clang-19", "gfx942", (304,),
                      extra={"tune_runner": "gfx942"})
    monkeypatch.setattr(matrix_mod, "spec_for", lambda arch: spec)
    with pytest.raises(TargetError, match="tune_runner of gfx942"):
        build_matrix("gfx942-304")


def test_the_table_lists_each_selected_target() -> None:
    result = CliRunner().invoke(app, ["matrix", "--targets", "sm9*,gfx1030*"])
    assert result.exit_code == 0, result.output
    assert "sm90-132" in result.stdout and "gfx1030-40" in result.stdout
    assert "gfx906-60" not in result.stdout
