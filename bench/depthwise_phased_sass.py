"""What the phased depthwise backward-data objects cost per program against the raster-order
ones they replace, counted in their sm_90 SASS (no GPU).

For each stride-2 depthwise layer of `LAYERS` (channels-last, FP16, batch 32) the object
ConvTritonDepthwiseBwd ships for it is compiled as the builder compiles it, once as shipped
(phased: conv_triton_depthwise_spec.PHASED_FILTERS) and once with the phased objects off
(the raster-order object it ran before). Both tiles are the same (BLOCK_M pixels x BLOCK_N
channels a program). Where the taps are unrolled whole (3x3, 5x5; the phased 7x7's 16) the
counts are a program's: instructions, global loads (LDG), integer-division steps (the
reciprocal MUFU.RCP that Triton's signed division expands to) and registers, and per 1,000
elements of dx, the same over the launch's programs (the phased grid walks four phases of a
quarter of the pixels each). The raster 7x7 object loops over its seven filter rows
(`loops`): its static counts are not a program's, and its row is left uncompared.

    python bench/depthwise_phased_sass.py [--json] [--out STEM]

Prints a table; writes STEM.json where --out is given.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import triton_conv_sass  # noqa: E402 - bench/triton_conv_sass.py, beside this file

#: (name, channels, input size, filter, padding): the zoo's stride-2 depthwise layers.
LAYERS = (
    ("mobilenet_v2 features.2.conv.1 (3x3)", 96, 112, 3, 1),
    ("mobilenet_v3_large features.4.block.1 (5x5)", 72, 56, 5, 2),
    ("efficientnet_b0 features.3.0.block.1 (5x5)", 144, 56, 5, 2),
    ("mnasnet1_0 layers.9.0 (5x5, held out)", 240, 28, 5, 2),
    ("a 7x7 stride-2 layer", 128, 56, 7, 3),
)


def _sass(blob: bytes) -> tuple[str, str]:
    """(SASS, resource usage) of a kdb blob's cubin (bench/triton_conv_sass.py's tools)."""
    from miopenkernels.launch_metadata import split_kdb_blob

    code, _ = split_kdb_blob(blob)
    return triton_conv_sass.disassemble(code)


def _counts(blob: bytes) -> dict[str, Any]:
    sass, res = _sass(blob)
    ops = triton_conv_sass.opcodes(sass)
    regs = re.search(r"REG:(\d+)", res)
    # A branch back to an earlier label: a loop, whose body the static counts hold once (the
    # branch to itself that ends every kernel is not one).
    back = 0
    labels = {m.group(1): int(m.group(2), 16) for m in re.finditer(
        r"^(\.L_x_\d+):\s*\n\s*/\*([0-9a-f]+)\*/", sass, re.M)}
    for m in re.finditer(r"/\*([0-9a-f]+)\*/[^\n]*\bBRA\b[^\n]*?`?\(?(\.L_x_\d+)", sass):
        if m.group(2) in labels and labels[m.group(2)] < int(m.group(1), 16):
            back += 1
    return {"instructions": sum(ops.values()), "loops": back,
            "loads": sum(n for op, n in ops.items() if op.startswith("LDG")),
            "divisions": sum(n for op, n in ops.items() if op.startswith("MUFU.RCP")),
            "branches": sum(n for op, n in ops.items() if op.startswith("BRA")),
            "registers": int(regs.group(1)) if regs else None}


def measure(layer: tuple[str, int, int, int, int]) -> dict[str, Any]:
    from miopenkernels.compiler import compile_job
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    name, c, hw, f, pad = layer
    target = Target("sm90", 132)
    p = ConvProblem(n=32, c=c, k=c, groups=c, in_spatial=(hw, hw), filter=(f, f),
                    pad=(pad, pad), stride=(2, 2), direction="B", in_type="FP16",
                    wei_type="FP16", out_type="FP16", in_layout="NHWC", wei_layout="NHWC",
                    out_layout="NHWC")
    solver = get_solver("ConvTritonDepthwiseBwd")
    params = solver.default_params(p, target)
    row: dict[str, Any] = {"layer": name, "key": p.key(), "params": list(params)}
    shipped = spec.PHASED_FILTERS
    for variant, filters in (("phased", shipped), ("raster", ())):
        spec.PHASED_FILTERS = filters
        try:
            from miopenkernels.solvers.triton_depthwise import _view

            _view.cache_clear()
            job = solver.compile_job(p, params, target)
            launch = solver.launch(p, params)
            counts = _counts(compile_job(job))
        finally:
            spec.PHASED_FILTERS = shipped
            _view.cache_clear()
        programs = launch.grid[0] * launch.grid[1] * launch.grid[2]
        elements = 32 * hw * hw * c
        counts.update(phased="-DPHASES=2" in job.options, grid=list(launch.grid),
                      instructions_per_k=counts["instructions"] * programs / elements * 1e3,
                      loads_per_k=counts["loads"] * programs / elements * 1e3)
        row[variant] = counts
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--out", help="path stem of a .json result")
    args = ap.parse_args(argv)
    rows = [measure(layer) for layer in LAYERS]
    import triton

    result = {"target": "sm90", "triton": triton.__version__, "rows": rows}
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| layer | tile | instructions (phased / raster) | LDG | MUFU.RCP | registers |"
          " warp instructions per 1,000 elements of dx |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        a, b = r["phased"], r["raster"]
        looped = " (raster: a loop)" if b["loops"] else ""
        print(f"| {r['layer']}{looped} | {r['params'][0]}x{r['params'][1]} | "
              f"{a['instructions']} / {b['instructions']} | {a['loads']} / {b['loads']} | "
              f"{a['divisions']} / {b['divisions']} | {a['registers']} / {b['registers']} | "
              f"{a['instructions_per_k']:.0f} / {b['instructions_per_k']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
