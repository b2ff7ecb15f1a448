"""Committed results stored gzip-compressed read as their JSON, within a size limit."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from _results import read_json  # noqa: E402


def test_a_compressed_run_reads_as_its_json_and_a_large_one_is_refused(tmp_path: Path) -> None:
    run = {"rows": [{"ratio": 1.5}], "device": "x"}
    plain, packed = tmp_path / "run.json", tmp_path / "run.json.gz"
    plain.write_text(json.dumps(run))
    packed.write_bytes(gzip.compress(json.dumps(run).encode()))
    assert read_json(plain) == read_json(packed) == run
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (1 << 20)))  # 1 MiB inflated
    with pytest.raises(ValueError, match="over"):
        read_json(bomb, limit=1 << 16)


def test_every_compressed_result_is_named_in_the_readme_and_reads() -> None:
    results = ROOT / "bench" / "results"
    readme = (results / "README.md").read_text()
    packed = sorted(results.glob("*.json.gz"))
    assert len(packed) >= 40
    for path in packed:
        stem = path.name[: -len(".json.gz")]
        assert path.name in readme or f"{stem}.{{json.gz," in readme or \
            f"{stem}.{{md,json.gz}}" in readme, path.name
        assert not (results / f"{stem}.json").exists(), path.name


def test_zoo_compare_reads_a_compressed_run() -> None:
    results = ROOT / "bench" / "results"
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "zoo_compare.py"), "--json",
                          str(results / "zoo_h200-w-3a177d4.json.gz"),
                          str(results / "zoo_h200-w-e2323e5.json.gz")],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)
