"""library/_record.py: the dataclass subset of the runtime's start-up path behaves as the
standard library's does, and the standard library's helpers work on its classes."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest
from miopenkernels._record import dataclass, field, replace
from miopenkernels.handle import KernelStats
from miopenkernels.invoke import ConvSolution
from miopenkernels.problem import ConvProblem


@dataclass(frozen=True)
class Point:
    """A frozen record with a normalising __post_init__."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default=(), compare=False)
    note: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", self.y or self.x)


@dataclass
class Counter:
    """A mutable record with a factory default."""

    hits: int = 0
    seen: list[str] = field(default_factory=list)


def test_init_defaults_post_init_and_errors() -> None:
    assert (Point(2).x, Point(2).y, Point(2, 3).y) == (2, 2, 3)
    assert Point(x=1, tags=("a",)).tags == ("a",)
    with pytest.raises(TypeError, match="missing 1 required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        Point(1, 2, (), "", 5)  # type: ignore[call-arg]
    a, b = Counter(), Counter()
    a.seen.append("x")
    assert b.seen == [] and a.hits == 0


def test_eq_hash_repr_and_frozen() -> None:
    assert Point(1, tags=("a",)) == Point(1, tags=("b",))  # tags is not compared
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and Point(1, 2) != Point(1, 3)
    assert Point(1) != (1, 1)
    assert repr(Point(1, note="hidden")) == "Point(x=1, y=1, tags=())"
    with pytest.raises(AttributeError,
                       match="cannot assign to field 'x'"):
        Point(1).x = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="unhashable"):
        hash(Counter())
    c = Counter()
    c.hits += 1
    assert c == Counter(1) and repr(c) == "Counter(hits=1, seen=[])"


def test_replace_pickle_copy_and_the_standard_library_helpers() -> None:
    p = Point(1, 5, ("t",))
    assert replace(p, x=2) == Point(2, 5, ("t",)) and replace(p, x=2).tags == ("t",)
    for q in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert q == p and q.tags == ("t",)
    assert dataclasses.is_dataclass(p) and dataclasses.replace(p, y=7).y == 7
    assert dataclasses.asdict(p) == {"x": 1, "y": 5, "tags": ("t",), "note": ""}
    assert [f.name for f in dataclasses.fields(ConvSolution)][:3] == ["solver", "algorithm",
                                                                       "time"]
    conv = ConvProblem(n=2, c=4, k=8, in_spatial=(6, 6), filter=(3, 3), pad=(1, 1))
    assert dataclasses.replace(conv, n=3) == replace(conv, n=3) != conv
    assert KernelStats(jit=1).to_dict() == {"system_kdb": 0, "user_kdb": 0, "jit": 1,
                                            "memory": 0}


def test_the_runtime_classes_do_not_import_dataclasses() -> None:
    code = ("import sys, miopenkernels.handle, miopenkernels.invoke, miopenkernels.problem; "
            "print('dataclasses' in sys.modules, 'inspect' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
