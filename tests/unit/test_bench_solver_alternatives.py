"""bench/solver_alternatives.py without a GPU: the summary of a saved run (`--from-json`), whose
figures bench/results/README.md quotes, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PADDED = ROOT / "bench" / "results" / "alternatives_padded_via_h200.json"


def _module():  # noqa: ANN202 - bench/solver_alternatives.py as a module
    import importlib.util

    spec = importlib.util.spec_from_file_location("solver_alternatives",
                                                  ROOT / "bench" / "solver_alternatives.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/solver_alternatives.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_from_json_summarises_each_case_over_the_solvers_that_ran_in_it() -> None:
    run = _run("--from-json", str(PADDED), "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    saved = json.loads(PADDED.read_text())
    for case, via, own in (("FP16-F-NCHW", "ConvTritonImplicitGemmViaNhwcFwd",
                            "ConvTritonImplicitGemmFwd"),
                           ("FP16-B-NCHW", "ConvTritonImplicitGemmViaNhwcBwd",
                            "ConvTritonImplicitGemmBwd"),
                           ("FP16-W-NCHW", "ConvTritonImplicitGemmViaNhwcWrw",
                            "ConvTritonImplicitGemmWrw")):
        entry = summary[case]
        rows = [r for r in saved["rows"] if r["case"] == case]
        assert entry["solvers"] == [via, own] and entry["layers"] == len(rows)
        worst = max(r["solvers"][via]["gpu_ms"] / r["cudnn_gpu_ms"] for r in rows)
        assert entry[via]["max_vs_cudnn"] == worst
        # The padded copies' solver is the faster on every layer of the run.
        assert entry[own]["faster_than_first"] == 0 and entry[own]["vs_first"] > 2
    assert [round(summary[c][v]["vs_cudnn"], 2) for c, v in (
        ("FP16-F-NCHW", "ConvTritonImplicitGemmViaNhwcFwd"),
        ("FP16-B-NCHW", "ConvTritonImplicitGemmViaNhwcBwd"),
        ("FP16-W-NCHW", "ConvTritonImplicitGemmViaNhwcWrw"))] == [1.18, 1.28, 1.35]
    text = _run("--from-json", str(PADDED)).stdout
    assert "FP16-B-NCHW: 12 layers" in text and "max error" in text


def test_refusals_are_one_line_with_their_own_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    run = _run("--from-json", str(bad))
    assert run.returncode == 2 and "is not a saved run" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    run = _run()
    assert run.returncode == 3 and "--solvers" in run.stderr
    run = _run("--solvers", "ConvTritonImplicitGemmFwd,NoSuchSolver")
    assert run.returncode == 3 and "unknown solver 'NoSuchSolver'" in run.stderr
    run = _run("--solvers", "ConvTritonImplicitGemmFwd")
    assert run.returncode == 3 and "at least two" in run.stderr


def test_a_tile_overrides_the_defaults_six_tile_values() -> None:
    module = _module()
    assert module.tiled_params((64, 64, 32, 8, 16, 4, 4), "128:128:32:8:8:3") == \
        (128, 128, 32, 8, 16, 8, 3)
    assert module.tiled_params((64, 64, 32, 8, 16, 4, 4), "128:128:32:8:8:3:2") == \
        (128, 128, 32, 8, 2, 8, 3)
    for bad in ("128:128", "1:2:3:4:5:6:7:8"):
        with pytest.raises(ValueError):
            module.tiled_params((0,) * 7, bad)


def test_a_tile_of_split_zero_takes_the_split_that_fills_the_gpu() -> None:
    from miopenkernels.kernels import conv_triton_spec as spec
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes
    from miopenkernels.target import Target

    module = _module()
    p = ConvProblem(n=32, c=256, k=256, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                    direction="W", in_type="FP16", wei_type="FP16", out_type="FP16",
                    in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    target = Target("sm90", 132)
    params = module.tiled_params((64, 64, 64, 8, 8, 4, 4), "128:128:64:8:8:3:0")
    assert params[4] == 0
    filled = module._filling_split(p, params, target)
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1}
    view = problem_view(p)[0]
    expected = spec.split_for("conv2d_bwd_weight", spec_sizes(view), tile, 132)
    assert filled == (128, 128, 64, 8, expected, 8, 3) and expected > 1


def test_a_split_entry_sets_or_scales_the_defaults_split() -> None:
    module = _module()
    defaults = (64, 64, 32, 8, 16, 4, 1)
    assert module.split_params(defaults, "split=1") == (64, 64, 32, 8, 1, 4, 1)
    assert module.split_params(defaults, "split*2") == (64, 64, 32, 8, 32, 4, 1)
    assert module.split_params(defaults, "split/4") == (64, 64, 32, 8, 4, 4, 1)
    assert module.split_params((64, 64, 32, 8, 1, 4, 1), "split/2")[4] == 1
    for bad in ("split", "split=0", "split+2", "split*x"):
        with pytest.raises(ValueError):
            module.split_params(defaults, bad)


def test_pick_is_immediate_modes_first_choice_timed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pick` is the handle's first ranked solution; where it is a named solver at the same
    parameters that one's time serves both, else it is timed itself."""
    from types import SimpleNamespace

    mod = _module()
    ranked = [SimpleNamespace(solver="B", params=(1, 2)), SimpleNamespace(solver="A", params=())]
    handle = SimpleNamespace(solutions=lambda p: ranked)
    assert mod._solution(handle, None, mod.PICK) is ranked[0]
    assert mod._solution(SimpleNamespace(solutions=lambda p: []), None, mod.PICK) is None
    timed: list[str] = []

    def fake_time(handle, p, sol, tensors, ref, repeats, warmup):  # noqa: ANN001, ANN202
        timed.append(sol.solver)
        return {"gpu_ms": float(len(timed)), "params": list(sol.params or ()),
                "solver": sol.solver, "compiled": 1}

    monkeypatch.setattr(mod, "_time", fake_time)
    named = {"A": ranked[1], "B": SimpleNamespace(solver="B", params=(1, 2)), "pick": ranked[0]}
    out = mod._time_all(handle, None, named, {}, None, 1, 0)
    assert timed == ["A", "B"] and out["pick"]["gpu_ms"] == out["B"]["gpu_ms"]
    assert out["pick"]["compiled"] == 0 and out["pick"]["solver"] == "B"
    timed.clear()
    named["B"] = SimpleNamespace(solver="B", params=(3, 4))  # another tile: timed apart
    out = mod._time_all(handle, None, named, {}, None, 1, 0)
    assert timed == ["A", "B", "B"] and out["pick"]["params"] == [1, 2]
