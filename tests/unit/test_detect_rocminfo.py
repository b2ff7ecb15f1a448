"""rocminfo output -> GPU devices, on the real outputs in testdata/rocminfo/."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from miopenkernels.detect import rocminfo as rocminfo_mod
from miopenkernels.detect.device import SourceUnavailable, hip_cu_count
from miopenkernels.detect.rocminfo import (
    find_rocminfo,
    parse_rocminfo,
    read_rocminfo_file,
    run_rocminfo,
)
from miopenkernels.errors import DetectError, NoDeviceError
from testdata import MI210, MI250X, RX6900XT

_AGENT_SPLIT = re.compile(r"^\*+\n(?=Agent \d+\n\*+\n)", re.M)


def blocks(path: Path) -> tuple[str, list[str]]:
    """(header, agent blocks) of a real rocminfo file, each block starting 'Agent <n>'."""
    text = path.read_text()
    header, *agents = _AGENT_SPLIT.split(text)
    agents[-1] = agents[-1].split("*** Done ***")[0]
    return header, agents


def gpu_block(path: Path) -> str:
    return next(b for b in blocks(path)[1] if re.search(r"Device Type:\s+GPU", b))


def compose(header: str, agents: list[str]) -> str:
    """A rocminfo output with these agent blocks renumbered 1..n."""
    out = [header]
    for number, block in enumerate(agents, 1):
        out.append("*******\n" + re.sub(r"^Agent \d+", f"Agent {number}", block, count=1))
    return "".join(out) + "*** Done ***\n"


# ----------------------------------------------------------------------------- real files
def test_rx6900xt_is_gfx1030_with_40_hip_cus():
    (dev,) = read_rocminfo_file(RX6900XT)
    assert (dev.vendor, dev.arch, dev.target_id) == ("amd", "gfx1030", "gfx1030")
    assert dev.name == "AMD Radeon RX 6900 XT"
    assert (dev.rocminfo_cu, dev.cu, dev.index) == (80, 40, 0)
    assert dev.target.basename == "gfx1030_40"
    assert dev.target.package == "miopenkernels-gfx1030-40"


def test_mi250x_gcd_is_gfx90a_with_110_cus_despite_ansi_codes():
    # The paste carries colour codes in caret notation; the ESC byte form is checked below.
    assert "^[[37m" in MI250X.read_text()
    (dev,) = read_rocminfo_file(MI250X)
    assert dev.name == "AMD Instinct MI250X"
    assert (dev.arch, dev.target_id) == ("gfx90a", "gfx90a:sramecc+:xnack-")
    assert (dev.rocminfo_cu, dev.cu) == (110, 110)
    assert dev.target.basename == "gfx90a6e"
    assert dev.target.package == "miopenkernels-gfx90a-110"
    assert dev.target.features == ("sramecc+", "xnack-")


def test_mi210_partial_paste_with_scrollback_counters():
    assert "[391/1815]" in MI210.read_text()
    (dev,) = read_rocminfo_file(MI210)
    assert (dev.name, dev.arch, dev.cu) == ("AMD Instinct MI210", "gfx90a", 104)
    assert dev.target_id == "gfx90a:sramecc+:xnack-"
    assert dev.target.basename == "gfx90a68"


def test_cpu_agents_are_skipped_though_they_have_compute_units():
    header, agents = blocks(MI250X)
    cpus = [b for b in agents if re.search(r"Device Type:\s+CPU", b)]
    assert len(cpus) == 4 and all("Compute Unit:            32" in b for b in cpus)
    assert parse_rocminfo(compose(header, cpus)) == []


def test_several_gpus_of_mixed_archs_in_hip_order():
    header, agents = blocks(MI250X)
    text = compose(header, [agents[0], agents[1], gpu_block(MI250X), gpu_block(RX6900XT),
                            gpu_block(MI210), gpu_block(MI250X)])
    devices = parse_rocminfo(text)
    assert [(d.index, d.arch, d.cu, d.target.basename) for d in devices] == [
        (0, "gfx90a", 110, "gfx90a6e"),
        (1, "gfx1030", 40, "gfx1030_40"),
        (2, "gfx90a", 104, "gfx90a68"),
        (3, "gfx90a", 110, "gfx90a6e"),
    ]
    assert devices[1].rocminfo_cu == 80


# ----------------------------------------------------------------------------- quirks, errors
def test_generic_isa_listed_first_does_not_become_the_target_id():
    block = gpu_block(MI250X).replace(
        "    ISA 1\n",
        "    ISA 1\n      Name:                    amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:"
        "xnack-\n    ISA 2\n",
    )
    header, _ = blocks(MI250X)
    (dev,) = parse_rocminfo(compose(header, [block]))
    assert dev.target_id == "gfx90a:sramecc+:xnack-"


def test_gpu_without_isa_lines_gets_the_bare_arch():
    header, _ = blocks(RX6900XT)
    block = gpu_block(RX6900XT).split("  ISA Info:")[0]
    (dev,) = parse_rocminfo(compose(header, [block]))
    assert (dev.target_id, dev.cu) == ("gfx1030", 40)


def test_gpu_without_compute_unit_is_a_detect_error():
    header, _ = blocks(MI250X)
    block = re.sub(r"\n  Compute Unit:.*", "", gpu_block(MI250X))
    with pytest.raises(DetectError, match="Compute Unit"):
        parse_rocminfo(compose(header, [block]), source="saved.txt")


def test_gpu_whose_name_is_not_an_arch_is_a_detect_error():
    header, _ = blocks(RX6900XT)
    block = gpu_block(RX6900XT).replace("gfx1030\n", "navi21\n", 1)
    with pytest.raises(DetectError, match=r"agent 1 .*'navi21' is not a gfx arch"):
        parse_rocminfo(compose(header, [block]))


def test_text_that_is_not_rocminfo_output_is_a_detect_error():
    with pytest.raises(DetectError, match="not rocminfo output"):
        parse_rocminfo("Segmentation fault (core dumped)\n", source="out.txt")


def test_colour_codes_as_bytes_or_caret_notation_are_removed():
    header, _ = blocks(MI250X)
    block = gpu_block(MI250X)
    for esc in ("\x1b", "^["):
        coloured = block.replace("Compute Unit:            110",
                                 f"{esc}[1;32mCompute Unit:            110{esc}[0m")
        (dev,) = parse_rocminfo(compose(header, [coloured]))
        assert dev.cu == 110


def test_rock_module_not_loaded_means_no_device():
    # rocminfo's own words on a machine without the amdgpu driver, colour codes included.
    text = "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n"
    with pytest.raises(NoDeviceError, match="ROCk module is NOT loaded"):
        parse_rocminfo(text)


def test_missing_file_is_a_detect_error(tmp_path):
    with pytest.raises(DetectError, match="cannot read rocminfo output"):
        read_rocminfo_file(tmp_path / "absent.txt")


@pytest.mark.parametrize(
    ("arch", "rocminfo_cu", "hip_cu"),
    [("gfx1030", 80, 40), ("gfx1100", 96, 48), ("gfx1201", 64, 32), ("gfx1010", 40, 20),
     ("gfx90a", 110, 110), ("gfx942", 304, 304), ("gfx906", 60, 60)],
)
def test_hip_cu_count_halves_only_on_rdna(arch, rocminfo_cu, hip_cu):
    assert hip_cu_count(arch, rocminfo_cu) == hip_cu


# ----------------------------------------------------------------------------- running rocminfo
def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_run_rocminfo_returns_stdout_of_the_tool(tmp_path):
    exe = _script(tmp_path / "rocminfo", f"cat '{RX6900XT}'\n")
    (dev,) = parse_rocminfo(run_rocminfo(str(exe)))
    assert dev.target.basename == "gfx1030_40"


def test_run_rocminfo_failure_says_why(tmp_path):
    exe = _script(
        tmp_path / "rocminfo",
        "printf '\\033[31mROCk module is NOT loaded, possibly no GPU devices\\033[0m\\n'\n"
        "echo 'libkmod: ERROR could not open /proc/modules' >&2\nexit 1\n",
    )
    with pytest.raises(SourceUnavailable, match="exit status 1: ROCk module is NOT loaded"):
        run_rocminfo(str(exe))


def test_run_rocminfo_that_hangs_times_out(tmp_path):
    exe = _script(tmp_path / "rocminfo", "exec sleep 5\n")
    with pytest.raises(SourceUnavailable, match="did not finish in 0.3 s"):
        run_rocminfo(str(exe), timeout=0.3)


def test_run_rocminfo_absent(monkeypatch):
    monkeypatch.setattr(rocminfo_mod, "find_rocminfo", lambda: None)
    with pytest.raises(SourceUnavailable, match="rocminfo: not found"):
        run_rocminfo()


def test_find_rocminfo_on_path_then_under_rocm_path(tmp_path, monkeypatch):
    (tmp_path / "bin1").mkdir()
    on_path = _script(tmp_path / "bin1" / "rocminfo", "exit 0\n")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_rocminfo() == str(on_path)
    rocm = tmp_path / "rocm"
    (rocm / "bin").mkdir(parents=True)
    under_rocm = _script(rocm / "bin" / "rocminfo", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    assert find_rocminfo() == str(under_rocm)


def test_long_runs_of_spaces_are_not_rocminfo_output(tmp_path) -> None:  # noqa: ANN001
    from miopenkernels.detect.rocminfo import MAX_ROCMINFO_BYTES, read_rocminfo_file
    from miopenkernels.errors import DetectError

    # 256 KiB of spaces on one line, and a file of long field-like lines just under the limit.
    for i, text in enumerate([" " * (256 << 10),
                              "Agent 1\n" + ("x" + " " * 1000 + ":\n") * (MAX_ROCMINFO_BYTES
                                                                        // 1100)]):
        path = tmp_path / f"r{i}.txt"
        path.write_text(text)
        # Quadratic backtracking took minutes here; bench/hostile_input.py times it now.
        with pytest.raises(DetectError):
            read_rocminfo_file(path)


def test_an_endless_or_huge_file_is_refused_unread(tmp_path) -> None:  # noqa: ANN001
    from miopenkernels.detect.rocminfo import MAX_ROCMINFO_BYTES, read_rocminfo_file
    from miopenkernels.errors import DetectError

    with pytest.raises(DetectError, match="not rocminfo output"):
        read_rocminfo_file("/dev/zero")
    big = tmp_path / "big.txt"
    big.write_bytes(b"Agent 1\n" * (MAX_ROCMINFO_BYTES // 8 + 1))
    with pytest.raises(DetectError, match="MiB"):
        read_rocminfo_file(big)
