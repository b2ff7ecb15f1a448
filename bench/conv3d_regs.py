"""Registers of the 3-D implicit GEMM's forward and backward-data objects for sm_90, without a
GPU: each case's object (the solver's defaults on R3D-18's second-stage 3x3x3 layer at batch 32,
64 -> 64 at 8x28x28) compiled ahead of time as the builder does, from this tree's kernels or
another kernels folder (`--kernels DIR`, e.g. a copy holding an earlier kernels/conv_triton_3d.py),
and the registers per thread that cuobjdump reports, with the blocks an SM then holds (65,536
registers an SM; the other limits left out). Compare two folders to see what a kernel change did
to the objects before timing them. `--maxnreg N` compiles them under ptxas's register cap N
(Triton's `maxnreg`) and reports whether they then spill (local-memory loads or stores in
the SASS). `--split` compiles the split objects instead (forward's and backward data's SPLIT 1,
what a launch split on a small grid runs).

    python bench/conv3d_regs.py [--kernels DIR] [--maxnreg N] [--split] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from triton_conv_sass import disassemble  # noqa: E402 - bench/triton_conv_sass.py

LAYER = "64-8-28-28-3x3x3-64-8-28-28-32-1x1x1-1x1x1-1x1x1-0-{layout}-{type}-{direction}"
CASES = [("ConvTriton3dFwd", "NCDHW", "FP32", "F"), ("ConvTriton3dBwd", "NCDHW", "FP32", "B"),
         ("ConvTriton3dFwd", "NCDHW", "FP16", "F"), ("ConvTriton3dBwd", "NCDHW", "FP16", "B"),
         ("ConvTriton3dTf32x3Fwd", "NCDHW", "FP32", "F"),
         ("ConvTriton3dTf32x3Bwd", "NCDHW", "FP32", "B"),
         ("ConvTriton3dFwd", "NDHWC", "FP32", "F"), ("ConvTriton3dBwd", "NDHWC", "FP16", "B"),
         ("ConvTriton3dFwd", "NDHWC", "FP16", "F")]
REGISTERS_PER_SM = 65536


def _key(layout: str, data_type: str, direction: str) -> str:
    lay = layout if layout == "NCDHW" else "-".join([layout] * 3)
    return LAYER.format(layout=lay, type=data_type, direction=direction)


def report(kernels: Path, maxnreg: int = 0, split: bool = False) -> list[dict]:
    from miopenkernels.compiler.triton import TritonCompiler
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target
    from triton_conv_sass import opcodes

    target = Target("sm90", 132)
    rows = []
    for name, layout, data_type, direction in CASES:
        solver = get_solver(name)
        p = ConvProblem.from_key(_key(layout, data_type, direction))
        params = solver.default_params(p, target)
        if split:  # SPLIT_K, the fifth parameter: any split above one takes the split object
            params = (*params[:4], 2, *params[5:])
        job = solver.compile_job(p, params, target)
        options = [*job.options, *([f"--maxnreg={maxnreg}"] if maxnreg else [])]
        blob = TritonCompiler().compile_kernel(kernels / job.kernel_file, job.kernel_name,
                                               options, "sm90")
        sass, usage = disassemble(blob[blob.find(b"\x7fELF"):])
        ops = opcodes(sass)
        regs = int(re.search(r"REG:(\d+)", usage).group(1))  # type: ignore[union-attr]
        threads = int(params[5]) * 32
        rows.append({"solver": name, "case": f"{data_type}-{direction}-{layout}",
                     "params": list(params), "registers": regs,
                     "blocks_per_sm": REGISTERS_PER_SM // (regs * threads),
                     "spills": any(op.startswith(("STL", "LDL")) for op in ops)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=Path, default=HERE.parent / "kernels",
                    help="the kernels folder to compile from (default: this tree's)")
    ap.add_argument("--maxnreg", type=int, default=0, metavar="N",
                    help="compile under a register cap of N a thread (0: none)")
    ap.add_argument("--split", action="store_true",
                    help="the split objects (forward and backward data split on a small grid)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    if args.maxnreg and not 24 <= args.maxnreg <= 255:
        print(f"conv3d_regs: --maxnreg {args.maxnreg}: a cap is 24-255 registers a thread",
              file=sys.stderr)
        return 2
    if not (args.kernels / "conv_triton_3d.py").is_file():
        print(f"conv3d_regs: no conv_triton_3d.py in {args.kernels}: name a kernels folder",
              file=sys.stderr)
        return 2
    rows = report(args.kernels, args.maxnreg, args.split)
    if args.json:
        print(json.dumps({"kernels": str(args.kernels), "maxnreg": args.maxnreg,
                          "split": args.split, "rows": rows},
                         indent=1))
    else:
        for r in rows:
            print(f"{r['solver']:24} {r['case']:14} registers {r['registers']:3}  "
                  f"blocks/SM {r['blocks_per_sm']}{'  spills' if r['spills'] else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
