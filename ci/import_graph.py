"""The `miopenkernels` package as installed, for the tools that read it from files: import-linter
and the layer test (its import graph), mypy (ci/typecheck.sh).

setup.py maps library/, builder/, kernels/, dbs/ and recipes/ onto one package (`ROOTS`), which
grimp (import-linter's graph builder) cannot see from the source folders: it walks the folder of
`miopenkernels` alone, and the editable install's finder is not a folder. `stage` lays the
package out as links in a folder, so both read it as it is installed.

    python ci/import_graph.py lint [lint-imports options]   the contracts of pyproject.toml
    python ci/import_graph.py edges                          {module: [imported, ...]} as JSON
    python ci/import_graph.py stage DIR                      the package's links under DIR

Imports under TYPE_CHECKING are left out of both; imports inside functions count.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def roots(repo: Path = REPO) -> dict[str, str]:
    """setup.py's ROOTS: import name -> folder (the one place the mapping is written)."""
    tree = ast.parse((repo / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ROOTS" for t in node.targets):
            value: dict[str, str] = ast.literal_eval(node.value)
            return value
    raise SystemExit("setup.py defines no ROOTS mapping")


def stage(dest: Path, repo: Path = REPO) -> Path:
    """`dest`/miopenkernels as installed: a link per entry of the top package's folder and one
    per sub-package folder (grimp follows links). Returns `dest`, for sys.path."""
    mapping = roots(repo)
    top = next(name for name in mapping if "." not in name)
    package = dest / top
    package.mkdir(parents=True)
    for entry in sorted((repo / mapping[top]).iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in mapping.items():
        if name != top:
            parts = name.split(".")[1:]
            if len(parts) != 1:
                raise SystemExit(f"setup.py maps {name}: only children of {top} are staged")
            (package / parts[0]).symlink_to(repo / folder)
    return dest


def _edges(package: str) -> dict[str, list[str]]:
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    return {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command not in ("lint", "edges", "stage") or (command == "stage") != (len(argv) == 2):
        print(__doc__, file=sys.stderr)
        return 2
    if command == "stage":
        stage(Path(argv[1]))
        return 0
    with tempfile.TemporaryDirectory(prefix="import-graph-") as tmp:
        path = stage(Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(path), *filter(None, [os.environ.get("PYTHONPATH")])])}
        if command == "lint":
            # The staged paths change per run: a cache keyed on them would only grow.
            return subprocess.run([sys.executable, "-c",
                                   "from importlinter.cli import lint_imports_command as c; c()",
                                   "--no-cache", *argv[1:]], env=env, cwd=REPO).returncode
        # This script imports nothing of the package, so the staged folder is the one found.
        sys.path.insert(0, str(path))
        json.dump(_edges("miopenkernels"), sys.stdout)
        return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
