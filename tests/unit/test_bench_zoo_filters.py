"""bench/zoo_filters.py, bench/found_share.py and bench/first_place.py without a GPU: the
filter groups' shares multiply to the case's geomean, found_share says where a run's times
come from, and each refuses a file that is not its kind of run."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "results" / "zoo_h200-fbw-50040be.json"


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_filter_groups_of_keys() -> None:
    zf = _bench("zoo_filters")
    assert zf.group_of("64-56-56-1x1-256-56-56-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F") == "1x1s1"
    assert zf.group_of("64-56-56-1x1-256-28-28-32-0x0-2x2-1x1-0-NCHW-NCHW-NCHW-FP16-F") == "other"
    assert zf.group_of("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-NCHW-NCHW-FP16-W") == "3x3"
    assert zf.group_of(
        "8-4-56-56-1x1x1-16-4-56-56-32-0x0x0-1x1x1-1x1x1-0-NCDHW-NCDHW-NCDHW-FP16-F") == "1x1s1"


def test_shares_multiply_to_the_run_summary() -> None:
    zf = _bench("zoo_filters")
    data = json.loads(RUN.read_text())
    cases = zf.groups(data["rows"])
    for case, entry in data["summary"].items():
        mine = cases[f"{case} zoo"]
        assert mine["layers"] == entry["layers"]
        assert math.isclose(mine["gpu_geomean"], entry["gpu_geomean"], rel_tol=1e-3)
        product = math.prod(g["share"] for g in mine["groups"].values())
        assert math.isclose(product, mine["gpu_geomean"], rel_tol=2e-3)
        assert sum(g["layers"] for g in mine["groups"].values()) == mine["layers"]


def test_scripts_refuse_a_foreign_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    for script in ("zoo_filters", "found_share"):
        r = subprocess.run([sys.executable, str(ROOT / "bench" / f"{script}.py"), str(bad)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "zoo.py" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "first_place.py"), str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "solver_alternatives.py" in r.stderr
    assert "Traceback" not in r.stderr


def test_found_share_names_estimated_times() -> None:
    fs = _bench("found_share")
    data = json.loads((ROOT / "bench" / "results" /
                       "zoo_h200-pointwise-fb-9d0dc7e.json").read_text())
    cases = fs.share(data["rows"], "ConvBlasGemm1x1")
    assert cases and all(name.endswith(" ranking") for name in cases)
