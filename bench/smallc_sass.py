"""What the compiler made of the few-channel 3-D forward objects for sm_90 (no GPU): each
forward object a package ships (ConvTriton3dSmallCFwd on sm90-132) compiled as the builder
compiles it, and the same object of bench/_smallc_fwd_kernels.py's `divide` variant (the
column index split by signed divisions, as before), with `--tile M` also at the narrow tile
of M positions. Counts per object: instructions, registers and whether it spills to local
memory (Triton's own cuobjdump and nvdisasm, as bench/triton_conv_sass.py).

    python bench/smallc_sass.py [--narrow-m 128] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import triton_conv_sass  # noqa: E402 - bench/triton_conv_sass.py, beside this file


def _counts(blob: bytes) -> dict[str, Any]:
    from miopenkernels.launch_metadata import split_kdb_blob

    sass, res = triton_conv_sass.disassemble(split_kdb_blob(blob)[0])
    ops = triton_conv_sass.opcodes(sass)
    regs = re.search(r"REG:(\d+)", res)
    return {"instructions": sum(ops.values()), "registers": int(regs.group(1)) if regs else None,
            "spills": any(op.startswith(("STL", "LDL")) for op in ops)}


def _label(job: Any) -> str:
    opts = dict(o[2:].split("=", 1) for o in job.options if o.startswith("-D") and "=" in o)
    sig = next((o for o in job.options if o.startswith("--signature=")), "")
    x_type = re.search(r"x_ptr:\*(\w+)", sig)
    dtype = x_type.group(1).upper() if x_type else "?"
    aligned = any(o.startswith("--assume=") for o in job.options)
    return (f"{dtype} {opts.get('BLOCK_M')}x{opts.get('BLOCK_N')} "
            f"CHANNELS_LAST={opts.get('CHANNELS_LAST')} {'aligned' if aligned else 'generic'}")


def measure(narrow_m: int | None) -> list[dict[str, Any]]:
    from miopenkernels.compiler import TRITON, compile_job
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec
    from miopenkernels.solvers import get_solver
    from miopenkernels.solvers.triton_3d_smallc import _job
    from miopenkernels.target import Target

    if narrow_m is not None:
        spec.NARROW_M = narrow_m
        _job.cache_clear()
    alt = HERE / "_smallc_fwd_kernels.py"
    rows = []
    for job in get_solver("ConvTriton3dSmallCFwd").dynamic_jobs(Target("sm90", 132)):
        options = tuple(o if not o.startswith("--kernel=") else
                        "--kernel=conv3d_fwd_smallc_divide" for o in job.options)
        before = TRITON.compile_kernel(alt, "conv3d_fwd_smallc_divide", options, "sm90")
        rows.append({"object": _label(job), "divide": _counts(before),
                     "quotient": _counts(compile_job(job))})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--narrow-m", type=int, default=None,
                    help="the narrow tile's positions (default: the spec's NARROW_M)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    rows = measure(args.narrow_m)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| object | instructions (divide / quotient) | registers | spills |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        a, b = r["divide"], r["quotient"]
        print(f"| {r['object']} | {a['instructions']} / {b['instructions']} | "
              f"{a['registers']} / {b['registers']} | {a['spills']} / {b['spills']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
