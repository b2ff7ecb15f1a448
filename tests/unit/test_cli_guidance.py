"""What a new user meets outside a terminal and outside the happy path: progress a log can
read, one line naming the extra to install, archs refused or explained before any work,
tables that stay readable at 80 columns, database summaries that say what this runtime serves,
and documentation that matches what the tools make."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from miopenkernels.cli import app
from typer.testing import CliRunner

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
AMD_FINDDB = Path("/work/shared/testdata/miopen/fdb_gfx90a6e_HIP_sample.txt")


# ------------------------------------------------------------------- progress (point 3)
def test_progress_without_a_terminal_prints_flushed_lines_with_counts_and_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    from miopenkernels.cli._output import Progress

    with Progress("build", "objects compiled", terminal=False) as p:
        for done in range(0, 101):
            p.update(done, 100)
        p.step("gfx90a-110: 5 jobs")
    err = capsys.readouterr().err.splitlines()
    counts = [line for line in err if re.fullmatch(r"build: \d+/100 objects compiled "
                                                   r"\(\d+%\), \d+\.\d s", line)]
    # One line per 10% (0% to 100%), not one per unit.
    assert len(counts) == 11, err
    assert err[-1].startswith("build: gfx90a-110: 5 jobs, ") and err[-1].endswith(" s")


def _fake_build(targets: Any, problems: Any, out: Any, **kw: Any) -> Any:
    from miopenkernels.builder.build import BuildResult, TargetSummary

    summaries = [TargetSummary(t, jobs=3, compiled=3) for t in targets]
    for done in range(4):
        kw["on_progress"](done, 3)
    for s in summaries:
        kw["on_target"](s)
    return BuildResult(summaries, objects=3, compiled=3)


def test_build_prints_a_progress_line_per_target_on_stderr_and_clean_json(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import miopenkernels.builder.build as build_module

    monkeypatch.setattr(build_module, "build", _fake_build)
    r = runner.invoke(app, ["build", "--targets", "gfx906-60,gfx900-56", "--manifest",
                            str(EXAMPLES / "tour.txt"), "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["compiled"] == 3  # stdout is the JSON alone
    for name in ("gfx906-60", "gfx900-56"):
        assert re.search(rf"^build: {name}: 3 jobs, 3 compiled, .*\d s$", r.stderr, re.M), \
            r.stderr
    assert re.search(r"^build: 3/3 objects compiled \(100%\)", r.stderr, re.M)


# ------------------------------------------------------------- missing extra (point 6)
_BLOCKER = textwrap.dedent("""
    import sys
    BLOCKED = {"triton", "msgpack", "build", "hatchling", "wheel", "rattler",
               "rattler_build", "cuda", "elftools"}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    from miopenkernels.cli import main
    main(sys.argv[1:])
""")


@pytest.mark.parametrize("command", [
    ["build", "--targets", "gfx90a-110", "--manifest", "{examples}/tour.txt", "--out",
     "{tmp}/out"],
    ["package", "--from-build", "{tmp}/out", "--out", "{tmp}/dist"],
    ["tune", "--manifest", "resnet50", "--out", "{tmp}/out"],
])
def test_a_runtime_only_install_names_the_extra_in_one_line_before_any_work(
        command: list[str], tmp_path: Path) -> None:
    args = [a.format(examples=EXAMPLES, tmp=tmp_path) for a in command]
    r = subprocess.run([sys.executable, "-c", _BLOCKER, *args], capture_output=True,
                       text=True, timeout=120)
    from miopenkernels.errors import MissingDependencyError

    assert r.returncode == MissingDependencyError.exit_code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "pip install 'miopenkernels[build]'" in lines[0], lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "dist").exists()


def test_an_nvrtc_library_that_cannot_load_is_one_line_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-bindings installed without its libnvrtc: the bindings raise on their first call
    (cuda-pathfinder's RuntimeError); build says so in one line, exit 16, nothing written."""
    from miopenkernels.compiler import nvidia
    from miopenkernels.errors import MissingDependencyError

    class _Unloadable:
        def nvrtcVersion(self) -> Any:  # noqa: N802 - the bindings' name
            raise RuntimeError('Failure finding "libnvrtc.so.13 or libnvrtc.so.12"\n  listdir')

    nvidia._version.cache_clear()
    monkeypatch.setattr(nvidia, "_nvrtc", _Unloadable)
    try:
        assert "libnvrtc.so.13" in (nvidia.load_error() or "")
        out = tmp_path / "out"
        r = runner.invoke(app, ["build", "--targets", "sm90-132", "--manifest",
                                str(EXAMPLES / "tour.txt"), "--out", str(out)])
    finally:
        nvidia._version.cache_clear()
    assert r.exit_code == MissingDependencyError.exit_code, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "pip install nvidia-cuda-nvrtc" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


# ------------------------------------------------------------------- targets (point 7)
@pytest.mark.parametrize("command", [["matrix", "--targets", "gfx9999-4"],
                                     ["build", "--targets", "gfx9999-4", "--out", "{tmp}"],
                                     ["matrix", "--targets", "sm99-4"]])
def test_an_arch_no_compiler_knows_is_refused_at_once(command: list[str],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = runner.invoke(app, [a.format(tmp=out) for a in command])
    assert r.exit_code == 4, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "no compiler here knows" in r.stderr
    assert not out.exists()


def test_an_arch_outside_targets_toml_gets_a_note_of_what_it_lacks() -> None:
    r = runner.invoke(app, ["matrix", "--targets", "gfx1101-30,gfx90a-110", "--json"])
    assert r.exit_code == 0, r.stderr
    notes = r.stderr.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("note: gfx1101 is not in dbs/targets.toml")
    assert "matrix-core" in notes[0] and "measured databases" in notes[0]
    assert 'matrix = "wmma"' in notes[0]
    entries = {e["target"]: e for e in json.loads(r.stdout)["include"]}
    assert entries["gfx90a-110"]["matrix"] == "mfma" and entries["gfx90a-110"]["listed"]
    assert entries["gfx1101-30"]["matrix"] == "" and not entries["gfx1101-30"]["listed"]


def test_matrix_shows_each_targets_matrix_core_kind_at_80_columns() -> None:
    r = runner.invoke(app, ["matrix", "--targets", "gfx906-60,sm90-132"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.stderr
    rows = {line.split("│")[1].strip(): line.split("│")[5].strip()
            for line in r.stdout.splitlines() if line.startswith("│")}
    assert rows == {"gfx906-60": "-", "sm90-132": "wgmma"}
    assert all(len(line) <= 80 for line in r.stdout.splitlines())


# -------------------------------------------------------------- install table (point 8)
def _report(prefix: Path, status: str) -> Any:
    from miopenkernels.install import InstallReport, Source

    report = InstallReport(prefix, "pip", Source("find-links", "dist"), False)
    report.items.append({"package": "miopenkernels-gfx90a-110", "version": "0.1.0",
                         "devices": ["0: gfx90a (MIOPEN_DEVICE_ARCH)"], "contents": "kernels",
                         "status": status, "location": str(prefix / "share/miopen/db"),
                         "files": ["share/miopen/db/gfx90a6e.kdb"] if status == "installed"
                         else []})
    return report


@pytest.mark.parametrize("status", ["installed", "already installed"])
def test_install_table_keeps_the_gpu_whole_at_80_columns_in_verifys_words(
        status: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import hashlib

    import miopenkernels.install as install_module

    kdb = tmp_path / "share" / "miopen" / "db" / "gfx90a6e.kdb"
    kdb.parent.mkdir(parents=True)
    kdb.write_bytes(b"kdb")
    manifest = tmp_path / "share" / "miopenkernels" / "gfx90a6e.manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({
        "package": "miopenkernels-gfx90a-110", "version": "0.1.0",
        "target": {"arch": "gfx90a", "cu": 110},
        "files": {"share/miopen/db/gfx90a6e.kdb": {
            "sha256": hashlib.sha256(b"kdb").hexdigest(), "size": 3}}}))
    monkeypatch.setattr(install_module, "install",
                        lambda *a, **k: _report(tmp_path, status))
    r = runner.invoke(app, ["install", "--find-links", "dist", "--prefix", str(tmp_path)],
                      env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), r.stdout
    assert any("0: gfx90a (MIOPEN_DEVICE_ARCH)" in line for line in lines), r.stdout
    assert any(status in line for line in lines), r.stdout
    # `verify` says kernels-only for this package: so does `install`.
    assert "kernels-only" in r.stdout
    v = runner.invoke(app, ["verify", "--prefix", str(tmp_path)], env={"COLUMNS": "80"})
    assert v.exit_code == 0, v.stdout + v.stderr
    assert all(len(line) <= 80 for line in v.stdout.splitlines()), v.stdout
    row = next(line for line in v.stdout.splitlines() if "miopenkernels-gfx90a-110" in line)
    assert "kernels-only" in row and "ok" in row


# ------------------------------------------------------------- db inspect (point 10)
@pytest.mark.skipif(not AMD_FINDDB.is_file(), reason="AMD's FindDb sample is not here")
def test_inspect_of_amds_finddb_lists_each_solver_once_and_serves_none() -> None:
    r = runner.invoke(app, ["db", "inspect", str(AMD_FINDDB)])
    assert r.exit_code == 0, r.stderr
    names = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("    ")]
    assert names and len(names) == len(set(names)), r.stdout
    assert re.search(r"records_this_runtime_serves: 0$", r.stdout, re.M), r.stdout
    report = json.loads(runner.invoke(app, ["db", "inspect", str(AMD_FINDDB),
                                            "--json"]).stdout)
    assert report["counts"]["records_this_runtime_serves"] == 0
    assert report["counts"]["solvers_not_in_this_runtime"] == report["counts"]["solvers"]


def test_inspect_counts_the_records_a_runtime_solver_serves(tmp_path: Path) -> None:
    from miopenkernels.solvers import SOLVERS

    ours = SOLVERS[0].name
    fdb = tmp_path / "gfx90a6e.HIP.fdb.txt"
    fdb.write_text(
        f"1-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-F={ours}:0.1,0,miopenConvolutionFwd"
        "AlgoDirect;GemmFwdRest:0.2,0,miopenConvolutionFwdAlgoGEMM\n"
        "1-56-56-3x3-64-56-56-8-1x1-1x1-1x1-0-NCHW-FP32-B=GemmBwdRest:0.2,0,"
        "miopenConvolutionBwdDataAlgoGEMM\n")
    report = json.loads(runner.invoke(app, ["db", "inspect", str(fdb), "--json"]).stdout)
    assert report["counts"]["records_this_runtime_serves"] == 1
    assert report["solvers_not_in_this_runtime"] == ["GemmBwdRest", "GemmFwdRest"]


# ----------------------------------------------------------- documentation (points 9, 11)
def test_packaging_doc_finds_links_where_package_writes_its_wheels() -> None:
    text = (ROOT / "docs" / "packaging.md").read_text()
    outs = set(re.findall(r"miopenkernels package .*?--out (\S+)", text))
    links = re.findall(r"--find-links ([a-z][\w./-]*)", text)  # DIR: a placeholder
    assert links and outs
    assert all(link in outs for link in links), (links, outs)


def test_architecture_doc_names_only_files_the_repository_has() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    names = {Path(p).name for p in listed}
    text = (ROOT / "docs" / "architecture.md").read_text()
    for ref in set(re.findall(r"\b[\w/.-]*[A-Za-z]\w*\.(?:md|py|sh|toml)\b", text)):
        assert Path(ref).name in names, ref


def test_runtime_doc_converts_bf16_as_the_reference_rounds() -> None:
    import numpy as np
    from miopenkernels.solvers.reference import quantize

    text = (ROOT / "docs" / "runtime.md").read_text()
    block = text.split("BF16 from numpy", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    x32 = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    scope: dict[str, Any] = {"np": np, "x32": x32}
    scope["y_bf16"] = None
    code = block.replace("y32 = (y_bf16", "y_bf16 = x_bf16\ny32 = (y_bf16")
    exec(code, scope)
    assert scope["x_bf16"].dtype == np.uint16
    assert np.array_equal(scope["y32"].astype(np.float64), quantize(x32, "BF16"))
    readme = (ROOT / "README.md").read_text().split("## Using the runtime", 1)[1]
    assert "uint16" in readme.split("\n## ", 1)[0]


def test_setup_lists_every_importable_recipe_folder_as_a_package() -> None:
    # In a fresh interpreter: setuptools refuses to import where another test's module (torch)
    # has already imported the standard library's distutils.
    code = ("import json, runpy, setuptools\n"
            "seen = {}\n"
            "setuptools.setup = lambda **kw: seen.update(kw)\n"
            "runpy.run_path('setup.py')\n"
            "print(json.dumps(seen['packages']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    packages = json.loads(out.splitlines()[-1])
    # setuptools warns (40 lines) about a folder Python can import that `packages` lacks.
    assert "miopenkernels.recipes.selector" in packages
    assert not any("-" in p for p in packages)


# ------------------------------------------------------- null backend's cost (point 11)
def test_null_backend_warns_once_before_a_long_reference_run(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import numpy as np
    from miopenkernels.backends import null
    from miopenkernels.driver import parse_driver_line
    from miopenkernels.solvers import reference
    from miopenkernels.target import Target

    p = parse_driver_line("conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1")[0]
    backend = null.NullBackend(Target.parse("gfx90a-110"))
    ptrs = {}
    for role, shape in (("x", p.in_shape), ("w", p.wei_shape), ("y", p.out_shape)):
        buf = backend.alloc(int(np.prod(shape)) * 4)
        ptrs[role] = buf.ptr
    caplog.set_level(logging.WARNING)
    assert reference.compute_reference(backend, p, ptrs)
    assert not caplog.records  # 2 * 4 * 36 * 36 multiply-adds: nothing to say
    monkeypatch.setattr(reference, "SLOW_REFERENCE_MACS", 1000)
    for _ in range(2):
        assert reference.compute_reference(backend, p, ptrs)
    slow = [r for r in caplog.records if "multiply-adds" in r.getMessage()]
    assert len(slow) == 1 and p.key() in slow[0].getMessage()


def test_build_and_package_tables_show_predicted_databases(tmp_path: Path) -> None:
    from miopenkernels.builder.build import BuildResult, TargetSummary
    from miopenkernels.builder.package import PackageResult
    from miopenkernels.cli.build import _summary_table
    from miopenkernels.cli.package import _lacks
    from miopenkernels.target import Target
    from rich.console import Console

    t = Target.parse("gfx1100-48")
    table = _summary_table(BuildResult([TargetSummary(t, predicted=tmp_path)]))
    console = Console(width=80, record=True)
    console.print(table)
    assert "predicted" in console.export_text()

    staged = tmp_path / "stage"
    manifest = staged / "share" / "miopenkernels" / f"{t.basename}.manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({
        "target": t.to_dict(), "databases": {"predicted": True},
        "files": {f"share/miopen/db/{t.basename}.HIP.fdb.txt": {"sha256": "0" * 64}}}))
    assert "predicted" in _lacks(PackageResult(t, staged, lacks=[]))
    manifest.write_text(json.dumps({"target": t.to_dict(), "databases": {"predicted": False},
                                    "files": {}}))
    assert _lacks(PackageResult(t, staged, lacks=[])) == "-"
