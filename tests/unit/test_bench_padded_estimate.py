"""bench/padded_estimate.py without a GPU: the throughput of the aligned layers of a similar
size, a padded layer's estimate from it, and the refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import padded_estimate  # noqa: E402


def test_the_throughput_comes_from_layers_of_a_similar_size() -> None:
    points = [(100.0, 10.0), (150.0, 12.0), (180.0, 14.0), (1e6, 99.0)]
    assert sorted(padded_estimate.near(points, 120.0)) == [10.0, 12.0, 14.0]
    # Fewer than MIN_NEAR within 2x: the window widens.
    assert 99.0 in padded_estimate.near(points, 5e5)


@pytest.mark.parametrize(("args", "message"), [
    (["README.md", "--case", "FP32-F", "--solver", "X", "--copies-case", "FP16-F",
      "--copies-runs", "x"], "not a bench/zoo.py result"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32", "--solver", "X",
      "--copies-case", "FP16-F", "--copies-runs", "x"], "is not <type>-<direction>"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-F", "--solver", "X",
      "--copies-case", "FP16-F", "--copies-runs", "x", "--quantile", "3"], "--quantile"),
    (["bench/results/zoo_h200-w-9ec5af9.json", "--case", "FP32-F", "--solver",
      "ConvTriton3dTf32x3Fwd", "--copies-case", "FP16-F", "--copies-runs",
      "bench/results/zoo_h200-w-9ec5af9.json"], "nothing measures its throughput"),
])
def test_refusals_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "padded_estimate.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
