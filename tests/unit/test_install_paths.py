"""Paths a package names are data: what `check_relpath` lets through and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from miopenkernels.errors import IntegrityError
from miopenkernels.install.manifest import check_relpath, inside
from miopenkernels.install.verify import check_package


@pytest.mark.parametrize("rel", ["share/miopen/db/gfx906_60.kdb", "conda-meta/x-1-0.json"])
def test_relative_paths_inside_pass(rel: str) -> None:
    assert check_relpath(rel, "m") == rel


@pytest.mark.parametrize("rel", ["../x", "share/../../x", "/etc/passwd", "a//b", "a/./b", ".",
                                 "", "a\\..\\b", "C:/x", "a\x00b", "~/x", "a/" + "9" * 300,
                                 "a/" * 600, 5, None])
def test_paths_that_leave_or_break_the_prefix_are_refused(rel: object) -> None:
    with pytest.raises(IntegrityError):
        check_relpath(rel, "m")


def test_a_symlink_out_of_the_root_is_outside(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "root" / "share").symlink_to(tmp_path / "out")
    assert not inside(tmp_path / "root", "share/x")
    assert inside(tmp_path / "root", "db/x")


def test_verify_refuses_a_manifest_path_too_long_for_the_file_system(tmp_path: Path) -> None:
    manifest = tmp_path / "m.json"
    rel = "share/" + "/".join(["9" * 250] * 20) + "/x"  # past PATH_MAX: ENAMETOOLONG if opened
    manifest.write_text(json.dumps({"target": {"arch": "gfx906", "cu": 60},
                                    "files": {rel: {"sha256": "00"}}}))
    with pytest.raises(IntegrityError, match="too long"):
        check_package(manifest, tmp_path)
