"""The package's shape: no import cycles among its modules, and no module too large to read.

The import graph is the package as installed (`ci/import_graph.py`: setup.py maps builder/ and
kernels/ into `miopenkernels`), built by grimp as import-linter builds it: imports under
TYPE_CHECKING left out, imports inside functions counted. The layer contracts themselves are
pyproject.toml's, checked by `python ci/import_graph.py lint` in ci/test.sh.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 500
HANDLE_MAX_LINES = 250


@pytest.fixture(scope="module")
def edges() -> dict[str, list[str]]:
    """{module: modules it imports} of the installed package."""
    proc = subprocess.run([sys.executable, str(REPO / "ci" / "import_graph.py"), "edges"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative: the graph's depth would exceed Python's recursion limit in a larger package)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_rings_and_nothing_else() -> None:
    ring = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["d"], "f": ["g"],
            "g": ["f"]}
    assert sorted(cycles(ring)) == [["a", "b", "c"], ["f", "g"]]
    assert cycles({"a": ["b"], "b": ["c"], "c": []}) == []


def test_the_graph_is_the_installed_package(edges: dict[str, list[str]]) -> None:
    assert "miopenkernels.target" in edges["miopenkernels.builder.build"]
    assert "miopenkernels.kernels.conv_triton_spec" in edges
    # ranking.py imports problem and solvers.base for its annotations alone.
    assert "miopenkernels.problem" not in edges["miopenkernels.ranking"]


def test_no_import_cycles_among_the_package_modules(edges: dict[str, list[str]]) -> None:
    assert cycles(edges) == []


def test_the_domain_imports_nothing_above_it(edges: dict[str, list[str]]) -> None:
    """problem (and the key reading it builds on), target, pooling and driver's flag reading
    import the foundation alone; driver adds them."""
    foundation = {"errors", "_numbers", "_fsutil", "_proc", "_log", "_record", "_lazy_re",
                  "_cuda_status", "versions"}
    for module, allowed in (("problem", foundation | {"problem_key"}),
                            ("problem_key", foundation), ("target", foundation),
                            ("pooling", foundation), ("_driver_flags", foundation),
                            ("driver", foundation | {"problem", "problem_key", "target",
                                                     "pooling", "_driver_flags"})):
        imported = {m.removeprefix("miopenkernels.") for m in edges[f"miopenkernels.{module}"]}
        assert imported <= allowed, (module, sorted(imported - allowed))


def test_no_module_over_500_lines() -> None:
    files = sorted([*REPO.glob("library/**/*.py"), *REPO.glob("builder/**/*.py")])
    sizes = {str(f.relative_to(REPO)): len(f.read_text().splitlines()) for f in files}
    assert len(sizes) > 50
    over = {name for name, n in sizes.items() if n > MAX_LINES}
    assert over == set(), {n: sizes[n] for n in sorted(over)}
    assert sizes["library/handle.py"] < HANDLE_MAX_LINES  # Handle composes, nothing more
