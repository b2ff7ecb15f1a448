"""The command line as a whole, through typer's runner: one vocabulary, flags shown as flags,
--version, help that re-flows, 80-column tables, one error boundary, hints that lead somewhere."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import click
import pytest
from miopenkernels import __version__
from miopenkernels.builder.build import write_kdb
from miopenkernels.cli import app
from miopenkernels.errors import NoDeviceError
from testdata import MIOPEN
from typer.main import get_command
from typer.testing import CliRunner

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOT = get_command(app)


def _commands(group: click.Command = ROOT, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, cmd in getattr(group, "commands", {}).items():
        path = f"{prefix}{name}"
        if getattr(cmd, "commands", None):
            out.update(_commands(cmd, f"{path} "))
        else:
            out[path] = cmd
    return out


COMMANDS = _commands()


def _option(cmd: click.Command, name: str) -> click.Option:
    found = [p for p in cmd.params if p.param_type_name == "option" and name in p.opts]
    assert len(found) == 1, (cmd.name, name)
    return found[0]  # type: ignore[return-value]


def test_version_prints_the_version() -> None:
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout == f"miopenkernels {__version__}\n"


def test_every_command_has_help_with_flags_shown_as_flags() -> None:
    assert len(COMMANDS) >= 14
    for path, _ in COMMANDS.items():
        r = runner.invoke(app, [*path.split(), "--help"], env={"COLUMNS": "80"})
        assert r.exit_code == 0, path
        assert "<bool>" not in r.stdout, path
        assert all(len(line) <= 80 for line in r.stdout.splitlines()), path


def test_help_paragraphs_reflow_instead_of_breaking_mid_sentence() -> None:
    r = runner.invoke(app, ["db", "merge", "--help"], env={"COLUMNS": "80"})
    # The docstring breaks its line after "PerfDb: per"; the help joins the sentence.
    assert "PerfDb: per (problem, solver)" in " ".join(r.stdout.split())
    assert not any(line.rstrip().endswith("PerfDb: per") for line in r.stdout.splitlines())


def test_one_name_and_short_form_per_idea() -> None:
    for path in ("build", "package", "install", "matrix", "tune"):
        opt = _option(COMMANDS[path], "--targets")
        assert "-t" in opt.opts and opt.metavar == "GLOBS", path
    for path in ("build", "package", "tune", "db merge"):
        assert "-o" in _option(COMMANDS[path], "--out").opts, path
    for path in ("build", "package", "tune"):
        opt = _option(COMMANDS[path], "--manifest")
        assert "-m" in opt.opts and opt.multiple, path
    helps = set()
    for path, cmd in COMMANDS.items():
        if any("--json" in getattr(p, "opts", ()) for p in cmd.params):
            opt = _option(cmd, "--json")
            assert opt.is_flag, path
            helps.add(opt.help)
    assert len(helps) == 1  # one shared definition


def test_choices_are_enums_and_a_wrong_one_is_a_usage_error() -> None:
    for path, name in (("package", "--kind"), ("db merge", "--perfdb-format"),
                       ("tune", "--perfdb-format")):
        assert _option(COMMANDS[path], name).type_descriptor.is_choice, path  # type: ignore[attr-defined]
    r = runner.invoke(app, ["package", "--from-build", ".", "--kind", "zip"])
    assert r.exit_code == 2 and "zip" in r.output


def test_a_library_error_becomes_one_error_line_and_its_exit_code(tmp_path: Path) -> None:
    r = runner.invoke(app, ["db", "inspect", str(tmp_path / "missing.db")])
    assert r.exit_code == 5 and r.stdout == ""
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    r = runner.invoke(app, ["kdb", "list", str(tmp_path / "missing.kdb")])
    assert r.exit_code == 5 and r.stderr.startswith("error: ")


def _big_kdb(path: Path, n: int = 200) -> Path:
    rows = [(f"conv_igemm_{i % 7}.hip.o",
             " ".join(f"-DMK_PARAM_{j}={i * j}" for j in range(120)) + " -mcpu=gfx90a",
             b"\x7fELF" + bytes([i % 256]) * (64 + i)) for i in range(n)]
    write_kdb(path, rows)
    return path


def test_kdb_list_fits_80_columns_and_wide_or_json_show_everything(tmp_path: Path) -> None:
    kdb = _big_kdb(tmp_path / "gfx90a6e.kdb")
    r = runner.invoke(app, ["kdb", "list", str(kdb)], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) <= 250 and max(len(x) for x in lines) <= 80
    assert "200 entries" in r.stdout
    wide = runner.invoke(app, ["kdb", "list", str(kdb), "--wide"], env={"COLUMNS": "80"})
    assert "-DMK_PARAM_119=23681 -mcpu=gfx90a" in wide.stdout  # row 199's args, whole
    assert len(wide.stdout.splitlines()) <= 250
    rows = json.loads(runner.invoke(app, ["kdb", "list", str(kdb), "--json"]).stdout)
    assert len(rows) == 200 and rows[0]["kernel_args"].endswith("-mcpu=gfx90a")


def test_db_lookup_keeps_solver_names_whole_at_80_columns() -> None:
    fdb = EXAMPLES / "gfx90a6e.HIP.fdb.txt"
    line = "convfp16 -n 256 -c 64 -H 56 -W 56 -k 256 -y 1 -x 1 -F 1"
    r = runner.invoke(app, ["db", "lookup", str(fdb), line], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    report = json.loads(runner.invoke(app, ["db", "lookup", str(fdb), line, "--json"]).stdout)
    solvers = [s["solver"] for s in report["results"][0]["solutions"]]
    assert "ConvHipImplicitGemmForwardV4R4Xdlops" in solvers
    for name in solvers:
        assert name in r.stdout
    assert max(len(x) for x in r.stdout.splitlines()) <= 80
    wide = runner.invoke(app, ["db", "lookup", str(fdb), line, "--wide"])
    assert "miopenConvolutionFwdAlgoImplicitGEMM" in wide.stdout


def test_examples_are_copies_of_the_shared_test_data() -> None:
    pairs = {"gfx90a6e.HIP.fdb.txt": "fdb_gfx90a6e_HIP_sample.txt",
             "gfx803_36.cd.pdb.txt": "perfdb_legacy_text_gfx803_36_cd_pdb_2019.txt",
             "shards/old/gfx90a68.HIP.fdb.txt": "fdb_mituna_old_gfx90a68_HIP.txt",
             "shards/usr/gfx90a68.HIP.fdb.txt": "fdb_mituna_usr_gfx90a68_HIP.txt",
             "saved-rocminfo.txt": "../rocminfo/gfx90a_mi250x.txt"}
    for ours, theirs in pairs.items():
        assert (EXAMPLES / ours).read_bytes() == (MIOPEN / theirs).read_bytes(), ours


@pytest.mark.parametrize(("line", "flag"), [
    ("conv -n 1 -c 3 -Q 4", "'-Q'"),
    ("conv -n 99999999999999999999 -c 3", "'-n'"),
    ("conv -n 2147483648", "'-n'"),
    ("conv -c 3 -i 5000000000", "'-i'"),
    ("conv -n 2 -n 3", "'-n'"),
    ("conv -n 2 --batchsize 3", "'--batchsize'"),
    ("conv -n ١٢", "'-n'"),
    ("conv -n 1_0", "'-n'"),
    ("conv -n 1 -Z 4", "'-Z'"),
])
def test_driver_lines_miopendriver_refuses_exit_3_naming_the_flag(line: str, flag: str) -> None:
    r = runner.invoke(app, ["problem", line])
    assert r.exit_code == 3, r.output
    assert r.stderr.startswith("error: ") and flag in r.stderr


def test_the_same_flag_twice_with_the_same_value_is_fine() -> None:
    r = runner.invoke(app, ["problem", "conv -n 2 --batchsize 2 -n 02 -c 3", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["n"] == 2


def _no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from miopenkernels.backends import cuda, hip

    monkeypatch.setattr(cuda, "device_count", lambda: 0)
    monkeypatch.setattr(hip, "device_count", lambda: 0)


def test_the_no_gpu_hint_of_handle_names_a_call_that_works(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    from miopenkernels.handle import Handle

    _no_gpu(monkeypatch)
    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(tmp_path / "none"))
    with pytest.raises(NoDeviceError) as info:
        Handle()
    message = str(info.value)
    hinted = message.split("Handle(", 1)[1].split(")", 1)[0]
    assert hinted == 'target="gfx90a-110"'
    handle = eval(f"Handle({hinted})")  # noqa: S307 - the hint, run as written
    assert handle.backend.name == "null" and handle.target.name == "gfx90a-110"
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "110")
    assert Handle().backend.name == "null"  # the hint's other half


def test_tune_without_a_gpu_says_where_to_run_it(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    _no_gpu(monkeypatch)
    for extra in ([], ["--targets", "sm90-132"]):
        r = runner.invoke(app, ["tune", "--out", str(tmp_path / "s"), *extra])
        assert r.exit_code == 6, r.output
        assert "run 'miopenkernels tune' on a machine with the GPU" in r.stderr
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "sm90")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "132")
    r = runner.invoke(app, ["tune", "--out", str(tmp_path / "s")])
    assert r.exit_code == 6 and "no sm90-132 GPU was found" in r.stderr
    assert not (tmp_path / "s").exists()
    r = runner.invoke(app, ["tune", "--out", str(tmp_path / "s"), "--fp32-math", "half"])
    assert r.exit_code not in (0, 1, 6) and "--fp32-math 'half' is not IEEE, TF32 or BOTH" \
        in r.stderr, r.output


def test_null_backend_run_says_once_when_it_cannot_compute(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from miopenkernels.backends import NullBackend
    from miopenkernels.driver import parse_driver_line
    from miopenkernels.solvers.reference import null_result
    from miopenkernels.target import Target

    backend = NullBackend(Target("gfx90a", 110))
    problem = parse_driver_line("convint8 -n 1 -c 4 -H 4 -W 4 -k 4 -y 1 -x 1 -F 1")[0]
    with pytest.warns(UserWarning, match="left as it was"):
        null_result(backend, problem, {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        null_result(backend, problem, {})  # said once


def test_install_targets_need_no_gpu_and_force_only_against_another_arch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_install_choose import _simple_index

    simple = _simple_index(tmp_path)
    cpu_only = tmp_path / "rocminfo.txt"
    cpu_only.write_text((EXAMPLES / "saved-rocminfo.txt").read_text()
                        .split("*******\nAgent 5")[0] + "*** Done ***\n")
    base = ["install", "--index-url", str(simple), "--prefix", str(tmp_path / "p"),
            "--dry-run", "--json"]
    r = runner.invoke(app, [*base, "--rocminfo-file", str(cpu_only)])
    assert r.exit_code == 6  # no GPU and no --targets: nothing to go by but the hint
    assert "--targets gfx90a-110" in r.stderr
    r = runner.invoke(app, [*base, "--rocminfo-file", str(cpu_only), "--targets", "gfx906-60"])
    assert r.exit_code == 0, r.output
    (item,) = json.loads(r.stdout)["packages"]
    assert item["package"] == "miopenkernels-gfx906-60" and item["status"] == "would install"
    # A GPU of another arch is found: --force is what the error names, and it works.
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "104")
    r = runner.invoke(app, [*base, "--targets", "gfx906-60"])
    assert r.exit_code == 4 and "add --force" in r.stderr
    r = runner.invoke(app, [*base, "--targets", "gfx906-60", "--force"])
    assert r.exit_code == 0, r.output
    assert shutil.which("bash")  # (the README test runs the tour through bash)
