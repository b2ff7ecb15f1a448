"""bench/specialised_picks.py: the build's specialised choices against the solvers' own
estimates, per target, recomputed against the committed table (no GPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import specialised_picks  # noqa: E402

pytest.importorskip("miopenkernels.kernels.conv_triton_spec")


def test_the_committed_table_is_what_the_tree_computes() -> None:
    committed = json.loads((ROOT / "bench" / "results" /
                            "specialised_picks-240433f.json").read_text())
    names = ["gfx900-56", "gfx942-304", "sm80-108", "sm90-132"]
    table = specialised_picks.compare(names)
    assert table == {n: committed[n] for n in names}
    # sm90 has a record for every problem; elsewhere the estimates picked TF32 solvers for
    # more than half of them on the matrix-core targets that run TF32.
    assert table["sm90-132"]["recorded"] == table["sm90-132"]["problems"] == 499
    assert table["sm80-108"]["estimate_tf32"] > table["sm80-108"]["problems"] // 2
    assert table["gfx900-56"]["estimate_tf32"] == 0 < table["gfx900-56"]["differ"]


def test_an_unknown_target_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert specialised_picks.main(["--targets", "nope-1"]) == 2
    assert "unknown GPU arch" in capsys.readouterr().err
