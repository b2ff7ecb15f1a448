"""Patterns compiled on first use answer as `re.compile` does."""

from __future__ import annotations

import re

from miopenkernels._lazy_re import LazyPattern, lazy


def test_a_lazy_pattern_compiles_on_first_use_and_matches_as_re_does() -> None:
    pat = lazy(r"(?m)^\s*#\s*include\s+\"([^\"]+)\"\s*$")
    assert isinstance(pat, LazyPattern) and pat._compiled is None
    text = '#include "a.h"\nint x;\n  # include "b.h"\n'
    ref = re.compile(pat.pattern)
    assert pat.findall(text) == ref.findall(text) == ["a.h", "b.h"]
    assert pat._compiled is not None
    assert [m.group(1) for m in pat.finditer(text)] == ["a.h", "b.h"]
    assert pat.sub(lambda m: m.group(1), text) == ref.sub(lambda m: m.group(1), text)
    assert pat.search("int y;") is None
    assert lazy(r"sm(\d+)").fullmatch("sm90").group(1) == "90"
    assert lazy(r"sm(\d+)").match("gfx90a") is None
    assert lazy(rb"\.entry\s+(\w+)").search(b".entry k0 (").group(1) == b"k0"


def test_the_start_up_modules_compile_no_pattern_at_import() -> None:
    import importlib

    for name in ("codeobject", "target", "problem", "kernel_sources", "db.sniff", "db.perfdb",
                 "solvers.base"):
        module = importlib.import_module(f"miopenkernels.{name}")
        eager = [k for k, v in vars(module).items() if isinstance(v, re.Pattern)]
        assert not eager, f"{name} compiles {eager} at import"
