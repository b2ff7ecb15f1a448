"""What the tests of the main job's timings share: a bench/results/main_job-<N>cpu-<tree>.txt
header's set-up, build and rebuild seconds (bench/main_job.sh writes them), and seconds as the
README writes them."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def main_job_times(tree: str, cpus: int = 2) -> tuple[float, float, float | None]:
    """(set-up, build, rebuild or None) seconds of the main job at `tree`."""
    text = (RESULTS / f"main_job-{cpus}cpu-{tree}.txt").read_text()
    found = re.search(r"setup ([\d.]+) s, build ([\d.]+) s(?:, rebuild ([\d.]+) s)?", text)
    assert found is not None, tree
    setup, build, rebuild = found.groups()
    return float(setup), float(build), None if rebuild is None else float(rebuild)


def minutes(seconds: float) -> str:
    """Seconds as the README gives a build's time ("27 min 3 s")."""
    return f"{int(seconds // 60)} min {round(seconds % 60)} s"
