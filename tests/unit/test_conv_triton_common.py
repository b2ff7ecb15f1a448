"""The Triton kernels' shared index helpers (kernels/conv_triton_common.py): one module that the
kernel files import, covered by their source digest."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from miopenkernels.kernel_sources import kernels_dir, source_digest, source_files

TRITON_KERNELS = ("conv_triton.py", "conv_triton_1x1.py", "conv_triton_winograd.py")


def _imports(path: Path) -> dict[str, set[str]]:
    """{sibling module: names} of a kernel file's relative imports."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.setdefault(node.module, set()).update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("kernel_file", TRITON_KERNELS)
def test_kernels_take_shared_helpers_from_the_common_module(kernel_file: str) -> None:
    imports = _imports(kernels_dir() / kernel_file)
    common = imports["conv_triton_common"]
    # split_range for a split the object holds; part_range for one the launch's grid gives
    assert "tile_offsets" in common and common & {"split_range", "part_range"}
    private = {m: sorted(n for n in names if n.startswith("_")) for m, names in imports.items()}
    assert not any(private.values()), f"{kernel_file} imports private names: {private}"


def test_common_module_defines_only_jit_helpers_it_exports() -> None:
    tree = ast.parse((kernels_dir() / "conv_triton_common.py").read_text())
    functions = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    exported = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", "") == "__all__" for t in n.targets))
    assert sorted(f.name for f in functions) == sorted(exported)
    for f in functions:
        assert [ast.unparse(d) for d in f.decorator_list] == ["triton.jit"], f.name


@pytest.mark.parametrize("kernel_file", TRITON_KERNELS)
def test_a_change_to_the_helpers_changes_every_kernels_digest(
        tmp_path: Path, kernel_file: str) -> None:
    copy = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), copy)
    assert copy / "conv_triton_common.py" in source_files(kernel_file, copy)
    before = source_digest(kernel_file, copy)
    common = copy / "conv_triton_common.py"
    common.write_text(common.read_text().replace("GROUP_M row tiles", "GROUP_M row-tiles"))
    assert source_digest(kernel_file, copy) != before
