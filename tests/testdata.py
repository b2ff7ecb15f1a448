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
