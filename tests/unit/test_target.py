"""Targets: MIOpen basenames, package names, parsing, targets.toml and glob selection."""

from __future__ import annotations

import pytest
from miopenkernels.errors import TargetError
from miopenkernels.target import (
    Target,
    basename_for,
    default_targets,
    load_targets,
    select_targets,
    spec_for,
    vendor_of,
)


@pytest.mark.parametrize(("arch", "cu", "basename"), [
    ("gfx906", 60, "gfx906_60"),
    ("gfx900", 64, "gfx900_64"),    # 64 is the last decimal count
    ("gfx900", 65, "gfx90041"),     # 65 is the first hex one
    ("gfx90a", 104, "gfx90a68"),
    ("gfx90a", 110, "gfx90a6e"),
    ("gfx908", 120, "gfx90878"),
    ("gfx942", 304, "gfx942130"),
    ("gfx1030", 40, "gfx1030_40"),
    ("gfx1100", 48, "gfx1100_48"),
    ("sm90", 132, "sm9084"),
    ("sm86", 84, "sm8654"),
])
def test_basename_rules(arch, cu, basename):
    assert Target(arch, cu).basename == basename == basename_for(arch, cu)


@pytest.mark.parametrize(("arch", "cu", "package"), [
    ("gfx90a", 110, "miopenkernels-gfx90a-110"),   # package names stay decimal
    ("gfx942", 304, "miopenkernels-gfx942-304"),
    ("gfx1030", 40, "miopenkernels-gfx1030-40"),
    ("sm90", 132, "miopenkernels-sm90-132"),
])
def test_package_names_use_decimal_cus(arch, cu, package):
    t = Target(arch, cu)
    assert t.package == package
    assert t.wheel_name == package.replace("-", "_")
    assert t.name == package.removeprefix("miopenkernels-")


def test_target_features_stay_out_of_names():
    t = Target("gfx90a:sramecc+:xnack-", 110)
    assert (t.arch, t.features, t.target_id) == ("gfx90a", ("sramecc+", "xnack-"),
                                                 "gfx90a:sramecc+:xnack-")
    assert (t.db_id, t.basename, t.package) == ("gfx90a", "gfx90a6e", "miopenkernels-gfx90a-110")
    assert Target("amdgcn-amd-amdhsa--gfx90a:xnack+", 104).target_id == "gfx90a:xnack+"


def test_nvidia_spellings_normalise():
    assert Target("sm_90", 132) == Target("SM90", 132) == Target("sm90", 132)
    assert (Target("sm90", 132).vendor, Target("sm90", 132).sm) == ("nvidia", 90)
    assert vendor_of("gfx1201") == "amd"


@pytest.mark.parametrize(("text", "name", "target_id"), [
    ("gfx90a-104", "gfx90a-104", "gfx90a"),
    ("gfx90a:sramecc+:xnack--110", "gfx90a-110", "gfx90a:sramecc+:xnack-"),
    ("sm90-132", "sm90-132", "sm90"),
    ("sm_90-132", "sm90-132", "sm90"),
    ("gfx906_60", "gfx906-60", "gfx906"),      # a basename of up to 64 CUs
    ("gfx90a6e", "gfx90a-110", "gfx90a"),      # a hex basename of a known arch
    ("gfx942130", "gfx942-304", "gfx942"),
    ("sm9084", "sm90-132", "sm90"),
])
def test_parse(text, name, target_id):
    t = Target.parse(text)
    assert (t.name, t.target_id) == (name, target_id)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Target("gfx90a", 0), "CU count must be an integer in 1..65535"),
    (lambda: Target("navi21", 40), "unknown GPU arch 'navi21'"),
    (lambda: Target("gfx90a:ecc+", 104), r"target feature 'ecc\+'"),
    (lambda: Target("sm90:xnack+", 132), "takes no target features"),
    (lambda: Target.parse("gfx90a"), "cannot read target 'gfx90a'"),
    (lambda: Target.parse("what"), "cannot read target 'what'"),
])
def test_bad_targets(make, message):
    with pytest.raises(TargetError, match=message):
        make()


def test_to_dict():
    assert Target("gfx90a:sramecc+:xnack-", 110).to_dict() == {
        "vendor": "amd", "arch": "gfx90a", "target_id": "gfx90a:sramecc+:xnack-", "cu": 110,
        "basename": "gfx90a6e", "package": "miopenkernels-gfx90a-110",
    }


# ----------------------------------------------------------------------------- targets.toml
def test_targets_toml_lists_the_field_archs():
    specs = {s.arch: s for s in load_targets()}
    assert {"gfx906", "gfx90a", "gfx942", "gfx1030", "gfx1100", "sm90"} <= set(specs)
    assert specs["gfx90a"].cus == (104, 110)
    assert specs["sm90"].compiler == "nvrtc" and specs["sm90"].compile_arch == "sm_90"
    assert all(spec.vendor == vendor_of(spec.arch) for spec in specs.values())


def test_spec_for_unknown_arch_derives_one():
    assert spec_for("gfx90a:sramecc+").arch == "gfx90a"
    assert (spec_for("gfx1150").compiler, spec_for("sm101").compile_arch) == ("clang-19",
                                                                              "sm_101")


def test_load_targets_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[target]]\narch = 'gfx90a'\n")
    with pytest.raises(TargetError, match="lacks 'compiler'"):
        load_targets(str(bad))
    with pytest.raises(TargetError, match="not found"):
        load_targets(str(tmp_path / "absent.toml"))


# ----------------------------------------------------------------------------- selection
def names(pattern) -> list[str]:
    return [t.name for t in select_targets(pattern)]


def test_no_pattern_means_every_default():
    assert names(None) == names("") == [t.name for t in default_targets()]
    assert "gfx90a-110" in names(None)


def test_glob_over_arch():
    assert names("gfx90*") == ["gfx900-56", "gfx900-64", "gfx906-60", "gfx908-120",
                               "gfx90a-104", "gfx90a-110"]
    assert all(n.startswith("sm") for n in names("sm*"))


def test_glob_over_name_and_basename():
    assert names("gfx90a-1?4") == ["gfx90a-104"]
    assert names("gfx90a6e") == ["gfx90a-110"]
    assert names("*_4?") == ["gfx1030-40", "gfx1100-48"]


def test_comma_list_keeps_order_without_duplicates():
    assert names("sm90*,gfx90a*,gfx90a-110") == ["sm90-132", "gfx90a-104", "gfx90a-110"]
    assert names(["gfx1030-40", " sm90-132 "]) == ["gfx1030-40", "sm90-132"]


def test_exact_target_outside_the_defaults_is_accepted():
    assert names("gfx1100-60") == ["gfx1100-60"]


def test_glob_matching_nothing_is_an_error():
    with pytest.raises(TargetError, match="no target matches 'gfx2\\*'; the defaults are: "):
        select_targets("gfx2*")


def test_one_basename_reading_for_parse_sniff_and_kdb_verify() -> None:
    """`Target.parse` and the file-name sniffer read `gfx950100` the same: gfx950, 256 CUs."""
    from miopenkernels.db.sniff import target_from_name

    assert Target.parse("gfx950100") == Target("gfx950", 256)
    assert target_from_name("gfx950100.kdb") == Target("gfx950", 256)
    assert Target.from_basename("gfx950100") == Target("gfx950", 256)


def test_every_known_arch_round_trips_through_its_basename_and_package_name() -> None:
    from miopenkernels.target import basename_for, known_archs

    for arch in sorted(known_archs()):
        for cu in (1, 60, 64, 65, 110, 256, 304):
            t = Target(arch, cu)
            assert Target.from_basename(basename_for(arch, cu)) == t
            assert Target.from_package(t.package) == t
            assert Target.from_package(t.wheel_name) == t
    for bad in ("gfx90a", "gfx90a_", "hello", "gfx90a40"):  # 0x40 = 64 is written `_64`
        with pytest.raises(TargetError):
            Target.from_basename(bad)
    with pytest.raises(TargetError):
        Target.from_package("miopenkernels-selector")


def test_kdb_verify_checks_the_arch_of_a_gfx950_database(tmp_path) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from miopenkernels.builder.codeobject import verify_kdb
    from package_inputs import make_kdb

    kdb = make_kdb(tmp_path / "gfx950100.kdb", "gfx942")
    checks = verify_kdb(kdb)
    assert checks and all("gfx950100.kdb is a gfx950 database" in c.error for c in checks)


def test_the_shipped_json_mirror_of_targets_toml_is_current() -> None:
    import json
    import sys
    import zlib

    from miopenkernels import target

    toml = target._targets_file()
    mirror = json.loads(toml.with_suffix(".json").read_text())
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    text = toml.read_text()
    assert mirror["source_crc32"] == zlib.crc32(text.encode()), \
        "dbs/targets.json is stale: run `python -m miopenkernels.target`"
    assert mirror["content"] == tomllib.loads(text)


def test_a_stale_or_damaged_mirror_is_ignored_and_the_toml_read(tmp_path) -> None:
    from miopenkernels import target

    toml = tmp_path / "targets.toml"
    toml.write_text('[[target]]\narch = "gfx942"\ncompiler = "clang-19"\ncus = [304]\n')
    out = target.write_mirror(str(toml))
    assert out == tmp_path / "targets.json"
    assert [s.arch for s in target.load_targets(str(toml))] == ["gfx942"]
    # The TOML changes after the mirror was made: the new TOML wins.
    toml.write_text('[[target]]\narch = "gfx90a"\ncompiler = "clang-19"\ncus = [104]\n')
    assert [s.cus for s in target.load_targets.__wrapped__(str(toml))] == [(104,)]
    out.write_text("{not json")
    assert [s.arch for s in target.load_targets.__wrapped__(str(toml))] == ["gfx90a"]
    # A mirror that matches the text is what is read (it is never parsed from TOML then).
    target.write_mirror(str(toml))
    import json

    data = json.loads(out.read_text())
    data["content"]["target"][0]["description"] = "from the mirror"
    out.write_text(json.dumps(data))
    assert target.load_targets.__wrapped__(str(toml))[0].description == "from the mirror"
