"""The key index of large text databases: the first lookup of a process answered by a search
of the file while the index is built, the index itself, the kept copy, and the one FindDb line
parser's quick path for well-formed entries."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from miopenkernels.db import _index
from miopenkernels.db._index import LineIndex
from miopenkernels.db.finddb import FindDbFile, FindDbReader, parse_entry, parse_value

ALGO = "miopenConvolutionFwdAlgoDirect"


def _expected(data: bytes) -> tuple[dict[str, list[tuple[int, int, str]]], int]:
    """A straight reading of `data`: (key -> [(offset, number, line)] in file order, count of
    malformed lines), by the rules of `_text.split_line`."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    bad = 0
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), 1):
        line = raw.rstrip(b"\r").decode()
        key, sep, _ = line.partition("=")
        if line.strip() and not line.startswith("#"):
            if sep and key:
                out.setdefault(key, []).append((offset, number, line))
            else:
                bad += 1
        offset += len(raw) + 1
    return out, bad


def _tricky(tmp_path: Path, trailing_newline: bool) -> Path:
    """Every line form the index must place: duplicates, CRLF, comments with '=', blank lines,
    an empty key, a line without '=', lines longer than a read block, keys that share a prefix."""
    long_value = ";".join(f"S{i}:{i}.5,0,{ALGO}" for i in range(60))
    lines = [
        f"1-1-1-3x3-2-3-3-128-0x0-1x1-1x1-0-NCHW-FP16-B=A:1,0,{ALGO}",
        "# a comment=with an equals sign",
        "",
        f"k=B:2,0,{ALGO}\r",
        f"k-F=C:3,0,{ALGO}",
        "no equals sign here",
        f"=D:4,0,{ALGO}",
        f"long={long_value}",
        f"k=E:5,0,{ALGO}",  # a duplicate: MIOpen takes the first
        "   ",
        f"#k=F:6,0,{ALGO}",
        f"k2=G:7,0,{ALGO};H:0.5,16,{ALGO}",
    ] + [f"{i}-x=S:{i},0,{ALGO}" for i in range(200)] + [f"last=Z:9,0,{ALGO}"]
    path = tmp_path / "tricky.HIP.fdb.txt"
    path.write_bytes(("\n".join(lines) + ("\n" if trailing_newline else "")).encode())
    return path


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks shorter than the long line, and a file "large" enough to take the first-lookup
    # search and the index thread.
    monkeypatch.setattr(_index, "_BLOCK", 512)
    monkeypatch.setattr(_index, "PERSIST_MIN_BYTES", 64)


def _assert_lines(index: LineIndex, expected: dict, keys: list[str]) -> None:
    """Each key's lines and their line numbers are those the file holds for it."""
    for key in keys:
        got = list(index.lines(key))
        assert got == [(off, line) for off, _, line in expected.get(key, [])], key
        assert [index.line_number(off) for off, _ in got] == \
            [n for _, n, _ in expected.get(key, [])]


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_first_lookup_search_and_index_give_a_straight_readings_lines(
        tmp_path: Path, small_blocks: None, trailing_newline: bool) -> None:
    path = _tricky(tmp_path, trailing_newline)
    expected, bad = _expected(path.read_bytes())
    keys = [k for k in expected if not k.endswith("-x")] + ["0-x", "17-x", "199-x"]
    queries = [*keys, "absent", "", "#k", "k=B", "1-1-1", "k-"]
    for i, key in enumerate(queries):
        want = [(off, line) for off, _, line in expected.get(key, [])]
        # A fresh process's first lookup: a search of the map, the index built beside it.
        index_dir = tmp_path / f"index-{i}"
        cold = LineIndex(path, index_dir)
        try:
            assert cold.built and not cold._ready
            assert list(cold.lines(key)) == want, key
            # Every later lookup: through the index.
            cold.wait()
            assert cold._ready and list(cold.lines(key)) == want, key
        finally:
            cold.close()
    kept = LineIndex(path, index_dir)
    try:
        assert not kept.built and kept._ready
        assert len(kept) == sum(len(v) for v in expected.values())
        assert kept.skipped.count == bad == 2
        _assert_lines(kept, expected, [*expected, *queries])
    finally:
        kept.close()


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_a_small_file_is_indexed_at_once_with_the_same_lines(tmp_path: Path,
                                                             trailing_newline: bool) -> None:
    path = _tricky(tmp_path, trailing_newline)  # under PERSIST_MIN_BYTES: no thread, no numpy
    expected, bad = _expected(path.read_bytes())
    index = LineIndex(path, tmp_path / "index")
    try:
        assert index._ready and index._builder is None
        assert index.skipped.count == bad and len(index) == sum(map(len, expected.values()))
        _assert_lines(index, expected, [*expected, "absent", "", "#k", "k=B", "1-1-1", "k-"])
    finally:
        index.close()
    assert not (tmp_path / "index").exists()  # kept in memory only


def test_the_first_lookup_does_not_wait_for_the_index(tmp_path: Path, small_blocks: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = _tricky(tmp_path, True)
    release = threading.Event()
    real = _index._index_lines

    def held(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(_index, "_index_lines", held)
    reader = FindDbReader(path, tmp_path / "index")
    try:
        first = reader.get("k2")
        assert first is not None and [s.solver for s in first.solutions] == ["H", "G"]
        builder = reader._index._builder
        assert builder is not None and builder.is_alive() and not reader._index._ready
        release.set()
        # The next lookup waits for the index and reads through it.
        record = reader.get("k")
        assert record is not None and record.to_line() == f"k=B:2,0,{ALGO}"
        assert reader._index._ready and reader.get("absent") is None
    finally:
        release.set()
        reader.close()
    assert [p.suffix for p in (tmp_path / "index").iterdir()] == [".idx"]


def test_a_damaged_or_foreign_kept_index_is_built_again(tmp_path: Path,
                                                        small_blocks: None) -> None:
    path = _tricky(tmp_path, True)
    index_dir = tmp_path / "index"
    LineIndex(path, index_dir).wait()
    (kept,) = index_dir.iterdir()
    whole = kept.read_bytes()
    for damaged in (whole[:-8], b"MKLIDX01" + whole[8:], b""):
        kept.write_bytes(damaged)
        again = LineIndex(path, index_dir)
        try:
            assert again.built  # not trusted: built again
            assert [line for _, line in again.lines("k")] == \
                [f"k=B:2,0,{ALGO}", f"k=E:5,0,{ALGO}"]
        finally:
            again.close()
        assert kept.read_bytes() == whole  # and kept again, whole
    assert [p.name for p in index_dir.iterdir()] == [kept.name]  # no temporary file left


@pytest.mark.parametrize("value", [
    f"A:0.5,0,{ALGO};B:0.25,16,{ALGO};C:0.25,8,{ALGO}",
    f"A:1e-3,0,{ALGO};B: 2,0,{ALGO};C:1_0,0,{ALGO}",
    f"ConvWinograd3x3MultipassWrW<3-2>:0.06032,19300,{ALGO}",
    f"{ALGO}:ConvOclDirectFwd,0.5,0,{ALGO},cfg;{ALGO}:Other,0.25,0,{ALGO},cfg",
])
def test_the_quick_path_reads_entries_as_parse_entry_does(value: str) -> None:
    record, version = parse_value("k", value)
    parsed = [parse_entry(e) for e in value.split(";")]
    assert {v for _, v in parsed} == {version}
    sols = [s for s, _ in parsed]
    assert list(record.solutions) == sorted(sols, key=lambda s: s.time)
    assert [s.time_text for s in record.solutions] == \
        [s.time_text for s in sorted(sols, key=lambda s: s.time)]
    assert list(record.written) == (sols if version == "2.0" else list(record.solutions))
    assert FindDbFile.parse(f"k={value}\n").get("k") == record


@pytest.mark.parametrize(("value", "reason"), [
    (f"A:nan,0,{ALGO}", "non-negative"),
    (f"A:inf,0,{ALGO}", "non-negative"),
    (f"A:-1,0,{ALGO}", "non-negative"),
    (f"A:fast,0,{ALGO}", "could not convert"),
    (f"A:1,-5,{ALGO}", "workspace"),
    (f"A:1,0,{ALGO};{ALGO}:B,1,0,{ALGO},cfg", "mixes"),
    ("A:1,0,notAnAlgo", "algorithm"),
    (f"{ALGO}:1,0,{ALGO}", "neither"),
    (":1,0,x", "is not '<id>:<values>'"),
])
def test_the_quick_path_refuses_what_parse_entry_refuses(value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_value("k", value)


def test_a_one_shot_reader_searches_the_file_and_builds_nothing(tmp_path: Path,
                                                                small_blocks: None) -> None:
    path = _tricky(tmp_path, True)
    expected, _ = _expected(path.read_bytes())
    index = LineIndex(path, tmp_path / "index", build=False)  # as `db lookup` opens a file
    try:
        for key in ("k", "k2", "last", "absent"):
            assert list(index.lines(key)) == \
                [(off, line) for off, _, line in expected.get(key, [])], key
        assert index._builder is None and not index._ready
    finally:
        index.close()
    assert not (tmp_path / "index").exists()
