"""A damaged user FindDb (garbage bytes, a Git LFS pointer) is set aside with one warning."""

from __future__ import annotations

import os
import warnings

import pytest
from miopenkernels.db.finddb import FindDb, Solution

KEY = "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"
SOL = Solution("ConvDirectNaiveConvFwd", 1.0, 0, "miopenConvolutionFwdAlgoDirect")
LFS = (b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"a" * 64
       + b"\nsize 1234\n")


@pytest.mark.parametrize("data", [bytes(range(128, 256)) * 16, LFS], ids=["garbage", "lfs"])
def test_damaged_user_finddb_is_set_aside_and_written_again(tmp_path, data):
    path = tmp_path / "gfx90a_104.HIP.fdb.txt"
    path.write_bytes(data)
    db = FindDb(None, path)
    with pytest.warns(UserWarning, match="set aside as gfx90a_104.HIP.fdb.txt.damaged-"):
        assert db.lookup(KEY) is None
    (aside,) = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert aside.read_bytes() == data
    assert not path.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning, not one per lookup
        assert db.lookup(KEY) is None
        db.store(KEY, [SOL])
        record = db.lookup(KEY)
    assert record is not None and record.best.solver == SOL.solver
    assert FindDb(None, path).lookup(KEY) is not None


def test_damaged_user_finddb_written_by_another_process_is_stored_over(tmp_path):
    path = tmp_path / "u.fdb.txt"
    db = FindDb(None, path)
    db.store(KEY, [SOL])
    path.write_bytes(os.urandom(64) + b"\xff\xfe")
    with pytest.warns(UserWarning, match="set aside"):
        db.store(KEY, [SOL])
    assert FindDb(None, path).lookup(KEY) is not None
