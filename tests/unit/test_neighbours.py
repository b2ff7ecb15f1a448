"""The miss ranking's neighbours: measured records of the same layer at another batch size, else
(a plain 2D convolution) at another image size, nearest in output positions."""

from __future__ import annotations

from pathlib import Path

import pytest
from find_doubles import db_env
from miopenkernels import invoke
from miopenkernels.backends import NullBackend
from miopenkernels.db.finddb import FindDbFile, FindDbRecord, Solution
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
# ResNet-50's 3x3 layer of stage 3 at 224x224 (14x14) and at 320x320 (20x20).
AT_224 = ConvProblem(n=32, c=256, k=256, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))
AT_320 = ConvProblem(n=16, c=256, k=256, in_spatial=(20, 20), filter=(3, 3), pad=(1, 1))
ALGO = "miopenConvolutionFwdAlgoDirect"


def _handle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, records: list[ConvProblem],
            pad_bytes: int = 0) -> Handle:
    tmp_path.mkdir(parents=True, exist_ok=True)
    dirs = db_env(monkeypatch, tmp_path)
    find = FindDbFile()
    for p in records:
        find.put(FindDbRecord(p.key(), (Solution("ConvDirectFwd", 0.5, 0, ALGO),)))
    path = find.write(dirs["system"] / f"{SM90.basename}.HIP.fdb.txt")
    if pad_bytes:  # comment lines: a file over the size read whole
        with open(path, "a") as fh:
            fh.write(("#" + "x" * 99 + "\n") * (pad_bytes // 100))
    return Handle(backend=NullBackend(SM90))


def test_a_layer_at_another_image_size_is_the_neighbour(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    h = _handle(monkeypatch, tmp_path, [AT_224, AT_224.with_batch(128)])
    extra, measured = invoke._neighbours(h, AT_320)
    near, params, ms = measured["ConvDirectFwd"]
    # 16 x 20 x 20 = 6400 output positions: batch 32 at 14x14 (6272) is the nearest.
    assert near == AT_224 and ms == 0.5 and extra["ConvDirectFwd"] == [params]
    # The same layer at another batch size of its own image size comes first.
    h2 = _handle(monkeypatch, tmp_path / "b", [AT_224, AT_320.with_batch(64)])
    assert invoke._neighbours(h2, AT_320)[1]["ConvDirectFwd"][0] == AT_320.with_batch(64)


def test_no_neighbour_of_another_layer_or_from_a_large_file(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    other = ConvProblem(n=32, c=128, k=256, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))
    h = _handle(monkeypatch, tmp_path, [other])
    assert invoke._neighbours(h, AT_320) == ({}, {})
    big = _handle(monkeypatch, tmp_path / "big", [AT_224],
                  pad_bytes=invoke.CLASS_INDEX_MAX_BYTES + 1000)
    assert invoke._neighbours(big, AT_320) == ({}, {})
