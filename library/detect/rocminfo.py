"""GPU agents from `rocminfo` output, read from a file or by running the tool.

rocminfo prints one block per HSA agent: CPUs first, then GPUs in HIP's device order. A GPU block
has `Name:` (the arch), `Marketing Name:`, `Device Type: GPU`, `Compute Unit:` and, under
`ISA Info`, the full target ID (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`). Text pasted from
a terminal carries colour escapes (raw or as `^[[37m`) and scrollback counters (`[391/1815]`);
both are removed first.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .._numbers import parse_int
from .._proc import run_tool
from ..errors import DetectError, NoDeviceError, TargetError
from ..target import CU_RANGE, Target
from .device import Device, SourceUnavailable, hip_cu_count

__all__ = ["parse_rocminfo", "read_rocminfo_file", "run_rocminfo", "find_rocminfo"]

# Colour codes, as bytes or as the caret notation a copied terminal shows ("^[[37m").
_ANSI_RE = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")
# Applied to stripped lines only, and with no two adjacent unbounded repeats that can match
# the same characters: each runs in time linear in the line.
_SCROLLBACK_RE = re.compile(r"\[\d+/\d+\]$")
_AGENT_RE = re.compile(r"Agent\s+([0-9]{1,9})")
_ARCH_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
_ISA_PREFIX = "amdgcn-amd-amdhsa--"
_NOT_LOADED = "ROCk module is NOT loaded"
DEFAULT_TIMEOUT_S = 30.0
# rocminfo of an 8-GPU node is under 100 KiB; a file far bigger is not rocminfo output.
MAX_ROCMINFO_BYTES = 1 << 20
# The longest line rocminfo prints is under 200 characters; longer ones carry nothing it says.
_MAX_LINE = 1024


@dataclass
class _Agent:
    number: int
    fields: dict[str, str] = field(default_factory=dict)  # first occurrence of each key
    isas: list[str] = field(default_factory=list)


def _clean(text: str) -> list[str]:
    """Lines without colour codes, scrollback counters and surrounding blanks."""
    lines = []
    for raw in text.splitlines():
        if len(raw) > _MAX_LINE:
            lines.append("")
            continue
        line = _ANSI_RE.sub("", raw).strip()
        m = _SCROLLBACK_RE.search(line)
        if m:
            line = line[:m.start()].rstrip()
        lines.append(line)
    return lines


def _agents(lines: list[str]) -> list[_Agent]:
    agents: list[_Agent] = []
    for line in lines:
        m = _AGENT_RE.fullmatch(line)
        if m:
            agents.append(_Agent(int(m.group(1))))
            continue
        if not agents:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            continue
        # The agent's own `Name:` comes first; ISA names come later in the same block.
        agents[-1].fields.setdefault(key, value)
        if key == "Name" and value.startswith("amdgcn-"):
            agents[-1].isas.append(value)
    return agents


def _target_id(agent: _Agent, arch: str) -> str:
    """The ISA of the agent's own arch; newer ROCm also lists generic ISAs (gfx9-4-generic)."""
    for isa in agent.isas:
        tid = isa[len(_ISA_PREFIX):] if isa.startswith(_ISA_PREFIX) else isa
        if tid.split(":", 1)[0] == arch:
            return tid
    return arch


def _gpu(agent: _Agent, index: int, source: str) -> Device:
    where = f"{source}: agent {agent.number}"
    arch = agent.fields.get("Name", "").lower()
    if not _ARCH_RE.match(arch):
        raise DetectError(f"{where} is a GPU but its Name {arch!r} is not a gfx arch")
    cu_text = agent.fields.get("Compute Unit", "")
    rocminfo_cu = parse_int(cu_text, f"{where} ({arch}) 'Compute Unit'", CU_RANGE[0],
                            CU_RANGE[1], DetectError)
    target_id = _target_id(agent, arch)
    cu = hip_cu_count(arch, rocminfo_cu)
    try:
        target = Target(target_id, cu)
    except TargetError as exc:
        raise DetectError(f"{where}: {exc}") from None
    name = agent.fields.get("Marketing Name") or arch
    return Device("amd", name, target.arch, target.target_id, cu, rocminfo_cu, index)


def parse_rocminfo(text: str, source: str = "rocminfo") -> list[Device]:
    """Every GPU agent of rocminfo output, in HIP order; CPU agents are skipped.

    Returns [] when the output lists agents but none is a GPU. Raises `NoDeviceError` when the
    output is rocminfo's "ROCk module is NOT loaded", `DetectError` when it is not rocminfo
    output or a GPU block lacks its arch or CU count.
    """
    lines = _clean(text)
    if any(_NOT_LOADED in line for line in lines):
        raise NoDeviceError(f"{source}: {_NOT_LOADED} (the amdgpu driver is not running)")
    agents = _agents(lines)
    if not agents:
        raise DetectError(
            f"{source} is not rocminfo output: it has no 'Agent <n>' blocks"
        )
    devices: list[Device] = []
    for agent in agents:
        kind = agent.fields.get("Device Type", "").upper()
        if not kind:
            raise DetectError(f"{source}: agent {agent.number} has no 'Device Type'")
        if kind == "GPU":
            devices.append(_gpu(agent, len(devices), source))
    return devices


def read_rocminfo_file(path: str | os.PathLike[str]) -> list[Device]:
    """`parse_rocminfo` of a saved rocminfo output; an unreadable file is a `DetectError`."""
    file = Path(path)
    try:
        with file.open("rb") as fh:
            data = fh.read(MAX_ROCMINFO_BYTES + 1)
    except OSError as exc:
        raise DetectError(f"cannot read rocminfo output {file}: {exc.strerror or exc}") from None
    if len(data) > MAX_ROCMINFO_BYTES:
        raise DetectError(f"{file} is over {MAX_ROCMINFO_BYTES >> 20} MiB, so not rocminfo "
                          "output; give the file that `rocminfo > file` wrote")
    return parse_rocminfo(data.decode("utf-8", errors="replace"), source=str(file))


def find_rocminfo() -> str | None:
    """The rocminfo executable: on PATH, else under $ROCM_PATH or /opt/rocm."""
    found = shutil.which("rocminfo")
    if found:
        return found
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root and os.access(Path(root) / "bin" / "rocminfo", os.X_OK):
            return str(Path(root) / "bin" / "rocminfo")
    return None


def run_rocminfo(exe: str | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """rocminfo's stdout. `SourceUnavailable` when it is absent, fails or hangs."""
    exe = exe or find_rocminfo()
    if exe is None:
        raise SourceUnavailable("rocminfo: not found on PATH, $ROCM_PATH/bin or /opt/rocm/bin")
    proc = run_tool([exe], what="rocminfo", error=SourceUnavailable, timeout=timeout,
                    check=False)
    if proc.returncode != 0:
        # rocminfo fails when HSA cannot start: no driver or no GPU. Its first line says why.
        said = [ln.strip() for ln in _clean(proc.stdout + "\n" + proc.stderr) if ln.strip()]
        why = said[0] if said else "no output"
        raise SourceUnavailable(f"rocminfo: exit status {proc.returncode}: {why}")
    return proc.stdout
