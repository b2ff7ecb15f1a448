"""detect_devices (sources in order, overrides, errors) and the `detect` command."""

from __future__ import annotations

import json
import re

import pytest
from miopenkernels.cli import app
from miopenkernels.detect import Device, detect_devices, kfd, nvidia
from miopenkernels.detect import rocminfo as rocminfo_mod
from miopenkernels.detect.device import SourceUnavailable
from miopenkernels.errors import (
    DetectError,
    MIOpenKernelsError,
    NoDeviceError,
    TargetError,
)
from testdata import MI210, MI250X, RX6900XT
from typer.testing import CliRunner

JSON_KEYS = ["vendor", "name", "arch", "target_id", "cu", "basename", "package"]


def unavailable(why: str):
    def source(*args, **kwargs):
        raise SourceUnavailable(why)

    return source


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    monkeypatch.delenv("MIOPEN_DEVICE_ARCH", raising=False)
    monkeypatch.delenv("MIOPEN_DEVICE_CU", raising=False)


@pytest.fixture
def machine(monkeypatch):
    """A machine with no GPU source at all; tests switch sources on one by one."""
    monkeypatch.setattr(rocminfo_mod, "run_rocminfo", unavailable("rocminfo: not found"))
    monkeypatch.setattr(kfd, "read_kfd_topology",
                        unavailable("KFD topology: /sys/class/kfd/kfd/topology not present"))
    monkeypatch.setattr(nvidia, "detect_nvidia", unavailable("NVML: nvidia-ml-py missing"))
    return monkeypatch


def cpu_only_text() -> str:
    text = MI250X.read_text()
    return text[: text.index("Agent 5")].rstrip("*\n") + "\n*** Done ***\n"


# ----------------------------------------------------------------------------- detect_devices
def test_rocminfo_file_is_the_only_source_read(machine):
    machine.setattr(nvidia, "detect_nvidia", lambda: pytest.fail("NVIDIA probed"))
    (dev,) = detect_devices(RX6900XT)
    assert (dev.arch, dev.cu, dev.target.basename) == ("gfx1030", 40, "gfx1030_40")


def test_running_rocminfo_comes_first(machine):
    machine.setattr(rocminfo_mod, "run_rocminfo", lambda: MI250X.read_text())
    machine.setattr(kfd, "read_kfd_topology", lambda root: pytest.fail("KFD read"))
    (dev,) = detect_devices()
    assert dev.target_id == "gfx90a:sramecc+:xnack-"


def test_kfd_topology_answers_when_rocminfo_cannot(machine, tmp_path):
    seen = []
    gpu = Device("amd", "navi21", "gfx1030", "gfx1030", 40, 80, 0)
    machine.setattr(kfd, "read_kfd_topology", lambda root: seen.append(root) or [gpu])
    assert detect_devices(sysfs_root=tmp_path) == [gpu]
    assert seen == [tmp_path]


def test_unreadable_rocminfo_output_is_a_detect_error_when_kfd_cannot_answer(machine):
    machine.setattr(rocminfo_mod, "run_rocminfo", lambda: "garbage\n")
    with pytest.raises(DetectError, match="not rocminfo output"):
        detect_devices()


def test_unreadable_rocminfo_output_is_forgiven_when_kfd_answers(machine):
    gpu = Device("amd", "aldebaran", "gfx90a", "gfx90a:sramecc+", 110, 110, 0)
    machine.setattr(rocminfo_mod, "run_rocminfo", lambda: "garbage\n")
    machine.setattr(kfd, "read_kfd_topology", lambda root: [gpu])
    assert detect_devices() == [gpu]


def test_amd_and_nvidia_gpus_are_both_listed(machine):
    h100 = Device("nvidia", "NVIDIA H100 80GB HBM3", "sm90", "sm90", 132, None, 0)
    machine.setattr(rocminfo_mod, "run_rocminfo", lambda: RX6900XT.read_text())
    machine.setattr(nvidia, "detect_nvidia", lambda: [h100])
    assert [d.target.name for d in detect_devices()] == ["gfx1030-40", "sm90-132"]


def test_no_gpu_says_what_was_tried_and_how_to_override(machine):
    with pytest.raises(NoDeviceError) as info:
        detect_devices()
    text = str(info.value)
    assert "\n" not in text
    for part in ("rocminfo: not found", "KFD topology", "NVML", "MIOPEN_DEVICE_ARCH",
                 "MIOPEN_DEVICE_CU", "--rocminfo-file"):
        assert part in text
    assert info.value.exit_code == 6


def test_rocminfo_file_with_cpu_agents_only_is_no_device(tmp_path):
    file = tmp_path / "rocminfo.txt"
    file.write_text(cpu_only_text())
    with pytest.raises(NoDeviceError, match="no GPU agent"):
        detect_devices(file)


# ----------------------------------------------------------------------------- overrides
def test_cu_override_replaces_the_detected_count(monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "36")
    (dev,) = detect_devices(RX6900XT)
    assert (dev.arch, dev.cu, dev.name) == ("gfx1030", 36, "AMD Radeon RX 6900 XT")
    assert dev.target.basename == "gfx1030_36"


def test_arch_override_replaces_the_whole_target_id(monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a:sramecc-:xnack+")
    (dev,) = detect_devices(MI250X)
    assert (dev.arch, dev.target_id, dev.cu) == ("gfx90a", "gfx90a:sramecc-:xnack+", 110)


def test_both_overrides_rename_every_detected_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx942")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "304")
    both = tmp_path / "two.txt"
    both.write_text(MI210.read_text() + "\n" + MI250X.read_text()[MI250X.read_text().index(
        "Agent 5") - 8:].replace("Agent 5", "Agent 3"))
    devices = detect_devices(both)
    assert len(devices) == 2
    assert {(d.arch, d.cu, d.target.basename) for d in devices} == {("gfx942", 304, "gfx942130")}
    assert [d.name for d in devices] == ["AMD Instinct MI210", "AMD Instinct MI250X"]


def test_both_overrides_define_a_device_where_there_is_none(machine):
    machine.setenv("MIOPEN_DEVICE_ARCH", "gfx1100")
    machine.setenv("MIOPEN_DEVICE_CU", "48")
    (dev,) = detect_devices()
    assert (dev.vendor, dev.arch, dev.cu, dev.rocminfo_cu) == ("amd", "gfx1100", 48, None)
    assert dev.target.package == "miopenkernels-gfx1100-48"


def test_nvidia_virtual_device(machine):
    machine.setenv("MIOPEN_DEVICE_ARCH", "sm90")
    machine.setenv("MIOPEN_DEVICE_CU", "132")
    (dev,) = detect_devices()
    assert (dev.vendor, dev.target.basename) == ("nvidia", "sm9084")


@pytest.mark.parametrize(("var", "value", "missing"),
                         [("MIOPEN_DEVICE_ARCH", "gfx90a", "MIOPEN_DEVICE_CU"),
                          ("MIOPEN_DEVICE_CU", "104", "MIOPEN_DEVICE_ARCH")])
def test_one_override_alone_cannot_define_a_device(machine, var, value, missing):
    machine.setenv(var, value)
    with pytest.raises(NoDeviceError, match=f"{var} alone .* set {missing} too"):
        detect_devices()


def test_bad_override_values_are_errors(monkeypatch):
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "many")
    with pytest.raises(MIOpenKernelsError, match="MIOPEN_DEVICE_CU must be an integer"):
        detect_devices(RX6900XT)
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "40")
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "navi21")
    with pytest.raises(TargetError, match="navi21"):
        detect_devices(RX6900XT)


# ----------------------------------------------------------------------------- CLI
runner = CliRunner()


def test_cli_json_has_exactly_the_agreed_keys():
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(RX6900XT), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert list(row) == JSON_KEYS
    assert row == {"vendor": "amd", "name": "AMD Radeon RX 6900 XT", "arch": "gfx1030",
                   "target_id": "gfx1030", "cu": 40, "basename": "gfx1030_40",
                   "package": "miopenkernels-gfx1030-40"}


def test_cli_json_lists_every_gpu(tmp_path):
    text = MI250X.read_text()
    gpu = text[text.index("Agent 5") - 8:].replace("*** Done ***", "")
    file = tmp_path / "rocminfo.txt"
    file.write_text(text.replace("*** Done ***", "") + gpu.replace("Agent 5", "Agent 6")
                    + "*** Done ***\n")
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(file), "--json"])
    assert result.exit_code == 0, result.output
    assert [r["basename"] for r in json.loads(result.stdout)] == ["gfx90a6e", "gfx90a6e"]


def test_cli_table_shows_target_id_cus_basename_and_package():
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(MI250X)])
    assert result.exit_code == 0, result.output
    for text in ("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", "110", "gfx90a6e",
                 "miopenkernels-gfx90a-110"):
        assert text in result.stdout


def test_cli_table_explains_halved_rdna_cus():
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(RX6900XT)])
    assert result.exit_code == 0, result.output
    assert re.search(r"CUs\s+40 \(as HIP reports it; rocminfo: 80", result.stdout)
    assert "miopenkernels-gfx1030-40" in result.stdout


@pytest.mark.parametrize(("content", "code", "message"), [
    (None, 7, "cannot read rocminfo output"),
    ("not rocminfo at all\n", 7, "not rocminfo output"),
    ("ROCk module is NOT loaded, possibly no GPU devices\n", 6, "ROCk module is NOT loaded"),
    ("cpu-only", 6, "no GPU found"),
])
def test_cli_failures_are_one_line_with_the_error_code(tmp_path, content, code, message):
    file = tmp_path / "rocminfo.txt"
    if content is not None:
        file.write_text(cpu_only_text() if content == "cpu-only" else content)
    result = runner.invoke(app, ["detect", "--rocminfo-file", str(file), "--json"])
    assert result.exit_code == code
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_cli_without_gpu_exits_6(machine):
    result = runner.invoke(app, ["detect"])
    assert result.exit_code == 6
    assert "MIOPEN_DEVICE_ARCH" in result.stderr


def test_cli_with_overrides_and_no_gpu(machine):
    machine.setenv("MIOPEN_DEVICE_ARCH", "gfx1201")
    machine.setenv("MIOPEN_DEVICE_CU", "32")
    result = runner.invoke(app, ["detect", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["arch"], row["cu"], row["package"]) == ("gfx1201", 32, "miopenkernels-gfx1201-32")
