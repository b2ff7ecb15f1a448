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

`--dims 3` does the same for the 3-D depthwise family's phased objects on X3D-S's stride
(1, 2, 2) 3x3x3 layers (`LAYERS_3D`, NDHWC, batch 8): both objects loop over the depth taps
at run time, so their counts are one depth tap's program body (static counts, `loops` 1).

    python bench/depthwise_phased_sass.py [--dims 3] [--json] [--out STEM]

Prints a table; writes STEM.json where --out is given.
"""

from __future__ import annotations

import argparse
import json
import math
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


#: (name, channels, input depth and size): X3D-S's depthwise 3x3x3 layers at stride (1, 2, 2).
LAYERS_3D = (
    ("x3d_s 54 channels", 54, 13, 80),
    ("x3d_s 108 channels", 108, 13, 40),
    ("x3d_s 216 channels", 216, 13, 20),
    ("x3d_s 432 channels", 432, 13, 10),
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


def measure(layer: tuple[Any, ...], dims: int = 2) -> dict[str, Any]:
    from miopenkernels.compiler import compile_job
    from miopenkernels.kernels import conv_triton_depthwise3d_spec as spec3
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec2
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    target = Target("sm90", 132)
    if dims == 2:
        name, c, hw, f, pad = layer
        n, spatial, filt, stride, lay = 32, (hw, hw), (f, f), (2, 2), "NHWC"
        padding: tuple[int, ...] = (pad, pad)
        solver, spec, knob = get_solver("ConvTritonDepthwiseBwd"), spec2, "PHASED_FILTERS"
    else:
        name, c, depth, hw = layer
        n, spatial, filt, stride, lay = 8, (depth, hw, hw), (3, 3, 3), (1, 2, 2), "NDHWC"
        padding = (1, 1, 1)
        solver, spec, knob = get_solver("ConvTritonDepthwise3dBwd"), spec3, "PHASED_PLANES"
    p = ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=spatial, filter=filt, pad=padding,
                    stride=stride, direction="B", in_type="FP16", wei_type="FP16",
                    out_type="FP16", in_layout=lay, wei_layout=lay, out_layout=lay)
    params = solver.default_params(p, target)
    row: dict[str, Any] = {"layer": name, "key": p.key(), "params": list(params)}
    shipped = getattr(spec, knob)
    for variant, filters in (("phased", shipped), ("raster", ())):
        setattr(spec, knob, filters)
        try:
            from miopenkernels.solvers.triton_depthwise import _view
            from miopenkernels.solvers.triton_depthwise_3d import _view as _view3

            _view.cache_clear()
            _view3.cache_clear()
            job = solver.compile_job(p, params, target)
            launch = solver.launch(p, params)
            counts = _counts(compile_job(job))
        finally:
            setattr(spec, knob, shipped)
            _view.cache_clear()
            _view3.cache_clear()
        programs = launch.grid[0] * launch.grid[1] * launch.grid[2]
        elements = n * math.prod(spatial) * c
        counts.update(phased="-DPHASES=2" in job.options, grid=list(launch.grid),
                      instructions_per_k=counts["instructions"] * programs / elements * 1e3,
                      loads_per_k=counts["loads"] * programs / elements * 1e3)
        row[variant] = counts
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--out", help="path stem of a .json result")
    ap.add_argument("--dims", type=int, choices=(2, 3), default=2,
                    help="the 2-D family's layers (LAYERS) or the 3-D one's (LAYERS_3D)")
    args = ap.parse_args(argv)
    rows = [measure(layer, args.dims) for layer in (LAYERS if args.dims == 2 else LAYERS_3D)]
    import triton

    result = {"target": "sm90", "triton": triton.__version__, "dims": args.dims, "rows": rows}
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
