"""Lookups in AMD's full databases through the runtime and the CLI, each in a fresh process.

gfx90a68.HIP.fdb.txt (193,590 lines) is the system FindDb of a gfx90a-104 Handle, gfx906_60.db
(SQLite) the system PerfDb of a gfx906-60 Handle (files from testdata/miopen, decompressed into
a temporary folder). For each: the first lookup of a process and the memory it added, without a
kept index (the first process ever on that file builds it) and with one (every later process:
--repeats of them, the one of median further p50 reported); further lookups of distinct keys
(mean, p50, p99, max) and the memory the whole run added (its peak, mapped file pages
included, and the process's own memory, RssAnon, at the end). In the first process on a text
file the first lookup searches the file and the index is built on a thread behind it, which the
next lookup waits for (its max) and whose CPU time counts in the process's.
`miopenkernels db lookup` as a whole process. Prints a table and writes JSON (default
bench/results/db_lookup-<N>cpu.json) with the machine. Wall times on a shared machine include
waiting for a CPU; the CPU times next to them do not.

    .venv/bin/python bench/db_lookup.py [--out FILE] [--keys N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _machine import cpu_model
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

# The child: one process, one Handle, the first lookup timed with its memory, then N more.
_CHILD = r'''
import json, os, random, resource, sys, time
from pathlib import Path

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

def anon():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["RssAnon"].split()[0]) * 1024

kind, keys_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
keys = json.loads(Path(keys_file).read_text())
from miopenkernels.backends import NullBackend
from miopenkernels.handle import Handle
from miopenkernels.target import Target
target = Target("gfx90a", 104) if kind == "finddb" else Target("gfx906", 60)
handle = Handle(backend=NullBackend(target), target=target)
if kind == "finddb":
    lookup = handle.finddb.lookup
else:
    from miopenkernels.db.perfdb import config_from_text_key
    keys = [config_from_text_key(k) for k in keys]
    lookup = handle.perfdb.load
rss0, hwm0 = rss()
anon0 = anon()
c0 = cpu()
t0 = time.perf_counter()
found = lookup(keys[0])
first = time.perf_counter() - t0
first_cpu = cpu() - c0
rss1, hwm1 = rss()
assert found, keys[0]
rest = keys[1:n + 1]
times = []
c0 = cpu()
for key in rest:
    t = time.perf_counter()
    assert lookup(key), key
    times.append(time.perf_counter() - t)
rest_cpu = cpu() - c0
rss2, hwm2 = rss()
anon2 = anon()
first_solutions = None
if kind == "finddb":
    from miopenkernels.problem import ConvProblem
    problem = ConvProblem.from_key(keys[-1])
    t = time.perf_counter()
    handle.solutions(problem)
    first_solutions = time.perf_counter() - t
times.sort()
print(json.dumps({
    "first_lookup_ms": first * 1e3,
    "first_lookup_cpu_ms": first_cpu * 1e3,
    "first_lookup_added_rss_mib": (rss1 - rss0) / 2**20,
    "first_lookup_added_peak_mib": (max(hwm1, rss1) - rss0) / 2**20,
    "further_lookups": len(times),
    "further_mean_us": sum(times) / len(times) * 1e6,
    "further_p50_us": times[len(times) // 2] * 1e6,
    "further_p99_us": times[int(len(times) * 0.99)] * 1e6,
    "further_max_us": times[-1] * 1e6,
    "further_added_peak_mib": (max(hwm2, rss2) - rss0) / 2**20,
    "further_added_anon_mib": (anon2 - anon0) / 2**20,
    "further_cpu_mean_us": rest_cpu / len(times) * 1e6,
    "first_handle_solutions_ms": first_solutions * 1e3 if first_solutions else None,
}))
'''


def _child(kind: str, keys: Path, n: int, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(keys), str(n)], env=env,
                         capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _cli(db: Path, query: str, env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU (user + sys) seconds of `miopenkernels db lookup` as a whole process."""
    import resource

    exe = Path(sys.executable).parent / "miopenkernels"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([str(exe), "db", "lookup", str(db), query], env=env, check=True,
                   capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime)
            + (after.ru_stime - before.ru_stime)}


def _finddb_keys(path: Path, n: int) -> list[str]:
    import random

    from miopenkernels.problem import ConvProblem

    lines = path.read_text().splitlines()
    keys = [ln.split("=", 1)[0] for ln in random.Random(1).sample(lines, n + 1)]
    # The last key is one the runtime can rebuild as a problem (for handle.solutions).
    for ln in lines:
        try:
            ConvProblem.from_key(ln.split("=", 1)[0])
        except Exception:  # noqa: BLE001, S112 - look for the next one
            continue
        keys.append(ln.split("=", 1)[0])
        break
    return keys


def _perfdb_keys(path: Path, n: int) -> list[str]:
    import random

    from miopenkernels.db.perfdb import CONFIG_COLUMNS, text_key

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute(f"SELECT {', '.join(CONFIG_COLUMNS)} FROM config WHERE id IN "
                        "(SELECT config FROM perf_db)").fetchall()
    conn.close()
    return [text_key(tuple(r)) for r in random.Random(1).sample(rows, n + 1)]


def main() -> int:
    from testdata import FULL_FINDDB, FULL_PERFDB, decompress_full

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keys", type=int, default=2000, help="Further lookups per process.")
    parser.add_argument("--repeats", type=int, default=3,
                        help="Later processes per database; the one of median further p50 is "
                             "reported, every p50 listed (the box's speed varies).")
    args = parser.parse_args()
    console = Console(stderr=True)
    out = args.out or ROOT / "bench" / "results" / f"db_lookup-{os.cpu_count()}cpu.json"
    load_before = [round(v, 2) for v in os.getloadavg()]
    rows = []
    with tempfile.TemporaryDirectory(prefix="mk-db-lookup-") as tmp:
        system = Path(tmp) / "system"
        system.mkdir()
        cases = {"finddb": decompress_full(FULL_FINDDB, system),
                 "perfdb": decompress_full(FULL_PERFDB, system)}
        for kind, db in cases.items():
            keys = _finddb_keys(db, args.keys) if kind == "finddb" else \
                _perfdb_keys(db, args.keys)
            keys_file = Path(tmp) / f"{kind}.keys.json"
            keys_file.write_text(json.dumps(keys))
            env = dict(os.environ, MIOPEN_SYSTEM_DB_PATH=str(system),
                       MIOPEN_USER_DB_PATH=str(Path(tmp) / f"user-{kind}"),
                       MIOPEN_CUSTOM_CACHE_DIR=str(Path(tmp) / "cache"))
            console.print(f"[dim]{db.name}: first process (builds the index)[/dim]")
            cold = _child(kind, keys_file, args.keys, env)
            console.print(f"[dim]{db.name}: later process (kept index)[/dim]")
            runs = sorted((_child(kind, keys_file, args.keys, env)
                           for _ in range(max(1, args.repeats))),
                          key=lambda m: m["further_p50_us"])
            warm = dict(runs[len(runs) // 2],
                        further_p50_us_each_process=[m["further_p50_us"] for m in runs])
            cli_env = dict(env, MIOPEN_USER_DB_PATH=str(Path(tmp) / f"cli-{kind}"))
            query = keys[0] if kind == "finddb" else None
            if query is None:
                from miopenkernels.db.perfdb import config_from_text_key
                from miopenkernels.problem import ConvProblem

                query = next(k for k in keys if _driver_key(config_from_text_key(k),
                                                            ConvProblem))
                query = _driver_key(config_from_text_key(query), ConvProblem)
            cli_cold = _cli(db, query, cli_env)
            cli_warm = _cli(db, query, cli_env)
            rows.append({"database": db.name, "size_bytes": db.stat().st_size, "cold": cold,
                         "warm": warm, "db_lookup_process_cold_s": cli_cold,
                         "db_lookup_process_warm_s": cli_warm, "query": query})
    load_after = [round(v, 2) for v in os.getloadavg()]

    table = Table(title="lookups in AMD's full databases (fresh process each)")
    for col in ("database", "index", "first ms (cpu)", "+peak MiB", "further us p50 (cpu)",
                "further max ms", "+peak (anon) MiB all", "db lookup s (cpu)"):
        table.add_column(col, justify="left" if col in ("database", "index") else "right")
    for r in rows:
        for label, key, cli in (("built now", "cold", "db_lookup_process_cold_s"),
                                ("kept", "warm", "db_lookup_process_warm_s")):
            m = r[key]
            table.add_row(r["database"], label,
                          f"{m['first_lookup_ms']:.1f} ({m['first_lookup_cpu_ms']:.1f})",
                          f"{m['first_lookup_added_peak_mib']:.1f}",
                          f"{m['further_p50_us']:.1f} ({m['further_cpu_mean_us']:.1f})",
                          f"{m['further_max_us'] / 1e3:.1f}",
                          f"{m['further_added_peak_mib']:.1f} "
                          f"({m['further_added_anon_mib']:.1f})",
                          f"{r[cli]['wall_s']:.2f} ({r[cli]['cpu_s']:.2f})")
    Console().print(table)
    import miopenkernels
    from miopenkernels.builder.package.manifest import git_revision

    result = {
        "benchmark": "db_lookup",
        "machine": {"description": "the project's 2-core development box (shared with other "
                                   "work: see the load averages)",
                    "cpus": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
                    "load_before": load_before, "load_after": load_after},
        "versions": {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                     "miopenkernels": miopenkernels.__version__, "tree": git_revision(ROOT)},
        "device": "none (database lookups run on the host)",
        "results": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {out}")
    return 0


def _driver_key(cfg: tuple, problem_cls: Any) -> str | None:
    """A FindDb key for a PerfDb config (2D forward rows), for `db lookup`."""
    from miopenkernels.db.perfdb import CONFIG_COLUMNS

    row = dict(zip(CONFIG_COLUMNS, cfg, strict=True))
    if row["spatial_dim"] != 2 or row["direction"] != "F" or "-" in row["layout"]:
        return None
    try:
        p = problem_cls(n=row["batchsize"], c=row["in_channels"], k=row["out_channels"],
                        in_spatial=(row["in_h"], row["in_w"]),
                        filter=(row["fil_h"], row["fil_w"]), pad=(row["pad_h"], row["pad_w"]),
                        stride=(row["conv_stride_h"], row["conv_stride_w"]),
                        dilation=(row["dilation_h"], row["dilation_w"]),
                        groups=row["group_count"], in_layout=row["layout"],
                        in_type=row["data_type"])
    except Exception:  # noqa: BLE001 - not every row is a problem this runtime can build
        return None
    return str(p.key())



if __name__ == "__main__":
    raise SystemExit(main())
