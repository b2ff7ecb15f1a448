"""Kernel sources (one place): where they live, which files a kernel's text depends on, and
the text with its includes inlined.

The kernels directory is the installed `miopenkernels.kernels` package unless
`MIOPENKERNELS_KERNELS_DIR` (or an explicit argument) points elsewhere, so that a build or a test
can compile a modified copy. A kernel's dependencies are its own file plus every file it pulls in
through `#include "..."`, followed transitively; system headers (`<...>`) belong to the
compiler and are covered by its version. A Triton kernel, `*.py`, depends on the modules of the
kernels package it imports, followed transitively (relative imports anywhere in a module, in a
function too: `from .x import y`, `from . import x`), and on every file of the kernels directory
that one of those modules names in a string (a data file it reads, such as a tuned table); so a
change to one family's kernel recompiles that family's objects and no other. A module that
does not parse depends on every Python file of the directory (its compile fails anyway).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from ._lazy_re import lazy
from .errors import CompileError

__all__ = ["KERNELS_DIR_ENV", "kernels_dir", "kernel_source", "source_files", "source_digest",
           "expand_source"]

KERNELS_DIR_ENV = "MIOPENKERNELS_KERNELS_DIR"
_INCLUDE_RE = lazy(r'(?m)^\s*#\s*include\s*"([^"]+)"')


def kernels_dir(override: str | Path | None = None) -> Path:
    """The directory kernel files are read from: `override`, else the env variable, else the
    installed package."""
    # Absolute, because compilers run in a temporary working directory.
    if override:
        return Path(override).resolve()
    env = os.environ.get(KERNELS_DIR_ENV)
    if env:
        return Path(env).resolve()
    from .config import package_dir

    return package_dir("miopenkernels.kernels")


def kernel_source(kernel_file: str, directory: str | Path | None = None) -> Path:
    """Path of `kernel_file` in the kernels directory; CompileError if it is missing."""
    path = kernels_dir(directory) / kernel_file
    if not path.is_file():
        raise CompileError(f"kernel source {kernel_file} not found in {path.parent}")
    return path


def source_files(kernel_file: str, directory: str | Path | None = None) -> list[Path]:
    """`kernel_file` and every quoted include it reaches, in first-seen order.

    An include is looked up next to the including file, then in the kernels directory (the `-I`
    the compilers get). One that is found in neither is left to the compiler to report.
    """
    root = kernels_dir(directory)
    first = kernel_source(kernel_file, root)
    if first.suffix == ".py":
        return _python_closure(first.resolve(), root.resolve())
    seen: dict[Path, None] = {}
    todo = [first]
    while todo:
        path = todo.pop(0).resolve()
        if path in seen:
            continue
        seen[path] = None
        for name in _INCLUDE_RE.findall(path.read_text(errors="replace")):
            for base in (path.parent, root):
                candidate = base / name
                if candidate.is_file():
                    todo.append(candidate)
                    break
    return list(seen)


def _python_closure(first: Path, root: Path) -> list[Path]:
    """`first` and what it reads of the kernels package, in first-seen order: the modules it
    imports relatively (transitively), then the files of `root` its modules name."""
    seen: dict[Path, None] = {}
    data: dict[Path, None] = {}
    todo = [first]
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen[path] = None
        found = _python_references(path, root, path.read_bytes())
        if found is None:  # unparseable: every Python file of the folder
            rest = sorted(p.resolve() for p in root.glob("*.py") if p.name != "__init__.py")
            return [first, *(p for p in rest if p != first)]
        modules, files = found
        todo.extend(m for m in modules if m not in seen)
        data.update(dict.fromkeys(f for f in files if f not in data))
    return [*seen, *(f for f in data if f not in seen)]


@lru_cache(maxsize=256)
def _python_references(path: Path, root: Path, text: bytes
                       ) -> tuple[tuple[Path, ...], tuple[Path, ...]] | None:
    """The kernels-package modules `path` (whose bytes are `text`) imports relatively and the
    files of `root` it names in a string constant; None where it does not parse. Kept per
    path and text: parsing the implicit GEMM's modules takes tens of milliseconds, and a
    build asks for every job's."""
    import ast

    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError):
        return None
    modules: list[Path] = []
    files: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            for name in names:
                candidate = root / f"{name}.py"
                if candidate.is_file():
                    modules.append(candidate.resolve())
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and _FILE_NAME_RE.fullmatch(node.value)):
            candidate = root / node.value
            if candidate.is_file() and candidate.resolve() != path:
                files.append(candidate.resolve())
    return tuple(modules), tuple(files)


_FILE_NAME_RE = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\.[A-Za-z0-9]{1,8}")


def source_digest(kernel_file: str, directory: str | Path | None = None) -> str:
    """sha256 over the names (relative to the kernels directory) and bytes of every file the
    kernel's text depends on."""
    root = kernels_dir(directory).resolve()
    import hashlib

    h = hashlib.sha256()
    for path in source_files(kernel_file, root):
        try:
            name = str(path.relative_to(root))
        except ValueError:
            name = str(path)
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


_INCLUDE_LINE_RE = lazy(r'(?m)^\s*#\s*include\s+"([^"]+)"\s*$')


def expand_source(kernel_file: str, directory: str | Path | None = None) -> str:
    """The text of `<kernels dir>/<kernel_file>` with every `#include "x"` inlined (once each).

    For compilers fed a string (NVRTC); the result needs no include path.
    """
    return _expand(kernel_file, kernels_dir(directory))


@lru_cache(maxsize=64)
def _expand(kernel_file: str, base: Path) -> str:
    seen: set[str] = set()

    def expand(name: str) -> str:
        path = base / name
        if not path.is_file():
            raise FileNotFoundError(f"kernel source {path} not found")
        text = path.read_text()

        def repl(m: re.Match[str]) -> str:
            inc = m.group(1)
            if inc in seen:
                return f"// {inc} already included"
            seen.add(inc)
            return expand(inc)

        return _INCLUDE_LINE_RE.sub(repl, text)

    seen.add(kernel_file)
    return expand(kernel_file)
