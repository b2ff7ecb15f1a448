"""bench/alternatives_ab.py: two solver_alternatives runs compared, and its refusals; and the
committed comparison of the 3-D kernel before and after the small-grid split."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import alternatives_ab  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "split3d_h100"


def _run(path: Path, rows: list[tuple[str, str, float, float, list[int]]]) -> Path:
    out: dict[str, dict] = {}
    for key, name, ms, cudnn, params in rows:
        row = out.setdefault(key, {"key": key, "case": "FP32-F-NCHW", "cudnn_gpu_ms": cudnn,
                                   "solvers": {}})
        row["solvers"][name] = {"gpu_ms": ms, "params": params}
    path.write_text(json.dumps({"rows": list(out.values())}))
    return path


def test_it_compares_rows_of_the_same_parameters(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    unsplit, split = [64, 64, 32, 8, 1, 4, 2], [64, 64, 32, 8, 4, 4, 2]
    before = _run(tmp_path / "a.json", [("k1", "S", 1.0, 1.0, unsplit),
                                        ("k2", "S", 1.0, 1.0, unsplit),
                                        ("k3", "S", 4.0, 1.0, split)])
    after = _run(tmp_path / "b.json", [("k1", "S", 1.21, 1.0, unsplit),
                                       ("k2", "S", 1.0, 1.0, [128] + unsplit[1:]),
                                       ("k3", "S", 1.0, 1.0, split)])
    assert alternatives_ab.main([str(before), str(after), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # k2 ran other parameters; k3 split (left out without --splits).
    assert out == {"S FP32-F-NCHW": {"rows": 1, "after_over_before": 1.21, "min": 1.21,
                                     "max": 1.21, "cudnn_after_over_before": 1.0}}
    assert alternatives_ab.main([str(before), str(after), "--json", "--splits"]) == 0
    assert json.loads(capsys.readouterr().out)["S FP32-F-NCHW"]["rows"] == 2
    other = _run(tmp_path / "c.json", [("k9", "S", 1.0, 1.0, unsplit)])
    bad = tmp_path / "d.json"
    bad.write_text("{")
    assert alternatives_ab.main([str(before), str(other)]) == 3
    assert alternatives_ab.main([str(before), str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_committed_kernel_comparison() -> None:
    """The figures bench/results/README.md quotes for the kernel change: the IEEE FP32
    forward object unsplit 1.10x slower in NCDHW, the three-product one 1.01x, cuDNN's drift
    0.1%; and the registers behind it."""
    out = alternatives_ab.compare(alternatives_ab._rows(RESULTS / "ab_before.json"),
                                  alternatives_ab._rows(RESULTS / "ab_after.json"))
    ieee, x3 = out["ConvTriton3dFwd FP32-F-NCHW"], out["ConvTriton3dTf32x3Fwd FP32-F-NCHW"]
    assert (ieee["rows"], ieee["after_over_before"], ieee["max"]) == (27, 1.099, 1.216)
    assert x3["after_over_before"] == 1.014 and ieee["cudnn_after_over_before"] == 1.001
    assert out["ConvTriton3dFwd FP32-F-NHWC"]["after_over_before"] == 1.04
    regs = {r["case"] + " " + r["solver"]: r for r in
            json.loads((RESULTS / "regs_before.json").read_text())["rows"]}
    now = {r["case"] + " " + r["solver"]: r for r in
           json.loads((RESULTS / "regs_after.json").read_text())["rows"]}
    key = "FP32-F-NCDHW ConvTriton3dFwd"
    assert (regs[key]["registers"], now[key]["registers"]) == (118, 154)
    assert (regs[key]["blocks_per_sm"], now[key]["blocks_per_sm"]) == (2, 1)
    capped = {r["case"] + " " + r["solver"]: r for r in
              json.loads((RESULTS / "regs_after_maxnreg128.json").read_text())["rows"]}
    for case, blocks in ((key, 2), ("FP32-B-NCDHW ConvTriton3dBwd", 4)):
        assert (capped[case]["registers"], capped[case]["spills"]) == (128, False)
        assert capped[case]["blocks_per_sm"] == blocks
    assert capped["FP16-F-NCDHW ConvTriton3dFwd"]["spills"]
