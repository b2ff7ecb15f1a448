"""Indexing a conda channel: the process that does it exits cleanly every time, and a broken
package is one PackageBuildError carrying the indexer's words."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from miopenkernels.builder.package.index import index_channel
from miopenkernels.errors import PackageBuildError

pytestmark = pytest.mark.integration


def test_indexing_never_aborts_the_process_at_exit(tmp_path: Path) -> None:
    """py-rattler's threads used to abort about one process in four as it finalized."""
    (tmp_path / "ch" / "noarch").mkdir(parents=True)
    code = ("import sys; from pathlib import Path; "
            "from miopenkernels.builder.package.index import index_channel; "
            "index_channel(Path(sys.argv[1]))")
    codes = [subprocess.run([sys.executable, "-c", code, str(tmp_path / "ch")],
                            capture_output=True, timeout=120, check=False).returncode
             for _ in range(8)]
    assert codes == [0] * 8
    assert (tmp_path / "ch" / "noarch" / "repodata.json").is_file()


def test_a_broken_package_is_a_package_build_error(tmp_path: Path) -> None:
    noarch = tmp_path / "ch" / "noarch"
    noarch.mkdir(parents=True)
    (noarch / "miopenkernels-gfx90a-104-0.1.0-gfx90a_104_0.conda").write_bytes(b"junk")
    with pytest.raises(PackageBuildError, match="indexing .* failed .*conda file") as exc:
        index_channel(tmp_path / "ch")
    assert exc.value.exit_code == 15
