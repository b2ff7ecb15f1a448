"""Package manifests, staging, existing-db checks and the generated recipe files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.package import recipes
from miopenkernels.builder.package.fromdir import collect_dir_files, db_kind
from miopenkernels.builder.package.manifest import (
    build_manifest,
    collect_build_files,
    stage_target,
)
from miopenkernels.builder.package.wheel import write_wheel_project
from miopenkernels.errors import DbError, TargetError
from miopenkernels.install.manifest import sha256_file
from miopenkernels.target import Target, default_targets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import make_kdb, make_target_dir  # noqa: E402

GFX906 = Target("gfx906", 60)
GFX90A = Target("gfx90a", 110)


@pytest.fixture
def build_out(tmp_path: Path) -> tuple[Path, Path]:
    build = tmp_path / "build"
    make_kdb(build / "gfx906_60.kdb", "gfx906")
    dbs = tmp_path / "dbs"
    make_target_dir(dbs / "gfx906_60", "gfx906", 60, "gfx906_60", measured=True)
    (dbs / "gfx906_60" / "gfx906_60.kdb").unlink()
    return build, dbs


def test_manifest_hashes_every_file_and_kernel_and_records_provenance(build_out):
    build, dbs = build_out
    tf = collect_build_files(GFX906, build, dbs)
    assert sorted(tf.files) == ["gfx906_60.HIP.fdb.txt", "gfx906_60.db", "gfx906_60.kdb"]
    m = build_manifest(tf, "1.2.3")
    assert m["package"] == "miopenkernels-gfx906-60" and m["version"] == "1.2.3"
    assert m["target"]["basename"] == "gfx906_60"
    assert m["files"]["share/miopen/db/gfx906_60.kdb"]["sha256"] == sha256_file(
        build / "gfx906_60.kdb")
    assert len(m["kernels"]) == 3
    assert all(len(k["sha256"]) == 64 and k["kernel_args"].endswith("-mcpu=gfx906")
               for k in m["kernels"])
    assert m["databases"]["measured"] is True
    assert m["databases"]["device"] == "AMD Instinct MI50"
    assert m["problems"] == ["64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"]
    assert len(m["source"]["git_revision"]) in (40, 7)  # a sha, or 'unknown'


def test_kernels_only_package_says_so(tmp_path):
    make_kdb(tmp_path / "gfx90a6e.kdb", "gfx90a")
    m = build_manifest(collect_build_files(GFX90A, tmp_path, tmp_path / "nodbs"), "0.1.0")
    assert m["databases"] == {"measured": False, "predicted": False, "kernels_only": True,
                              "device": None, "provenance": None, "databases_only": False}
    assert m["contents"] == "kernels-only"
    assert list(m["files"]) == ["share/miopen/db/gfx90a6e.kdb"]


def test_manifest_says_what_the_package_lacks_and_what_the_build_covered(tmp_path):
    make_kdb(tmp_path / "gfx90a6e.kdb", "gfx90a")
    m = build_manifest(collect_build_files(GFX90A, tmp_path, tmp_path / "nodbs"), "0.1.0")
    assert m["manifests"] == []
    lacks = " ".join(m["lacks"])
    assert "measured FindDb (gfx90a6e.HIP.fdb.txt)" in lacks
    assert "measured PerfDb (gfx90a6e.db.txt)" in lacks
    assert "not recorded" in lacks
    # The build's record names the manifests it used (all of them by default).
    (tmp_path / "gfx90a6e.build.json").write_text(json.dumps(
        {"target": "gfx90a-110", "manifests": ["resnet50", "vgg16"],
         "problems": ["64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"]}))
    m = build_manifest(collect_build_files(GFX90A, tmp_path, tmp_path / "nodbs"), "0.1.0")
    assert m["manifests"] == ["resnet50", "vgg16"]
    assert m["problems"] == ["64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"]
    assert not any("not recorded" in x for x in m["lacks"])


def test_a_package_with_measured_databases_lacks_nothing_but_a_record(build_out):
    build, dbs = build_out
    m = build_manifest(collect_build_files(GFX906, build, dbs, ["resnet50"]), "0.1.0")
    assert m["lacks"] == [] and m["manifests"] == ["resnet50"]


def test_missing_build_output_is_a_clear_error(tmp_path):
    with pytest.raises(DbError, match="build gfx906-60 first"):
        collect_build_files(GFX906, tmp_path, tmp_path)


def test_problems_of_a_named_manifest_are_recorded(tmp_path):
    make_kdb(tmp_path / "gfx906_60.kdb", "gfx906")
    man = tmp_path / "small.txt"
    man.write_text("./bin/MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 "
                   "-u 1 -v 1 -l 1 -j 1 -g 1 -F 1 -t 1\n")
    tf = collect_build_files(GFX906, tmp_path, tmp_path, manifests=[str(man)])
    assert tf.problems == ["16-14-14-3x3-32-14-14-8-1x1-1x1-1x1-0-NCHW-FP32-F"]


def test_staged_layout_matches_its_manifest(build_out, tmp_path):
    build, dbs = build_out
    prefix = stage_target(collect_build_files(GFX906, build, dbs), tmp_path / "stage", "0.1.0")
    assert prefix == tmp_path / "stage" / "gfx906-60"
    m = json.loads((prefix / "share/miopenkernels/gfx906_60.manifest.json").read_text())
    for rel, info in m["files"].items():
        assert sha256_file(prefix / rel) == info["sha256"]


def test_wheel_project_maps_shared_data_and_entry_point(build_out, tmp_path):
    build, dbs = build_out
    staged = stage_target(collect_build_files(GFX906, build, dbs), tmp_path / "s", "0.1.0")
    proj = write_wheel_project(staged, GFX906, "0.1.0", tmp_path / "proj")
    text = (proj / "pyproject.toml").read_text()
    assert 'name = "miopenkernels-gfx906-60"' in text
    assert '[project.entry-points."miopenkernels.packages"]' in text
    assert '"share/miopen/db" = "share/miopen/db"' in text
    assert (proj / "share/miopen/db/gfx906_60.kdb").is_file()
    assert "def manifest_path" in (proj / "miopenkernels_gfx906_60/__init__.py").read_text()


@pytest.mark.parametrize("name,expected", [
    ("gfx90a68.kdb", "gfx90a68.kdb"),
    ("gfx90a68.ukdb", "gfx90a68.kdb"),
    ("gfx90a68.HIP.fdb.txt", "gfx90a68.HIP.fdb.txt"),
    ("gfx90a68.HIP.3_4_0_.ufdb.txt", "gfx90a68.HIP.fdb.txt"),
    ("gfx90a68_1.1.0.udb", "gfx90a68.db"),
    ("gfx90a68.db.txt", "gfx90a68.db.txt"),
    ("gfx90a68.HIP.3_4_0_.udb.txt", "gfx90a68.db.txt"),
    ("gfx90a6e.kdb", None),
    ("gfx90a68.kdb-journal", None),
])
def test_user_and_system_names_map_to_package_names(name, expected):
    assert db_kind(name, "gfx90a68") == expected
    assert db_kind(name, "gfx90a68", "gfx90a") == expected
    assert db_kind("gfx90a.kdb", "gfx90a68", "gfx90a") == "gfx90a68.kdb"


def test_from_dir_takes_the_target_files_and_checks_them(tmp_path):
    t = Target("gfx90a", 104)
    make_target_dir(tmp_path, "gfx90a", 104, "gfx90a68", measured=True)
    make_kdb(tmp_path / "gfx906_60.kdb", "gfx906")  # another basename: ignored
    tf = collect_dir_files(tmp_path, t)
    assert sorted(tf.files) == ["gfx90a68.HIP.fdb.txt", "gfx90a68.db", "gfx90a68.kdb"]


def test_from_dir_without_the_target_lists_what_it_has(tmp_path):
    make_kdb(tmp_path / "gfx906_60.kdb", "gfx906")
    with pytest.raises(TargetError, match="basenames found: gfx906_60"):
        collect_dir_files(tmp_path, Target("gfx90a", 104))


def test_from_dir_refuses_kernels_built_for_another_arch(tmp_path):
    make_kdb(tmp_path / "gfx90a68.kdb", "gfx906")  # named for gfx90a, built for gfx906
    with pytest.raises(TargetError, match="holds kernels for gfx906"):
        collect_dir_files(tmp_path, Target("gfx90a", 104))


def test_from_dir_refuses_a_file_that_is_not_what_its_name_says(tmp_path):
    make_kdb(tmp_path / "gfx90a68.kdb", "gfx90a")
    (tmp_path / "gfx90a68.db").write_text("version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(DbError, match="git lfs pull"):
        collect_dir_files(tmp_path, Target("gfx90a", 104))
    (tmp_path / "gfx90a68.db").unlink()
    (tmp_path / "gfx90a68.HIP.fdb.txt").write_text("this is not a find db\n")
    with pytest.raises(DbError):
        collect_dir_files(tmp_path, Target("gfx90a", 104))


def test_from_dir_takes_amds_arch_kdb_and_makes_databases_only_packages(tmp_path):
    t = Target("gfx90a", 104)
    make_kdb(tmp_path / "gfx90a.kdb", "gfx90a")  # AMD's per-arch name
    fdb = tmp_path / "gfx90a68.HIP.fdb.txt"
    fdb.write_text("1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F="
                   "ConvWinograd3x3MultipassWrW<3-2>:1,0,miopenConvolutionFwdAlgoWinograd\n")
    tf = collect_dir_files(tmp_path, t)
    assert tf.files == {"gfx90a68.kdb": tmp_path / "gfx90a.kdb", "gfx90a68.HIP.fdb.txt": fdb}
    assert build_manifest(tf, "1.0")["contents"] == "kernels+databases"
    (tmp_path / "gfx90a.kdb").unlink()
    tf = collect_dir_files(tmp_path, t)
    manifest = build_manifest(tf, "1.0")
    assert manifest["contents"] == "databases-only" and manifest["databases"]["databases_only"]
    assert manifest["kernels"] == [] and manifest["problems"] == [fdb.read_text().split("=")[0]]


def test_committed_recipe_files_match_the_targets():
    targets = default_targets()
    root = recipes.RECIPES_DIR
    assert (root / "variants.yaml").read_text() == recipes.variants_yaml(targets)
    assert (root / "conda-build/conda_build_config.yaml").read_text() == \
        recipes.conda_build_config_yaml(targets)
    assert (root / "selector/recipe.yaml").read_text() == recipes.selector_recipe_yaml(targets)
    assert (root / "selector/variants.yaml").read_text() == \
        recipes.selector_variants_yaml(targets)


def test_selector_needs_the_arch_virtual_package_and_every_cu_package():
    text = recipes.selector_recipe_yaml([Target("gfx90a", 104), Target("gfx90a", 110),
                                         Target("sm90", 132)])
    assert "- __amdgpu_arch * gfx90a" in text and "- __cuda_arch * sm90" in text
    assert "miopenkernels-gfx90a-104 ==" in text and "miopenkernels-gfx90a-110 ==" in text
