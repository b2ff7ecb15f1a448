"""`miopenkernels build` end to end with the real compilers: hipcc (gfx906), clang-19 (gfx1100)
and NVRTC (sm90), the real kernels (a copy, so tests can touch and break them) and two real
solvers (direct and 1x1 GEMM, forward), on a few ResNet-50 layers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from miopenkernels.cli import app
from miopenkernels.compiler import kernels_dir
from typer.testing import CliRunner

pytestmark = pytest.mark.integration

MANIFEST = Path(__file__).resolve().parents[1] / "fixtures" / "builder" / "small_manifest.txt"
TARGETS = "gfx906-60,gfx1100-48,sm90-132"
BASENAMES = ["gfx906_60", "gfx1100_48", "sm9084"]
SOLVERS = ("ConvDirectFwd", "Conv1x1GemmFwd")


def _have_toolchain() -> bool:
    try:
        import cuda.bindings.nvrtc  # noqa: F401
    except ImportError:
        return False
    return all(shutil.which(tool) for tool in ("hipcc", "clang-19"))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A kernels copy, a cache and a registry cut down to two solvers, shared by the tests."""
    if not _have_toolchain():
        pytest.skip("needs hipcc, clang-19 and NVRTC")
    import miopenkernels.builder.jobs as jobs_mod
    import miopenkernels.solvers as registry

    root = tmp_path_factory.mktemp("build")
    kernels = root / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "SOLVERS", [registry.get_solver(n) for n in SOLVERS])
        mp.setattr(jobs_mod, "primitive_jobs", lambda target: [])
        yield {"root": root, "kernels": kernels, "cache": root / "cache"}


def run_build(work: dict[str, Any], out: Path, kernels: Path | None = None) -> tuple[int, Any,
                                                                                     str]:
    args = ["build", "--targets", TARGETS, "--manifest", str(MANIFEST), "--out", str(out),
            "--cache-dir", str(work["cache"]), "--kernels-dir", str(kernels or work["kernels"]),
            "-j", "2", "--json"]
    result = CliRunner().invoke(app, args)
    summary = json.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, summary, result.stderr


def per_target(summary: Any, field: str) -> dict[str, int]:
    return {t["basename"]: t[field] for t in summary["targets"]}


def kdb(*args: str) -> Any:
    return CliRunner().invoke(app, ["kdb", *args])


def test_cold_build_writes_verified_kdbs_and_rebuild_compiles_nothing(
        work: dict[str, Any]) -> None:
    out = work["root"] / "out"
    code, summary, err = run_build(work, out)
    assert code == 0, err
    assert summary["compiled"] == summary["objects"] > 0
    for t in summary["targets"]:
        assert t["failed"] == 0 and t["compiled"] == t["jobs"] > 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{b}{suffix}" for b in BASENAMES for suffix in (".kdb", ".build.json"))
    for base in BASENAMES:
        path = out / f"{base}.kdb"
        verify = kdb("verify", str(path), "--json")
        assert verify.exit_code == 0, verify.stderr
        report = json.loads(verify.stdout)
        arch = base.split("_")[0] if "_" in base else "sm90"
        assert report["ok"] and {c["arch"] for c in report["checks"]} == {arch}
        listed = json.loads(kdb("list", str(path), "--json").stdout)
        assert len(listed) == per_target(summary, "jobs")[base]
        assert all(e["kernel_args"].endswith(f" -mcpu={arch}") for e in listed)
    work["first"] = {b: json.loads(kdb("list", str(out / f"{b}.kdb"), "--json").stdout)
                     for b in BASENAMES}

    code, again, err = run_build(work, out)
    assert code == 0, err
    assert again["compiled"] == 0 and again["cached"] == summary["objects"]
    assert per_target(again, "compiled") == dict.fromkeys(BASENAMES, 0)
    assert {b: json.loads(kdb("list", str(out / f"{b}.kdb"), "--json").stdout)
            for b in BASENAMES} == work["first"]


def test_touching_a_kernel_rebuilds_only_its_jobs(work: dict[str, Any]) -> None:
    out = work["root"] / "out-touched"
    if "first" not in work:  # the cold build ran in another test process: warm this cache
        code, _, err = run_build(work, work["root"] / "out-warm")
        assert code == 0, err
    code, before, err = run_build(work, out)  # warm: everything from the cache
    assert code == 0 and before["compiled"] == 0, err
    listed = {b: json.loads(kdb("list", str(out / f"{b}.kdb"), "--json").stdout)
              for b in BASENAMES}
    direct = {b: sum(e["kernel_name"] == "conv_direct.hip.o" for e in entries)
              for b, entries in listed.items()}
    assert all(direct.values())
    src = work["kernels"] / "conv_direct.hip"
    src.write_text(src.read_text() + "\n// touched: a new comment changes the source hash\n")
    code, after, err = run_build(work, out)
    assert code == 0, err
    assert per_target(after, "compiled") == direct
    assert after["compiled"] == sum(direct.values())  # no object shared between these archs
    assert after["cached"] == after["objects"] - after["compiled"]


def test_broken_kernel_fails_with_its_log_and_exit_8_while_others_build(
        work: dict[str, Any]) -> None:
    broken = work["root"] / "kernels-broken"
    shutil.copytree(work["kernels"], broken)
    src = broken / "conv_1x1.hip"
    src.write_text(src.read_text()
                   + '\nstatic_assert(sizeof(int) == 3, "mk_broken_on_purpose");\n')
    out = work["root"] / "out-broken"
    code, summary, err = run_build(work, out, broken)
    assert code == 8
    assert "mk_broken_on_purpose" in err  # the compiler's own words
    assert "conv_1x1.hip:" in err  # the job
    failed = summary["failures"]
    assert failed and all(f["job"]["kernel_file"] == "conv_1x1.hip" for f in failed)
    assert all("mk_broken_on_purpose" in f["log"] for f in failed)
    # conv_direct jobs still compiled or came from the cache; no target got a partial kdb.
    ok = summary["objects"] - len(failed)
    assert summary["compiled"] + summary["cached"] == ok > 0
    assert not out.exists() or not any(out.iterdir())
