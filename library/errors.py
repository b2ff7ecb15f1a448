"""Every class of failure is one exception type with its own exit code.

The CLI catches `MIOpenKernelsError` once and prints `error: <message>` on one line, then exits
with the code below. Library callers catch the specific type.
"""

from __future__ import annotations

__all__ = [
    "MIOpenKernelsError",
    "ProblemError",
    "LayoutError",
    "TargetError",
    "DbError",
    "DamagedDbError",
    "NoDeviceError",
    "DetectError",
    "CompileError",
    "CodeObjectError",
    "PackageNotFoundError",
    "IndexUnreachableError",
    "IntegrityError",
    "ContainmentError",
    "ArgumentError",
    "BackendError",
    "InstallError",
    "PackageBuildError",
    "MissingDependencyError",
    "EXIT_CODES",
]


class MIOpenKernelsError(Exception):
    """Base class. `exit_code` is what the CLI exits with; `log` holds a tool's full output
    where a tool failed."""

    exit_code = 1
    log: str = ""


class ProblemError(MIOpenKernelsError, ValueError):
    """A malformed problem: MIOpenDriver line, FindDb key or impossible shape."""

    exit_code = 3


class LayoutError(ProblemError):
    """A tensor whose memory layout (shape and strides) is not the problem's: an NCHW-ordered
    array for an NHWC problem, a transposed or sliced view."""

    exit_code = 17


class TargetError(MIOpenKernelsError, ValueError):
    """An unknown or malformed target (arch, CU count, target ID)."""

    exit_code = 4


class DbError(MIOpenKernelsError):
    """A database file that is missing, corrupt, foreign or of an unknown schema."""

    exit_code = 5


class DamagedDbError(DbError):
    """A database file whose bytes are damaged (garbage, LFS pointer, truncated, corrupt pages),
    as opposed to one that is busy or missing: a user cache so damaged is set aside and rebuilt."""


class NoDeviceError(MIOpenKernelsError):
    """No GPU was found (no rocminfo, no driver, no agent)."""

    exit_code = 6


class DetectError(MIOpenKernelsError):
    """GPU detection ran but its output could not be read."""

    exit_code = 7


class CompileError(MIOpenKernelsError):
    """A kernel failed to compile; `log` holds the compiler's output."""

    exit_code = 8

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class CodeObjectError(MIOpenKernelsError):
    """A code object is not for the target it claims, or lacks its kernel symbol."""

    exit_code = 9


class PackageNotFoundError(MIOpenKernelsError):
    """No package fits the detected GPU."""

    exit_code = 10


class IndexUnreachableError(MIOpenKernelsError):
    """A channel or package index could not be reached."""

    exit_code = 11


class IntegrityError(MIOpenKernelsError):
    """A hash does not match: a kernel blob, an installed file, a package."""

    exit_code = 12


class ContainmentError(IntegrityError):
    """A package that would write where its kind may not (anything but its databases, kdb,
    manifest and packaging metadata) or over a file another installed package owns; the
    message names the path and its owner."""

    exit_code = 12


class ArgumentError(MIOpenKernelsError, ValueError):
    """A command-line path that cannot work, found before any work: `--out` naming a file or a
    folder under a file, a path over the system's length limit."""

    exit_code = 2


class BackendError(MIOpenKernelsError):
    """A GPU API call failed; the message carries the API's own words."""

    exit_code = 13


class InstallError(MIOpenKernelsError):
    """An installation step failed (pip, conda); nothing was left half-installed."""

    exit_code = 14


class PackageBuildError(MIOpenKernelsError):
    """Building a wheel or conda package failed; the message carries the tool's own output."""

    exit_code = 15


class MissingDependencyError(MIOpenKernelsError):
    """A command needs an optional dependency (an extra such as `[build]`) that is not
    installed; said before any work starts."""

    exit_code = 16


EXIT_CODES = {
    cls.__name__: cls.exit_code
    for cls in (
        MIOpenKernelsError,
        ProblemError,
        LayoutError,
        TargetError,
        DbError,
        NoDeviceError,
        DetectError,
        CompileError,
        CodeObjectError,
        PackageNotFoundError,
        IndexUnreachableError,
        IntegrityError,
        ContainmentError,
        ArgumentError,
        BackendError,
        InstallError,
        PackageBuildError,
        MissingDependencyError,
    )
}
