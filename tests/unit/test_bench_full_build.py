"""bench/full_build.py --from-json: the committed full build's compile-time tables, per
compiler and family, summed from its `family_seconds` (the README quotes them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "bench" / "results" / "full_build-2cpu.json"


def test_from_json_prints_each_compilers_share_of_the_saved_build() -> None:
    saved = json.loads(RESULT.read_text())
    run = subprocess.run([sys.executable, "bench/full_build.py", "--from-json", str(RESULT)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    triton = sum(f["seconds"] for k, f in saved["family_seconds"].items()
                 if k.startswith("triton "))
    share = f"{100 * triton / saved['compile_seconds']:.1f}%"
    line = next(ln for ln in run.stdout.splitlines() if "│ triton " in ln and share in ln)
    assert f"{triton:.0f}" in line
    assert f"wall {saved['wall_seconds']:.0f} s" in run.stdout


def test_against_times_the_box_by_the_families_a_change_left_alone(tmp_path: Path) -> None:
    saved = json.loads(RESULT.read_text())
    slower = json.loads(RESULT.read_text())
    for name, f in slower["family_seconds"].items():
        f["seconds"] *= 1.5 if not name.startswith("triton ") else 2.0
    slower["wall_seconds"] = saved["wall_seconds"] * 1.5
    slower["tree"] = "later"
    (tmp_path / "later.json").write_text(json.dumps(slower))
    run = subprocess.run([sys.executable, "bench/full_build.py", "--from-json",
                          str(tmp_path / "later.json"), "--against", str(RESULT)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    assert "non-Triton families 1.50x the base run's compile time" in run.stdout
    assert f"an estimated {saved['wall_seconds']:.0f} s at the base run's speed" in run.stdout
    assert "│ triton " in run.stdout and "2.00" in run.stdout
    bad = subprocess.run([sys.executable, "bench/full_build.py", "--against", str(RESULT)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--from-json" in bad.stderr
