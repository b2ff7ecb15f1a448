"""Database file names name their target, for every default target of both vendors."""

from __future__ import annotations

import pytest
from miopenkernels.db.sniff import target_from_name
from miopenkernels.target import default_targets

SUFFIXES = (".kdb", ".ukdb", ".db", ".db.txt", ".HIP.fdb.txt", "_1.1.0.udb")


@pytest.mark.parametrize("target", default_targets(), ids=lambda t: t.name)
def test_every_default_basename_reads_back_as_its_target(target) -> None:  # noqa: ANN001
    for suffix in SUFFIXES:
        assert target_from_name(target.basename + suffix) == target, target.basename + suffix


def test_names_that_say_no_target_give_none() -> None:
    assert target_from_name("perf.db") is None
    assert target_from_name("notes.txt") is None
