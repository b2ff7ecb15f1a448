"""Fuzzing the boundary: mutated driver lines, keys, rocminfo, text and SQLite databases, kdbs,
code objects (a real clang-19 offload bundle, its ELF, a cubin header), package manifests and
environment variables, through the real CLI (in-process)
and the library's entry points, and small hostile databases (a view over an endless query, a
generated column or a trigger on MIOpen's table, a bzip2 bomb, a line over the maximum line
length). Any exception that is not a MIOpenKernelsError, a traceback in
the CLI's output, a case that runs past its time, or a file written outside the temporary
folder fails the test.

The seed is fixed so CI is repeatable; `MIOPENKERNELS_FUZZ_SEED` and `MIOPENKERNELS_FUZZ_CASES`
run a fresh, longer campaign: `MIOPENKERNELS_FUZZ_SEED=$RANDOM MIOPENKERNELS_FUZZ_CASES=5000
pytest tests/unit/test_fuzz.py`.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from miopenkernels.cli import app
from miopenkernels.errors import MIOpenKernelsError
from testdata import MIOPEN, ROCMINFO
from typer.testing import CliRunner

SEED = int(os.environ.get("MIOPENKERNELS_FUZZ_SEED", "15"))
# Go on after a failure and report them all at the end (for long campaigns).
KEEP_GOING = os.environ.get("MIOPENKERNELS_FUZZ_KEEP_GOING") == "1"
FAILURES: list[str] = []
CASES = int(os.environ.get("MIOPENKERNELS_FUZZ_CASES", "12"))
CASE_LIMIT_S = 10
_SHARD_PERFDB = Path(__file__).resolve().parents[1] / "fixtures" / "shards" / "rehearsal.db.txt"

# Pieces an attacker or a careless user puts where numbers, names and paths go.
TOKENS = ["²", "٣", "0", "-1", "-0", "+5", "2147483648", "9223372036854775808", "9" * 5000,
          "1e9", "nan", "..", "../..", "/etc/passwd", "\x00", "\t", " " * 3000, "=", ";", ":",
          ",", "x", "-", "NULL", "'", '"', "\\", "\u202e", "\udcff", "ﬁ", "gfx90a", "sm90",
          "--", "-n", "-g", "1" * 40]


def _mutate(rng: random.Random, text: str) -> str:
    out = text
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        pos = rng.randint(0, len(out))
        if op == 0 and out:  # replace a field-like run
            end = min(len(out), pos + rng.randint(1, 8))
            out = out[:pos] + rng.choice(TOKENS) + out[end:]
        elif op == 1:
            out = out[:pos] + rng.choice(TOKENS) + out[pos:]
        elif op == 2 and out:
            out = out[:pos] + out[pos + rng.randint(1, 16):]
        elif op == 3:
            out = out[:pos] + chr(rng.randrange(1, 0x3000)) + out[pos:]
        else:
            out = out[:pos] + out[pos:pos + rng.randint(1, 64)] * rng.randint(2, 40) + out[pos:]
    return out


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        pos = rng.randrange(len(out)) if out else 0
        if op == 0 and out:
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 1 and out:
            del out[pos:pos + rng.randint(1, 512)]
        elif op == 2:
            out[pos:pos] = rng.randbytes(rng.randint(1, 32))
        elif out:
            out[pos:pos + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8, b"\x7f" * 8])
    return bytes(out)


@contextmanager
def _deadline(what: str) -> Iterator[None]:
    def expired(*_: object) -> None:
        raise AssertionError(f"fuzz case ran past {CASE_LIMIT_S} s: {what}")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(CASE_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fail(message: str, exc: BaseException | None = None) -> None:
    if KEEP_GOING:
        FAILURES.append(message)
        return
    raise AssertionError(message) from exc


def _library(fn: Callable[[], Any], what: str) -> None:
    with _deadline(what):
        try:
            fn()
        except MIOpenKernelsError:
            pass
        except Exception as exc:  # noqa: BLE001 - this is what the test looks for
            _fail(f"{what}: {type(exc).__name__}: {exc!s:.300}", exc)


def _cli(args: list[str], what: str, env: dict[str, str] | None = None) -> None:
    with _deadline(what):
        r = CliRunner().invoke(app, args, env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        _fail(f"{what}: {type(r.exception).__name__}: {r.exception!s:.300}", r.exception)
    elif "Traceback" in r.output:
        _fail(f"{what}: {r.output[-2000:]}")


# ---------------------------------------------------------------------------- seeds
def _driver_lines() -> list[str]:
    lines = (MIOPEN / "driver_cmds_mituna_utils_recurrent_cfgs_resnet50.txt").read_text()
    return [ln for ln in lines.splitlines() if ln.strip()][:40] + [
        "pool -n 2 -c 3 -H 8 -W 8 -y 2 -x 2 -p 0 -q 0 -u 2 -v 2 -m max -F 1",
        "conv -n 1 -c 4 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -g 1"]


def _keys() -> list[str]:
    text = (MIOPEN / "fdb_gfx90a6e_HIP_sample.txt").read_text()
    return [ln.split("=", 1)[0] for ln in text.splitlines() if "=" in ln][:40]


def _texts() -> dict[str, str]:
    return {"HIP.fdb.txt": (MIOPEN / "fdb_gfx90a6e_HIP_sample.txt").read_text()[:20000],
            "db.txt": _SHARD_PERFDB.read_text()[:20000],
            "cd.pdb.txt": (MIOPEN / "perfdb_legacy_text_gfx803_36_cd_pdb_2019.txt")
            .read_text()[:20000]}


def _sqlite_perfdb(path: Path) -> bytes:
    from miopenkernels.db import PerfDbFile

    db = PerfDbFile.parse(_SHARD_PERFDB.read_text())
    db.write_sqlite(path)
    return path.read_bytes()


_CODE_OBJECT = (Path(__file__).resolve().parents[1] / "fixtures" / "codeobjects"
                / "tiny_gfx906.co")


def _code_objects() -> list[bytes]:
    """A real offload bundle (clang-19, gfx906), the ELF inside it, and a cubin header."""
    from find_doubles import fake_cubin

    bundle = _CODE_OBJECT.read_bytes()
    start = bundle.find(b"\x7fELF")
    return [bundle, bundle[start:], fake_cubin(90, ["k"])]


def _kdb(path: Path) -> bytes:
    from find_doubles import fake_cubin
    from miopenkernels.db import KernelDb

    with KernelDb(path, readonly=False, wal=False) as kdb:
        for i in range(3):
            kdb.store(f"k{i}.o", "-mcpu=sm_90", fake_cubin(90, [f"k{i}"]) * (i + 1))
    return path.read_bytes()


# A query that never ends, behind columns that read as MIOpen's.
_ENDLESS = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT i FROM r WHERE i < 0")


def _hostile_db(rng: random.Random, folder: Path, case: int) -> Path:
    """A small database file of one of the hostile classes: MIOpen's table a view over an
    endless query, a generated column or a trigger on it, a bzip2 bomb in a kdb row, a text
    line far over the maximum line length."""
    import bz2

    from miopenkernels.db.kerneldb import KDB_SCHEMA_SQL

    kind = rng.choice(["view-kdb", "view-perfdb", "bomb", "generated", "trigger", "long-line"])
    if kind == "long-line":
        path = folder / f"h{case}.HIP.fdb.txt"
        key = _keys()[0]
        path.write_bytes(key.encode() + b"=" + b"S:1,0,miopenConvolutionFwdAlgoDirect;" *
                         rng.randint(30_000, 90_000) + b"\n" + key.encode() + b"=\n")
        return path
    path = folder / f"h{case}.{'db' if kind == 'view-perfdb' else 'kdb'}"
    conn = sqlite3.connect(path)
    cols = "id, kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size"
    if kind == "view-kdb":
        conn.execute(f"CREATE VIEW kern_db ({cols}) AS SELECT i, 'k.o', '-mcpu=gfx906', "
                     f"x'00', 'h', 0 FROM ({_ENDLESS})")
    elif kind == "view-perfdb":
        conn.execute("CREATE TABLE config (id INTEGER PRIMARY KEY, layout, data_type, "
                     "direction)")
        conn.execute(f"CREATE VIEW perf_db (id, solver, config, params) AS SELECT i, 's', i, "
                     f"'p' FROM ({_ENDLESS})")
    elif kind == "generated":
        conn.execute("CREATE TABLE kern_db (id INTEGER PRIMARY KEY, kernel_name TEXT, "
                     "kernel_args TEXT, kernel_blob BLOB AS (zeroblob(100000000)), "
                     "kernel_hash TEXT, uncompressed_size INT)")
        conn.execute("INSERT INTO kern_db (kernel_name, kernel_args, kernel_hash, "
                     "uncompressed_size) VALUES ('k.o', '-mcpu=gfx906', 'h', 0)")
    else:
        for s in KDB_SCHEMA_SQL.split(";"):
            if s.strip():
                conn.execute(s)
        comp = bz2.BZ2Compressor(9)
        stored = b"".join(comp.compress(bytes(1 << 20)) for _ in range(rng.randint(2, 40)))
        conn.execute("INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
                     "uncompressed_size) VALUES ('k.o', '-mcpu=gfx906', ?, ?, ?)",
                     (stored + comp.flush(), "0" * 32, rng.choice([1, 4096, 1 << 40])))
        if kind == "trigger":
            conn.execute(f"CREATE TRIGGER t AFTER INSERT ON kern_db BEGIN SELECT count(*) "
                         f"FROM ({_ENDLESS}); END")
    conn.commit()
    conn.close()
    return path


# ---------------------------------------------------------------------------- the campaign
@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every place a command might write points into tmp_path; the test fails if anything
    appears in the working folder or home it was given."""
    for name in ("home", "work", "user", "cache", "sys"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "user"))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(tmp_path / "sys"))
    for var in ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_DEVICE_ARCH",
                "MIOPEN_DEVICE_CU", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def test_fuzz_the_boundary(sandbox: Path) -> None:
    from miopenkernels import config
    from miopenkernels.codeobject import check_code_object, read_code_object
    from miopenkernels.db import FindDbFile, KernelDb, PerfDbFile
    from miopenkernels.detect.rocminfo import parse_rocminfo
    from miopenkernels.driver import parse_driver_line
    from miopenkernels.install.manifest import check_manifest, read_manifest
    from miopenkernels.problem import ConvProblem
    from miopenkernels.target import Target

    rng = random.Random(SEED)
    files = sandbox / "files"
    files.mkdir()
    lines, keys, texts = _driver_lines(), _keys(), _texts()
    rocminfos = [p.read_text() for p in sorted(ROCMINFO.glob("*.txt"))]
    perfdb, kdb = _sqlite_perfdb(files / "seed.db"), _kdb(files / "seed.kdb")
    codes = _code_objects()
    manifest = ('{"schema": 1, "package": "miopenkernels-gfx906-60", "version": "0.1.0", '
                '"target": {"arch": "gfx906", "cu": 60}, "files": {"share/miopen/db/'
                'gfx906_60.kdb": {"sha256": "00", "size": 1}}}')
    envs = ["MIOPEN_DEVICE_CU", "MIOPEN_DEVICE_ARCH", "MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE",
            "MIOPEN_DISABLE_CACHE"]

    for case in range(CASES):
        what = f"seed {SEED} case {case}"
        line = _mutate(rng, rng.choice(lines))
        _library(lambda line=line: parse_driver_line(line), f"{what} driver {line!r:.200}")
        _cli(["problem", line, "--json"], f"{what} problem {line!r:.200}")

        key = _mutate(rng, rng.choice(keys))
        _library(lambda key=key: ConvProblem.from_key(key), f"{what} key {key!r:.200}")
        target = _mutate(rng, rng.choice(["gfx90a-104", "sm90-132", "gfx1100-48"]))
        _library(lambda t=target: Target.parse(t), f"{what} target {target!r:.200}")

        info = _mutate(rng, rng.choice(rocminfos))
        _library(lambda info=info: parse_rocminfo(info), f"{what} rocminfo")
        rpath = files / f"rocminfo{case}.txt"
        rpath.write_text(info, errors="surrogatepass")
        _cli(["detect", "--rocminfo-file", str(rpath), "--json"], f"{what} detect {rpath}")

        suffix, seed_text = rng.choice(sorted(texts.items()))
        text = _mutate(rng, seed_text)
        tpath = files / f"t{case}.{suffix}"
        tpath.write_text(text, errors="surrogatepass")
        parse = FindDbFile.read if "fdb" in suffix else PerfDbFile.read
        _library(lambda p=tpath, parse=parse: parse(p), f"{what} text db {tpath.name}")
        _cli(["db", "inspect", str(tpath), "--json"], f"{what} db inspect {tpath.name}")

        spath = files / f"s{case}.db"
        spath.write_bytes(_mutate_bytes(rng, perfdb))
        _library(lambda p=spath: PerfDbFile.read(p), f"{what} sqlite perfdb")
        _cli(["db", "inspect", str(spath), "--json"], f"{what} db inspect sqlite")
        src, dst = rng.choice([(spath, f"o{case}.db.txt"), (tpath, f"o{case}.udb")])
        _cli(["db", "convert", str(src), str(files / dst)], f"{what} db convert {src.name}")

        kpath = files / f"k{case}.kdb"
        kpath.write_bytes(_mutate_bytes(rng, kdb))

        def read_kdb(p: Path = kpath) -> None:
            with KernelDb(p) as db:
                list(db.verify())
                for e in db.entries():
                    db.load(e.kernel_name, e.kernel_args)

        _library(read_kdb, f"{what} kdb")
        _cli(["kdb", "verify", str(kpath), "--json"], f"{what} kdb verify")

        hpath = _hostile_db(rng, files, case)
        for args in (["kdb", "list", str(hpath), "--json"], ["kdb", "verify", str(hpath)],
                     ["db", "inspect", str(hpath), "--json"]):
            if hpath.suffix == ".kdb" or args[0] == "db":
                _cli(args, f"{what} {' '.join(args[:2])} {hpath.name}")
        if hpath.suffix == ".kdb":
            _library(lambda p=hpath: read_kdb(p), f"{what} kdb {hpath.name}")
        elif hpath.suffix == ".db":
            _library(lambda p=hpath: PerfDbFile.read(p), f"{what} perfdb {hpath.name}")
        else:
            _library(lambda p=hpath: FindDbFile.read(p), f"{what} finddb {hpath.name}")

        blob = _mutate_bytes(rng, rng.choice(codes))
        arch = rng.choice(["gfx906", "gfx90a", "sm90"])
        _library(lambda b=blob, a=arch: read_code_object(b, "fuzz", a), f"{what} code object")
        _library(lambda b=blob, a=arch: check_code_object(b, a, "tiny", bare=False),
                 f"{what} code object check")
        cpath = files / f"c{case}.kdb"
        with KernelDb(cpath, readonly=False, wal=False) as cdb:
            cdb.store("tiny.o", f"-mcpu={arch}", blob)  # its md5 matches: the ELF is the bait
        _cli(["kdb", "verify", str(cpath), "--json"], f"{what} kdb verify code object")

        mtext = _mutate(rng, manifest)
        mpath = files / f"m{case}.manifest.json"
        mpath.write_text(mtext, errors="surrogatepass")
        _library(lambda p=mpath: read_manifest(p), f"{what} manifest {mtext!r:.200}")
        _library(lambda: check_manifest(rng.choice([[], None, {"files": [], "target": 1}]),
                                        "fuzz"), f"{what} manifest shape")
        prefix = files / f"prefix{case}"
        (prefix / "share" / "miopenkernels").mkdir(parents=True)
        (prefix / "share" / "miopenkernels" / "gfx906_60.manifest.json").write_text(
            mtext, errors="surrogatepass")
        _cli(["verify", "--prefix", str(prefix), "--json"], f"{what} verify {mtext!r:.200}")

        var = rng.choice(envs)
        value = _mutate(rng, rng.choice(["1", "64", "gfx90a", "NORMAL", "3"]))
        if "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            _cli(["detect", "--rocminfo-file", str(ROCMINFO / "gfx90a_mi250x.txt")],
                 f"{what} detect {var}={value!r:.100}", env={var: value})
            os.environ[var] = value
            try:
                _library(config.device_overrides, f"{what} {var}={value!r:.100}")
                _library(config.find_mode, f"{what} {var}={value!r:.100}")
                _library(config.find_enforce, f"{what} {var}={value!r:.100}")
            finally:
                del os.environ[var]

    assert not FAILURES, f"{len(FAILURES)} failures:\n" + "\n".join(FAILURES)
    # Nothing written outside the sandbox's own folders.
    assert list((sandbox / "home").iterdir()) == []
    assert list((sandbox / "work").iterdir()) == []
    # The seeds themselves stayed readable: the campaign fuzzed copies.
    assert PerfDbFile.read(files / "seed.db").records
    sqlite3.connect(files / "seed.kdb").close()
