"""Problem manifests: files of MIOpenDriver lines under dbs/manifests/, loaded by name.

A manifest is named by its file stem (`resnet50`) or given as a path. The default manifest of a
build is the union of every manifest shipped, in name order, without duplicates. The model zoo
(`zoo/NAME`) and its held-out networks (`zoo/held_out/NAME`) are sub-folders, outside that
default; `held_out_keys` names the held-out layers that tuning and the ranking's fit leave out.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

from miopenkernels.driver import parse_driver_lines
from miopenkernels.errors import ProblemError
from miopenkernels.problem import ConvProblem

__all__ = ["manifests_dir", "available_manifests", "manifest_path", "load_manifest",
           "load_manifests", "read_manifest_text", "MAX_LINE_BYTES", "zoo_manifests",
           "held_out_keys"]


def manifests_dir() -> Path:
    """The folder of shipped manifests (package data of `miopenkernels.dbs`)."""
    return Path(str(resources.files("miopenkernels.dbs").joinpath("manifests")))


def available_manifests() -> list[str]:
    """Names of the shipped manifests, sorted."""
    return sorted(p.stem for p in manifests_dir().glob("*.txt"))


def manifest_path(name: str | Path) -> Path:
    """A shipped manifest by name, or an existing file; ProblemError naming the known ones."""
    path = Path(name)
    if path.suffix == ".txt" and path.is_file():
        return path
    shipped = manifests_dir() / f"{name}.txt"
    if shipped.is_file():
        return shipped
    if path.is_file():
        return path
    known = ", ".join(available_manifests())
    raise ProblemError(f"no manifest {str(name)!r}: give a file or one of: {known}")


# An MIOpenDriver line is a few hundred bytes; a line this long is not one, and is refused
# as it is read (never held whole).
MAX_LINE_BYTES = 64 << 10


def read_manifest_text(path: Path) -> str:
    """The text of a problem manifest, read line by line: ProblemError at the first line over
    MAX_LINE_BYTES or bytes that are not UTF-8, before the rest is read."""
    lines: list[str] = []
    try:
        with open(path, "rb") as fh:
            for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""),
                                          1):
                if len(line) > MAX_LINE_BYTES:
                    raise ProblemError(f"manifest {path}: line {number} is over "
                                       f"{MAX_LINE_BYTES >> 10} KiB, so not an MIOpenDriver "
                                       "line; give a file of MIOpenDriver lines")
                lines.append(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProblemError(f"manifest {path}: line {len(lines) + 1} is not UTF-8 text") \
            from None
    except OSError as exc:
        raise ProblemError(f"manifest {path} cannot be read: {exc.strerror or exc}") from None
    return "".join(lines)


def load_manifest(name: str | Path) -> list[ConvProblem]:
    """The problems of one manifest, in file order, each direction a problem of its own."""
    path = manifest_path(name)
    text = read_manifest_text(path)
    try:
        return parse_driver_lines(text)
    except ProblemError as exc:
        raise ProblemError(f"manifest {path}: {exc}") from None


def load_manifests(names: list[str] | tuple[str, ...] | None = None) -> list[ConvProblem]:
    """The union of manifests (all shipped ones when `names` is empty), duplicates dropped."""
    chosen = list(names) if names else available_manifests()
    seen: dict[ConvProblem, None] = {}
    for name in chosen:
        for problem in load_manifest(name):
            seen.setdefault(problem, None)
    return list(seen)


def zoo_manifests(held_out: bool = False) -> list[Path]:
    """The model zoo's manifests (`zoo/*.txt`), or its held-out networks' (`zoo/held_out/`)."""
    folder = manifests_dir() / "zoo"
    return sorted((folder / "held_out" if held_out else folder).glob("*.txt"))


_CASE_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _layer_keys(problems: list[ConvProblem]) -> set[str]:
    """FindDb keys at batch 1 of each problem's layer in every direction, type and layout."""
    layers = {replace(p, n=1, direction="F", in_type="FP32", wei_type="", out_type="",
                      in_layout="", wei_layout="", out_layout="") for p in problems}
    return {replace(p, direction=d, in_type=t, wei_type=t, out_type=t, in_layout=lay,
                    wei_layout=lay, out_layout=lay).key()
            for p in layers for d in "FBW" for t in ("FP32", "FP16", "BF16")
            for lay in _CASE_LAYOUTS[p.spatial_dim]}


@lru_cache(maxsize=1)
def held_out_keys() -> frozenset[str]:
    """FindDb keys at batch 1 (`problem.with_batch(1).key()`) of the held-out networks'
    layers in every direction, type and layout, less those of layers that a shipped or zoo
    manifest also holds: what tuning and the ranking's fit leave out, so that measuring the
    held-out networks tells whether the solvers and the ranking generalise."""
    held = [p for path in zoo_manifests(held_out=True) for p in load_manifest(path)]
    if not held:
        return frozenset()
    names: list[str | Path] = [*available_manifests(), *zoo_manifests()]
    tuned = [p for name in names for p in load_manifest(name)]
    return frozenset(_layer_keys(held) - _layer_keys(tuned))
