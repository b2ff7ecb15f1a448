"""One kernels directory: MIOPENKERNELS_KERNELS_DIR moves every reader of kernel sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from miopenkernels import compiler
from miopenkernels.kernel_sources import KERNELS_DIR_ENV, expand_source, kernels_dir
from miopenkernels.solvers.base import CompileJob
from miopenkernels.target import Target


def test_env_variable_moves_the_solvers_sources_and_the_compilers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "h.h").write_text("#define ONE 1\n")
    (tmp_path / "k.hip").write_text('#include "h.h"\nint k() { return ONE; }\n')
    installed = kernels_dir()
    job = CompileJob("k.hip", (), "k", Target("gfx90a", 104))
    assert job.source_path == installed / "k.hip"
    monkeypatch.setenv(KERNELS_DIR_ENV, str(tmp_path))
    assert kernels_dir() == compiler.kernels_dir() == tmp_path.resolve()
    assert job.source_path == tmp_path.resolve() / "k.hip"
    assert "#define ONE 1" in expand_source("k.hip")
    assert (installed / "mk_portable.h").is_file()


def _python_kernels(folder: Path) -> Path:
    """A kernels folder of two Triton families sharing a helper, one with a data table."""
    folder.mkdir()
    (folder / "common.py").write_text("def helper():\n    return 1\n")
    (folder / "table.json").write_text('{"tile": 16}\n')
    (folder / "spec.py").write_text('TABLE = "table.json"\n')
    (folder / "family_a.py").write_text("from .common import helper\nfrom .spec import TABLE\n")
    (folder / "family_b.py").write_text(
        "def kernel():\n    from . import common\n    return common.helper()\n")
    (folder / "unrelated.py").write_text("X = 1\n")
    return folder


def test_a_triton_kernel_depends_on_what_it_imports_and_reads(tmp_path: Path) -> None:
    from miopenkernels.kernel_sources import source_files

    folder = _python_kernels(tmp_path / "k")
    names = {f: [p.name for p in source_files(f, folder)] for f in ("family_a.py", "family_b.py")}
    assert names == {"family_a.py": ["family_a.py", "common.py", "spec.py", "table.json"],
                     "family_b.py": ["family_b.py", "common.py"]}


@pytest.mark.parametrize(("edited", "changes_a", "changes_b"), [
    ("common.py", True, True),
    ("table.json", True, False),
    ("family_b.py", False, True),
    ("unrelated.py", False, False),
])
def test_an_edit_changes_the_digests_of_the_kernels_that_use_it(
        tmp_path: Path, edited: str, changes_a: bool, changes_b: bool) -> None:
    from miopenkernels.kernel_sources import source_digest

    folder = _python_kernels(tmp_path / "k")
    before = {f: source_digest(f, folder) for f in ("family_a.py", "family_b.py")}
    path = folder / edited
    edited_text = path.read_text() + "\n# edited\n" if edited.endswith(".py") else '{"tile": 32}\n'
    path.write_text(edited_text)
    after = {f: source_digest(f, folder) for f in ("family_a.py", "family_b.py")}
    assert (after["family_a.py"] != before["family_a.py"]) is changes_a
    assert (after["family_b.py"] != before["family_b.py"]) is changes_b


def test_a_module_that_does_not_parse_depends_on_every_python_file(tmp_path: Path) -> None:
    from miopenkernels.kernel_sources import source_files

    folder = _python_kernels(tmp_path / "k")
    (folder / "family_b.py").write_text("def kernel(:\n")
    assert {p.name for p in source_files("family_b.py", folder)} == {
        "family_b.py", "common.py", "spec.py", "family_a.py", "unrelated.py"}


def test_the_shipped_families_keys_are_apart() -> None:
    """An edit to the depthwise kernel recompiles no implicit-GEMM object, and the shared
    helpers reach every family (bench/rebuild_scope.py counts the objects)."""
    from miopenkernels.kernel_sources import source_files

    closure = {f: {p.name for p in source_files(f)} for f in (
        "conv_triton.py", "conv_triton_depthwise.py", "conv_triton_1x1.py",
        "conv_triton_winograd.py", "conv_triton_3d.py")}
    assert "conv_triton_depthwise.py" not in closure["conv_triton.py"]
    assert "conv_triton.py" not in closure["conv_triton_depthwise.py"]
    assert "conv_triton.py" in closure["conv_triton_3d.py"]
    assert all("conv_triton_common.py" in names for names in closure.values())
    assert "conv_triton_tuned_sm90.json" in closure["conv_triton.py"]
