"""bench/rebuild_scope.py without compiling: the objects an edit to one kernel file recompiles,
from the build's own cache keys, for one target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_edit_recompiles_its_family_alone(tmp_path: Path) -> None:
    out = tmp_path / "scope.json"
    run = subprocess.run([sys.executable, "bench/rebuild_scope.py", "--targets", "sm90-132",
                          "--out", str(out), "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    assert json.loads(run.stdout) == record
    rows = {row["file"]: row for row in record["files"]}
    assert 0 < record["triton_objects"] < record["objects"]
    # A spec module shapes launches and options, not code: an edit recompiles nothing.
    assert rows["conv_triton_depthwise_spec.py"]["objects"] == 0
    # The depthwise kernels and the implicit GEMM's are apart; the shared helpers reach both.
    depthwise, gemm = rows["conv_triton_depthwise.py"], rows["conv_triton.py"]
    assert 0 < depthwise["objects"] < gemm["objects"] < record["triton_objects"]
    assert rows["conv_triton_common.py"]["objects"] >= gemm["objects"] + depthwise["objects"]
    # Under the rule before, every Python file recompiled every Triton object.
    assert depthwise["before"] == gemm["before"] == record["triton_objects"]
    # The C++ sources' rule is the same as before.
    assert rows["conv_direct.hip"]["objects"] == rows["conv_direct.hip"]["before"] > 0
