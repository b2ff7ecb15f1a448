"""bench/main_job.sh without running it: the README's main job on a fresh clone with an
empty object cache, its results file headed as the tests that quote it read."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_main_job_script_runs_the_readmes_command() -> None:
    """bench/main_job.sh, which writes the main_job-*.txt results, runs the README's main job
    (set-up, then the build) on a fresh clone with an empty object cache, and heads its file
    with the figures the tests read."""
    script = (ROOT / "bench" / "main_job.sh").read_text()
    assert "bash ci/setup.sh && .venv/bin/miopenkernels build --out out" in \
        (ROOT / "README.md").read_text()
    assert "bash ci/setup.sh >" in script and ".venv/bin/miopenkernels build --out out" in script
    assert 'MIOPENKERNELS_CACHE="$work/cache"' in script and "git clone -q" in script
    assert "setup $(secs" in script and "s, build $(secs" in script and \
        "s, rebuild $(secs" in script
    run = subprocess.run(["bash", "-n", "bench/main_job.sh"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
