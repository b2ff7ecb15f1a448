"""Hostile input: how long the boundary takes to parse or refuse what an attacker hands it.

Cases (each the median of `--repeats` runs, in this process, parser only):
- rocminfo_256k_spaces: `read_rocminfo_file` on one 256 KiB line of spaces (was 140 s when the
  field pattern backtracked quadratically);
- rocminfo_1m_field_lines: a file just under the 1 MiB limit of 1 KiB field-like lines;
- rocminfo_dev_zero: `/dev/zero` as rocminfo output (grew to 8.7 GB when it was read whole);
- channel_dev_zero: `/dev/zero` as an index file (`read_url`);
- cli_detect_256k_spaces / cli_detect_help: wall time of `miopenkernels detect --rocminfo-file`
  on the 256 KiB line, and of `miopenkernels --help` (interpreter start and imports) beside it;
- manifest_20k / 40k / 80k: `load_manifest` of that many distinct MIOpenDriver lines (what
  `package -m` reads), to show it linear (was 4.5/13/53 s, then 75 us a line).
Prints a table and writes JSON.

    python bench/hostile_input.py --out bench/results/hostile_input-2cpu.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _timed(fn: Callable[[], object], repeats: int) -> float:
    from miopenkernels.errors import MIOpenKernelsError

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with contextlib.suppress(MIOpenKernelsError):
            fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from miopenkernels import __version__
    from miopenkernels.detect.rocminfo import MAX_ROCMINFO_BYTES, read_rocminfo_file
    from miopenkernels.install.sources import read_url

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        spaces = Path(tmp) / "spaces.txt"
        spaces.write_text(" " * (256 << 10))
        fields = Path(tmp) / "fields.txt"
        fields.write_text("Agent 1\n" + ("x" + " " * 1000 + ":\n") * (MAX_ROCMINFO_BYTES // 1010))
        results["rocminfo_256k_spaces"] = _timed(lambda: read_rocminfo_file(spaces), args.repeats)
        results["rocminfo_1m_field_lines"] = _timed(lambda: read_rocminfo_file(fields),
                                                    args.repeats)
        results["rocminfo_dev_zero"] = _timed(lambda: read_rocminfo_file("/dev/zero"),
                                              args.repeats)
        results["channel_dev_zero"] = _timed(lambda: read_url("file:///dev/zero", "index"),
                                             args.repeats)
        cli = [sys.executable, "-c", "from miopenkernels.cli import main; main()"]
        run = subprocess.run
        results["cli_detect_256k_spaces"] = _timed(
            lambda: run([*cli, "detect", "--rocminfo-file", str(spaces)], capture_output=True),
            args.repeats)
        results["cli_detect_help"] = _timed(lambda: run([*cli, "--help"], capture_output=True),
                                            args.repeats)
        from miopenkernels.builder.manifest import load_manifest

        for lines in (20_000, 40_000, 80_000):
            manifest = Path(tmp) / f"m{lines}.txt"
            manifest.write_text("".join(
                f"./bin/MIOpenDriver conv -n {1 + i % 64} -c {1 + i // 64} -H 14 -W 14 -k 8 "
                "-y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -m conv -F 1 -t 1\n"
                for i in range(lines)))
            results[f"manifest_{lines // 1000}k"] = _timed(
                lambda m=manifest: load_manifest(m), max(1, args.repeats // 2))

    print(f"{'case':28s} {'median s':>10s}")
    for name, seconds in results.items():
        print(f"{name:28s} {seconds:10.4f}")
    if args.out:
        record = {"bench": "hostile_input", "results_s": results, "repeats": args.repeats,
                  "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                              "python": platform.python_version(),
                              "load_average": os.getloadavg()},
                  "miopenkernels": __version__}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
