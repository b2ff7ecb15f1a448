"""Where the real MIOpen and rocminfo files live: ../shared/testdata beside the checkout.

MIOPENKERNELS_TESTDATA overrides. The files are required: a test that reads them fails, rather
than skips, when they are missing, so a green run always means they were checked.
"""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent


def _find() -> Path:
    env = os.environ.get("MIOPENKERNELS_TESTDATA")
    candidates = [Path(env)] if env else []
    candidates += [_REPO.parent / "shared" / "testdata", Path("/work/shared/testdata")]
    for c in candidates:
        if (c / "miopen").is_dir():
            return c
    raise RuntimeError(
        "the shared test data (shared/testdata beside the checkout) is missing; "
        "set MIOPENKERNELS_TESTDATA to its path"
    )


TESTDATA = _find()
MIOPEN = TESTDATA / "miopen"
ROCMINFO = TESTDATA / "rocminfo"

# The recorded rocminfo outputs.
RX6900XT = ROCMINFO / "gfx1030_rx6900xt.txt"
MI250X = ROCMINFO / "gfx90a_mi250x.txt"
MI210 = ROCMINFO / "gfx90a_mi210_partial.txt"

# AMD's full databases, stored compressed: gfx90a68.HIP.fdb.txt (193,590 lines) and
# gfx906_60.db (SQLite).
FULL_FINDDB = "gfx90a68.HIP.fdb.txt"
FULL_PERFDB = "gfx906_60.db"


def decompress_full(name: str, dest_dir: Path) -> Path:
    """`<name>.bz2` from testdata/miopen decompressed into `dest_dir` (read-only, as a system
    database is)."""
    import bz2
    import shutil

    dest = dest_dir / name
    if not dest.exists():
        with bz2.open(MIOPEN / f"{name}.bz2", "rb") as src, dest.open("wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        dest.chmod(0o444)
    return dest
