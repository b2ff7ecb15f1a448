"""MIOpen's environment variables and database locations, read in one place.

Precedence for every setting: an explicit argument, then the environment variable MIOpen uses,
then MIOpen's default.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from . import __version__
from ._fsutil import package_dir
from ._numbers import parse_int
from ._record import dataclass
from .errors import DbError, MIOpenKernelsError, TargetError
from .problem import FINDDB_TF32_SUFFIX

__all__ = [
    "FindMode",
    "FindEnforce",
    "MathMode",
    "FINDDB_TF32_SUFFIX",
    "fp32_math",
    "triton_solvers_enabled",
    "triton_importable",
    "Paths",
    "package_dir",
    "system_db_dirs",
    "user_db_dir",
    "kernel_cache_dir",
    "cache_disabled",
    "find_mode",
    "device_overrides",
    "MIOPEN_VERSION_TAG",
]

# Version tag of user db file names (`<base>.HIP.<M>_<m>_<p>_<tweak>.ufdb.txt`) and the user
# PerfDb schema of `<base>_1.1.0.udb`.
MIOPEN_VERSION_TAG = "3_4_0_"
USER_PERFDB_SCHEMA = "1.1.0"


class FindMode(enum.IntEnum):
    """MIOPEN_FIND_MODE: names and numbers as MIOpen accepts them."""

    NORMAL = 1
    FAST = 2
    HYBRID = 3
    DYNAMIC_HYBRID = 5

    @classmethod
    def parse(cls, text: str | int | None) -> FindMode:
        return _parse_enum(cls, "MIOPEN_FIND_MODE", text, cls.DYNAMIC_HYBRID)


class MathMode(enum.IntEnum):
    """MIOPENKERNELS_FP32_MATH: how FP32 convolutions may multiply. IEEE (the default) is
    plain FP32; TF32 also lets tensor-core solvers round inputs to TF32 (as cuDNN's allow_tf32).
    FindDb records made under TF32 carry the key suffix `FINDDB_TF32_SUFFIX` (problem.py);
    TF32 solvers have their own names, so PerfDb rows stay apart too."""

    IEEE = 1
    TF32 = 2

    @classmethod
    def parse(cls, text: str | int | None) -> MathMode:
        return _parse_enum(cls, "MIOPENKERNELS_FP32_MATH", text, cls.IEEE)



class FindEnforce(enum.IntEnum):
    """MIOPEN_FIND_ENFORCE."""

    NONE = 1
    DB_UPDATE = 2
    SEARCH = 3
    SEARCH_DB_UPDATE = 4
    DB_CLEAN = 5

    @classmethod
    def parse(cls, text: str | int | None) -> FindEnforce:
        return _parse_enum(cls, "MIOPEN_FIND_ENFORCE", text, cls.NONE)


_E = TypeVar("_E", bound=enum.IntEnum)


def _parse_enum(cls: type[_E], variable: str, text: str | int | None, default: _E) -> _E:
    """A value as MIOpen accepts it: the name or the number; empty means the default."""
    if text is None or text == "":
        return default
    s = str(text).strip().upper()
    for member in cls:
        if s in (member.name, str(member.value)):
            return member
    names = ", ".join(f"{m.name}/{m.value}" for m in cls)
    raise MIOpenKernelsError(f"{variable}={text!r} is not one of {names}")


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


@contextmanager
def scoped_env(name: str, value: str) -> Iterator[None]:
    """The environment variable `name` set to `value` inside the block, and as it was (set or
    not) after it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _path_limits() -> tuple[int, int]:
    """(longest path, longest name) the file system takes (PATH_MAX, NAME_MAX)."""
    try:
        return os.pathconf("/", "PC_PATH_MAX"), os.pathconf("/", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 4096, 255


def _checked_path(variable: str, text: str) -> Path:
    """A path named by an environment variable, refused with DbError (naming the variable)
    when the system could never open it: over PATH_MAX, a name over NAME_MAX, a NUL byte."""
    longest, longest_name = _path_limits()
    shown = text if len(text) <= 60 else text[:57] + "..."
    why = ("it holds a NUL byte" if "\0" in text else
           f"it is {len(text)} characters, over the system's limit of {longest}"
           if len(os.fsencode(text)) >= longest else
           f"a name in it is over the system's limit of {longest_name} characters"
           if any(len(os.fsencode(part)) > longest_name for part in text.split("/")) else "")
    if why:
        raise DbError(f"{variable}={shown!r} cannot be used: {why}; set it to an existing "
                      "folder")
    return Path(text)


def _home_path(variable: str, default: Path) -> Path:
    """The folder an environment variable names, with `~` expanded to the home folder as
    MIOpen expands it (MIOPEN_USER_DB_PATH, MIOPEN_CUSTOM_CACHE_DIR), checked; else `default`."""
    env = _env(variable)
    if not env:
        return default
    if env == "~" or env.startswith("~/"):
        env = str(Path.home()) + env[1:]
    return _checked_path(variable, env)


def system_db_dirs() -> list[Path]:
    """Where system databases are looked for, first hit wins per file.

    MIOPEN_SYSTEM_DB_PATH alone when set; else `<sys.prefix>/share/miopen/db` (where this
    project's packages install, in a venv or a conda prefix) and `/opt/rocm/share/miopen/db`.
    A path the system could never open is a DbError naming the variable.
    """
    env = _env("MIOPEN_SYSTEM_DB_PATH")
    if env:
        return [_checked_path("MIOPEN_SYSTEM_DB_PATH", p) for p in env.split(os.pathsep) if p]
    dirs = [Path(sys.prefix) / "share" / "miopen" / "db"]
    conda = _env("CONDA_PREFIX")
    if conda and Path(conda) != Path(sys.prefix):
        dirs.append(Path(conda) / "share" / "miopen" / "db")
    dirs.append(Path("/opt/rocm/share/miopen/db"))
    return dirs


def user_db_dir() -> Path:
    """MIOPEN_USER_DB_PATH (`~` expanded), else `~/.config/miopen`."""
    return _home_path("MIOPEN_USER_DB_PATH", Path.home() / ".config" / "miopen")


def kernel_cache_dir() -> Path:
    """MIOPEN_CUSTOM_CACHE_DIR (`~` expanded), else `~/.cache/miopen/<version>`."""
    return _home_path("MIOPEN_CUSTOM_CACHE_DIR", Path.home() / ".cache" / "miopen" / __version__)


def cache_disabled() -> bool:
    return (_env("MIOPEN_DISABLE_CACHE") or "0").lower() in ("1", "on", "yes", "true", "enable")


def find_mode() -> FindMode:
    return FindMode.parse(_env("MIOPEN_FIND_MODE"))


def fp32_math() -> MathMode:
    return MathMode.parse(_env("MIOPENKERNELS_FP32_MATH"))


def triton_solvers_enabled() -> bool:
    """MIOPENKERNELS_TRITON=0 (or off/no/false/disable) turns the tensor-core (Triton) solvers
    off in the registry: builds ship no Triton objects and the runtime uses the portable
    solvers alone (as MIOpen's MIOPEN_DEBUG_CONV_* variables turn solvers off)."""
    value = (_env("MIOPENKERNELS_TRITON") or "1").strip().lower()
    return value not in ("0", "off", "no", "false", "disable")


def triton_importable() -> bool:
    """Whether Triton can be imported here (the JIT fallback of the Triton solvers needs it;
    their launches do not). Asks the import system only: Triton itself is not imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def find_enforce() -> FindEnforce:
    return FindEnforce.parse(_env("MIOPEN_FIND_ENFORCE"))


def device_overrides() -> tuple[str | None, int | None]:
    """(MIOPEN_DEVICE_ARCH, MIOPEN_DEVICE_CU)."""
    arch = _env("MIOPEN_DEVICE_ARCH")
    cu_text = _env("MIOPEN_DEVICE_CU")
    cu = None
    if cu_text is not None:
        from .target import CU_RANGE
        cu = parse_int(cu_text, "MIOPEN_DEVICE_CU", CU_RANGE[0], CU_RANGE[1], TargetError)
    return arch, cu


@dataclass(frozen=True)
class Paths:
    """The database files of one basename, system and user side."""

    basename: str
    system_dir: Path | None
    user_dir: Path
    cache_dir: Path
    db_arch: str | None = None  # the basename's arch when the caller knows it (a Handle does)

    @property
    def system_finddb(self) -> Path | None:
        return self.system_dir / f"{self.basename}.HIP.fdb.txt" if self.system_dir else None

    @property
    def system_perfdb(self) -> Path | None:
        return self.system_dir / f"{self.basename}.db" if self.system_dir else None

    @property
    def system_perfdb_text(self) -> Path | None:
        return self.system_dir / f"{self.basename}.db.txt" if self.system_dir else None

    @property
    def arch(self) -> str | None:
        """The arch of the basename (`gfx90a68` -> `gfx90a`), None when the name does not say."""
        if self.db_arch is not None:
            return self.db_arch
        from .target import target_from_name

        target = target_from_name(f"{self.basename}.kdb")
        return target.arch if target is not None else None

    def kdb_names(self) -> list[str]:
        """The system kdb names MIOpen tries, in order: `<basename>.kdb`, then `<arch>.kdb`
        (AMD ships `gfx90a.kdb`, `gfx942.kdb`, ...)."""
        arch = self.arch
        return [f"{self.basename}.kdb", *([f"{arch}.kdb"] if arch else [])]

    @property
    def system_kdb(self) -> Path | None:
        """The first of `kdb_names` that exists in the system folder (else the first name)."""
        if not self.system_dir:
            return None
        names = self.kdb_names()
        found = next((self.system_dir / n for n in names if (self.system_dir / n).exists()), None)
        return found or self.system_dir / names[0]

    @property
    def user_finddb(self) -> Path:
        return self.user_dir / f"{self.basename}.HIP.{MIOPEN_VERSION_TAG}.ufdb.txt"

    @property
    def user_perfdb(self) -> Path:
        return self.user_dir / f"{self.basename}_{USER_PERFDB_SCHEMA}.udb"

    @property
    def user_kdb(self) -> Path:
        return self.cache_dir / f"{self.basename}.ukdb"

    @classmethod
    def for_basename(cls, basename: str, arch: str | None = None) -> Paths:
        system = None
        probe = cls(basename, None, user_db_dir(), kernel_cache_dir(), arch)
        names = [*probe.kdb_names(), *(f"{basename}{ext}" for ext in
                                       (".HIP.fdb.txt", ".db", ".db.txt"))]
        for d in system_db_dirs():
            if any((d / name).exists() for name in names):
                system = d
                break
        return cls(basename, system, probe.user_dir, probe.cache_dir, arch)
