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
