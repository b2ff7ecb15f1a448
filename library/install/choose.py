"""Which package serves which GPU: the exact (arch, CU), else the nearest CU count of the same
arch (with a warning: MIOpen looks its databases up by the exact basename), else an error that
lists what the index offers. Of one target's packages, one with kernels comes before a
databases-only one (no KernelDb: every kernel would be compiled on first use), then the newest
version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import PackageNotFoundError
from ..target import Target
from ..versions import same_version, version_key
from .sources import Available

__all__ = ["Choice", "choose_packages"]


@dataclass
class Choice:
    """The package chosen for one distinct (arch, CU) and the GPUs it serves."""

    wanted: Target
    available: Available
    devices: list[str] = field(default_factory=list)
    warning: str | None = None
    why: str | None = None  # why this package of its target, when there was a choice to say

    @property
    def exact(self) -> bool:
        return self.available.target == self.wanted

    def to_dict(self) -> dict[str, Any]:
        return {"wanted": self.wanted.name, "devices": self.devices, "exact": self.exact,
                "warning": self.warning, "why": self.why, **self.available.to_dict()}


def _rank(a: Available) -> tuple[bool, Any]:
    return (not a.databases_only, version_key(a.version))


def _pick(cands: list[Available], version: str | None) -> tuple[Available | None, str | None]:
    """The package of one target to install, and why when a databases-only one was passed
    over or is all there is."""
    if version is not None:
        cands = [a for a in cands if same_version(a.version, version)]
    if not cands:
        return None, None
    best = max(cands, key=_rank)
    name = f"{best.package} {best.version}"
    if best.databases_only:
        return best, (f"{name} is databases-only (build {best.build}): no package with kernels "
                      "is offered for it, so its kernels are compiled on first use")
    passed = sorted({f"{a.version} ({a.build})" for a in cands if a.databases_only},
                    key=lambda s: version_key(s.split()[0]))
    if passed:
        return best, (f"{name} has kernels; preferred to the databases-only "
                      f"{', '.join(passed)} of the same target, which would compile every "
                      "kernel on first use")
    return best, None


def choose_packages(
    wanted: dict[Target, list[str]], available: list[Available], version: str | None = None,
    where: str = "the index",
) -> list[Choice]:
    """One Choice per wanted target (`wanted` maps a target to the names of its GPUs)."""
    choices = []
    for target, devices in wanted.items():
        key = Target(target.arch, target.cu)  # packages do not carry target features
        exact, why = _pick([a for a in available if a.target == key], version)
        if exact is not None:
            choices.append(Choice(key, exact, list(devices), why=why))
            continue
        same_arch = [a for a in available if a.target.arch == key.arch
                     and (version is None or same_version(a.version, version))]
        if same_arch:
            best_cu = min({a.target.cu for a in same_arch},
                          key=lambda cu: (abs(cu - key.cu), -cu))
            pick, why = _pick([a for a in same_arch if a.target.cu == best_cu], version)
            assert pick is not None
            warning = (f"no package for {key.name}; using {pick.target.name}, the nearest CU "
                       f"count of {key.arch}: its files are named {pick.target.basename}, "
                       f"MIOpen looks for {key.basename}")
            choices.append(Choice(key, pick, list(devices), warning, why))
            continue
        offered = sorted({f"{a.target.name} {a.version}"
                          + (" (databases-only)" if a.databases_only else "")
                          for a in available})
        listing = ", ".join(offered) if offered else "no miopenkernels package at all"
        ver = f" version {version}" if version else ""
        raise PackageNotFoundError(
            f"no package{ver} for {key.name} ({', '.join(devices) or 'requested'}) in "
            f"{where}; it offers: {listing}"
        )
    return choices
