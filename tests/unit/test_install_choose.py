"""Choosing packages, reading indexes, verifying and committing: no pip, no conda here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from miopenkernels.cli import app
from miopenkernels.errors import (
    IndexUnreachableError,
    InstallError,
    IntegrityError,
    PackageNotFoundError,
)
from miopenkernels.install import commit as commit_mod
from miopenkernels.install.choose import choose_packages
from miopenkernels.install.sources import Available, Source, list_available
from miopenkernels.install.verify import verify_prefix
from miopenkernels.target import Target
from typer.testing import CliRunner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROCMINFO = FIXTURES / "rocminfo_two_gpus.txt"


def avail(name: str, version: str = "0.1.0", build: str = "") -> Available:
    return Available(Target.parse(name), version, f"file:///x/{name}", None, "wheel", build)


def test_exact_match_and_newest_version_win():
    offered = [avail("gfx90a-104", "0.1.0"), avail("gfx90a-104", "0.2.0"),
               avail("gfx90a-110")]
    [c] = choose_packages({Target("gfx90a", 104): ["0: MI210"]}, offered)
    assert c.exact and c.available.version == "0.2.0" and c.warning is None


def test_nearest_cu_of_the_same_arch_with_a_warning():
    offered = [avail("gfx90a-104"), avail("gfx942-304"), avail("gfx90a-220")]
    [c] = choose_packages({Target("gfx90a", 110): ["0"]}, offered)
    assert c.available.target == Target("gfx90a", 104) and not c.exact
    assert "nearest CU count" in c.warning and "gfx90a6e" in c.warning


def test_no_package_for_the_arch_lists_what_is_offered():
    with pytest.raises(PackageNotFoundError, match="offers: gfx906-60 0.1.0, gfx90a-104"):
        choose_packages({Target("gfx1100", 48): ["0"]},
                        [avail("gfx906-60"), avail("gfx90a-104")])


def test_a_pinned_version_that_is_missing_is_an_error():
    with pytest.raises(PackageNotFoundError, match="version 9.9"):
        choose_packages({Target("gfx906", 60): ["0"]}, [avail("gfx906-60")], version="9.9")


@pytest.mark.parametrize("mark", ["0_databases_only", "gfx90a_104_databases_only_0"])
def test_a_package_with_kernels_is_taken_before_a_databases_only_one(mark):
    dbs_new, kernels = avail("gfx90a-104", "0.2.0", mark), avail("gfx90a-104", "0.1.0")
    assert dbs_new.databases_only and not kernels.databases_only
    [c] = choose_packages({Target("gfx90a", 104): ["0"]}, [dbs_new, kernels])
    assert c.available is kernels and c.to_dict()["contents"] == "kernels"
    assert "has kernels" in c.why and f"0.2.0 ({mark})" in c.why
    # Only databases-only is offered, or asked for by version: it is taken, and said so.
    [c] = choose_packages({Target("gfx90a", 104): ["0"]}, [dbs_new])
    assert c.available is dbs_new and "databases-only" in c.why and "compiled" in c.why
    [c] = choose_packages({Target("gfx90a", 104): ["0"]}, [dbs_new, kernels], version="0.2.0")
    assert c.available is dbs_new
    # Between packages with kernels (or without) the newest wins, as before, with no note.
    [c] = choose_packages({Target("gfx90a", 104): ["0"]},
                          [kernels, avail("gfx90a-104", "0.3.0")])
    assert c.available.version == "0.3.0" and c.why is None
    # The nearest CU count follows the same rule, and the error says what is databases-only.
    [c] = choose_packages({Target("gfx90a", 110): ["0"]}, [dbs_new, kernels])
    assert c.available is kernels and c.warning and c.why
    with pytest.raises(PackageNotFoundError, match=r"gfx90a-104 0.2.0 \(databases-only\)"):
        choose_packages({Target("gfx942", 304): ["0"]}, [dbs_new])


def _simple_index(root: Path) -> Path:
    simple = root / "simple"
    (simple / "miopenkernels-gfx906-60").mkdir(parents=True)
    (simple / "other-project").mkdir()
    (simple / "index.html").write_text(
        '<html><body><a href="miopenkernels-gfx906-60/">miopenkernels-gfx906-60</a>'
        '<a href="other-project/">other-project</a></body></html>')
    (simple / "miopenkernels-gfx906-60" / "index.html").write_text(
        '<a href="miopenkernels_gfx906_60-0.1.0-py3-none-any.whl#sha256=abc">x</a>'
        '<a href="miopenkernels_gfx906_60-0.2.0-py3-none-any.whl#sha256=def">y</a>'
        '<a href="miopenkernels_gfx906_60-0.2.0-0_databases_only-py3-none-any.whl#sha256=0">z</a>')
    return simple


def test_simple_index_lists_every_wheel_with_its_hash(tmp_path):
    found = list_available(Source("index", str(_simple_index(tmp_path))))
    assert [(a.target.name, a.version, a.sha256, a.databases_only) for a in found] == [
        ("gfx906-60", "0.1.0", "abc", False), ("gfx906-60", "0.2.0", "def", False),
        ("gfx906-60", "0.2.0", "0", True)]
    assert found[2].build == "0_databases_only"
    assert found[0].url.endswith("/simple/miopenkernels-gfx906-60/"
                                 "miopenkernels_gfx906_60-0.1.0-py3-none-any.whl")


def test_channel_repodata_lists_kernel_packages_only(tmp_path):
    (tmp_path / "noarch").mkdir()
    (tmp_path / "noarch" / "repodata.json").write_text(json.dumps({"packages.conda": {
        "miopenkernels-gfx90a-104-0.1.0-gfx90a_104_0.conda": {
            "name": "miopenkernels-gfx90a-104", "version": "0.1.0", "build": "gfx90a_104_0",
            "sha256": "00"},
        "miopenkernels-gfx90a-104-0.1.0-gfx90a_104_databases_only_0.conda": {
            "name": "miopenkernels-gfx90a-104", "version": "0.1.0",
            "build": "gfx90a_104_databases_only_0", "sha256": "01"},
        "miopenkernels-gpu-0.1.0-gfx90a_0.conda": {"name": "miopenkernels-gpu",
                                                   "version": "0.1.0"},
    }}))
    a, b = sorted(list_available(Source("channel", str(tmp_path))), key=lambda a: a.build)
    assert (a.target.name, a.build, a.kind) == ("gfx90a-104", "gfx90a_104_0", "conda")
    assert not a.databases_only and b.databases_only


@pytest.mark.parametrize("kind", ["index", "channel", "find-links"])
def test_an_unreachable_source_is_its_own_error(tmp_path, kind):
    with pytest.raises(IndexUnreachableError):
        list_available(Source(kind, str(tmp_path / "missing")))


def test_an_unreachable_http_index_is_its_own_error():
    with pytest.raises(IndexUnreachableError, match="unreachable"):
        list_available(Source("index", "http://127.0.0.1:9/simple"))


def _installed(prefix: Path) -> Path:
    db = prefix / "share/miopen/db"
    db.mkdir(parents=True)
    (db / "gfx906_60.kdb").write_bytes(b"k" * 600)
    from miopenkernels.install.manifest import sha256_file

    man = prefix / "share/miopenkernels/gfx906_60.manifest.json"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({
        "package": "miopenkernels-gfx906-60", "version": "0.1.0",
        "target": {"arch": "gfx906", "cu": 60},
        "files": {"share/miopen/db/gfx906_60.kdb": {"sha256": sha256_file(db / "gfx906_60.kdb")}},
    }))
    return db / "gfx906_60.kdb"


def test_verify_sees_an_altered_and_a_missing_file(tmp_path):
    kdb = _installed(tmp_path)
    assert [c.ok for c in verify_prefix(tmp_path)] == [True]
    kdb.write_bytes(b"x" * 600)
    with pytest.raises(IntegrityError, match="gfx906_60.kdb sha256 mismatch"):
        verify_prefix(tmp_path)
    kdb.unlink()
    [check] = verify_prefix(tmp_path, raise_on_error=False)
    assert check.problems[0].problem == "missing"


def test_verify_with_nothing_installed_says_so(tmp_path):
    with pytest.raises(PackageNotFoundError, match="no miopenkernels package"):
        verify_prefix(tmp_path)


def test_verify_command_exit_codes(tmp_path):
    kdb = _installed(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(app, ["verify", "--prefix", str(tmp_path), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    kdb.write_bytes(b"y" * 600)
    bad = runner.invoke(app, ["verify", "--prefix", str(tmp_path)])
    assert bad.exit_code == 12


def test_a_failed_commit_puts_everything_back(tmp_path, monkeypatch):
    stage, prefix, backup = tmp_path / "stage", tmp_path / "prefix", tmp_path / "backup"
    for rel in ("share/a", "share/b", "share/c"):
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).write_text("new " + rel)
    (prefix / "share").mkdir(parents=True)
    (prefix / "share/a").write_text("old a")
    old_record = prefix / "old.dist-info"
    old_record.mkdir()
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src, dst):
        calls["n"] += 1
        if str(src).endswith("share/c"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)  # every rename goes through os.replace
    with pytest.raises(InstallError, match="nothing was changed"):
        commit_mod.commit_files(stage, prefix, ["share/a", "share/b", "share/c"], [old_record],
                                backup)
    assert (prefix / "share/a").read_text() == "old a"
    assert not (prefix / "share/b").exists() and not (prefix / "share/c").exists()
    assert old_record.is_dir()


def test_install_cli_errors_have_their_own_exit_codes(tmp_path, monkeypatch):
    runner = CliRunner()
    simple = _simple_index(tmp_path)
    monkeypatch.delenv("MIOPEN_DEVICE_ARCH", raising=False)
    monkeypatch.delenv("MIOPEN_DEVICE_CU", raising=False)
    # The rocminfo file has gfx906-60 and two gfx90a-104: no package for gfx90a-104.
    r = runner.invoke(app, ["install", "--index-url", str(simple), "--prefix",
                            str(tmp_path / "p"), "--rocminfo-file", str(ROCMINFO), "--dry-run"])
    assert r.exit_code == 10, r.output
    assert "gfx90a-104" in r.output and "offers: gfx906-60 0.1.0, gfx906-60 0.2.0" in r.output
    r = runner.invoke(app, ["install", "--index-url", str(tmp_path / "nope"), "--prefix",
                            str(tmp_path / "p"), "--rocminfo-file", str(ROCMINFO)])
    assert r.exit_code == 11 and r.output.startswith("error: ")
    # No GPU: an empty rocminfo output and nothing else to ask.
    empty = tmp_path / "rocminfo.txt"
    cpu_only = ROCMINFO.read_text().split("*******\nAgent 2")[0] + "*** Done ***\n"
    empty.write_text(cpu_only)
    r = runner.invoke(app, ["install", "--index-url", str(simple), "--prefix",
                            str(tmp_path / "p"), "--rocminfo-file", str(empty)])
    assert r.exit_code == 6, r.output
    r = runner.invoke(app, ["install", "--prefix", str(tmp_path / "p")])
    assert r.exit_code == 2
    assert not (tmp_path / "p").exists()


def test_install_for_another_arch_is_refused_without_force(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "104")
    simple = _simple_index(tmp_path)
    r = CliRunner().invoke(app, ["install", "--index-url", str(simple),
                                 "--prefix", str(tmp_path / "p"), "--target", "gfx906-60",
                                 "--dry-run"])
    assert r.exit_code == 4 and "--force" in r.output
    r = CliRunner().invoke(app, ["install", "--index-url", str(simple),
                                 "--prefix", str(tmp_path / "p"), "--target", "gfx906-60",
                                 "--dry-run", "--force", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["packages"][0]["status"] == "would install"


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (2, 0, 1)])
def test_newest_follows_pep_440_whatever_the_listing_order(order):
    versions = ["0.2.0rc1", "0.2.0rc2", "0.2.0"]
    offered = [avail("gfx90a-104", versions[i]) for i in order]
    [c] = choose_packages({Target("gfx90a", 104): []}, offered)
    assert c.available.version == "0.2.0"
    [c] = choose_packages({Target("gfx90a", 104): []}, [a for a in offered
                                                        if a.version != "0.2.0"])
    assert c.available.version == "0.2.0rc2"


def test_requested_version_matches_its_pep_440_equal():
    offered = [avail("gfx90a-104", "0.1.0"), avail("gfx90a-104", "0.2.0")]
    [c] = choose_packages({Target("gfx90a", 104): []}, offered, version="0.1")
    assert c.available.version == "0.1.0"
    [c] = choose_packages({Target("gfx90a", 110): []}, offered, version="0.1")
    assert c.available.version == "0.1.0" and c.warning


def test_find_links_reads_wheel_names_through_packaging(tmp_path):
    for name in ("miopenkernels_gfx90a_104-0.2.0rc2-py3-none-any.whl",
                 "miopenkernels_gfx90a_104-0.2.0-py3-none-any.whl",
                 "miopenkernels_gfx90a_104-0.2.0rc1-py3-none-any.whl",
                 "miopenkernels_gfx90a_104-not.a.version-py3-none-any.whl",
                 "miopenkernels_selector-0.2.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    found = list_available(Source("find-links", str(tmp_path)))
    assert [a.version for a in found] == ["0.2.0rc1", "0.2.0rc2", "0.2.0"]


def test_an_endless_index_source_is_refused_unread() -> None:
    from miopenkernels.errors import IndexUnreachableError
    from miopenkernels.install.sources import read_url

    with pytest.raises(IndexUnreachableError, match="not a regular file"):
        read_url("file:///dev/zero", "conda channel")
