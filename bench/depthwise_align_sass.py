"""What the depthwise objects assuming pairs of channels or multiples of 4 (FP32) cost per
program against the objects those layers took before, counted in their sm_90 SASS (no GPU).

For each layer of `LAYERS` (channels-last, batch 32, every direction) the object the depthwise
family ships for it is compiled as the builder compiles it, once as shipped
(`conv_triton_depthwise_spec.alignment`) and once as before (bench/depthwise_align_ab.py's
`unalign`: FP32 aligned objects assuming multiples of 16, no pair objects), at the same tile.
Per program: instructions, global loads (LDG) and registers, and the `--assume` each object
was compiled with (C's divisor; none: no assumption). A 64-channel FP32 layer, aligned both
ways, shows what assuming 4 instead of 16 changes where both hold.

    python bench/depthwise_align_sass.py [--json] [--out STEM]

Prints a table; writes STEM.json where --out is given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import depthwise_phased_sass  # noqa: E402 - bench/depthwise_phased_sass.py, beside this file

#: (name, type, channels, spatial input, filter, stride): ShuffleNet-v2's and X3D-S's layers
#: of even channels not a multiple of 8, MobileNet-v3's of multiples of 4 not of 16, and a
#: 64-channel layer both ways aligned.
LAYERS = (
    ("shufflenet_v2 58 3x3", "FP16", 58, (28, 28), (3, 3), 1),
    ("shufflenet_v2 58 3x3 stride 2", "FP16", 58, (56, 56), (3, 3), 2),
    ("shufflenet_v2 116 3x3", "BF16", 116, (14, 14), (3, 3), 1),
    ("shufflenet_v2 58 3x3, FP32", "FP32", 58, (28, 28), (3, 3), 1),
    ("x3d_s 54 3x3x3", "FP16", 54, (13, 40, 40), (3, 3, 3), 1),
    ("mobilenet_v3 72 3x3", "FP32", 72, (56, 56), (3, 3), 1),
    ("mobilenet_v3 120 5x5", "FP32", 120, (28, 28), (5, 5), 1),
    ("64 3x3 (both aligned)", "FP32", 64, (28, 28), (3, 3), 1),
)
SOLVERS = {(2, "F"): "ConvTritonDepthwiseFwd", (2, "B"): "ConvTritonDepthwiseBwd",
           (2, "W"): "ConvTritonDepthwiseWrw", (3, "F"): "ConvTritonDepthwise3dFwd",
           (3, "B"): "ConvTritonDepthwise3dBwd", (3, "W"): "ConvTritonDepthwise3dWrw"}


def _assumed_c(options: tuple[str, ...]) -> int | None:
    text = next((o for o in options if o.startswith("--assume=")), None)
    if text is None:
        return None
    return next(int(a[2:]) for a in text[len("--assume="):].split(",") if a.startswith("C:"))


def _clear_caches() -> None:
    from miopenkernels.solvers import triton_depthwise

    triton_depthwise._job.cache_clear()


def measure(layer: tuple[Any, ...], direction: str) -> dict[str, Any]:
    import depthwise_align_ab
    from miopenkernels.compiler import compile_job
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    name, dtype, c, spatial, filt, stride = layer
    dims = len(spatial)
    lay = "NHWC" if dims == 2 else "NDHWC"
    target = Target("sm90", 132)
    p = ConvProblem(n=32 if dims == 2 else 8, c=c, k=c, groups=c, in_spatial=spatial,
                    filter=filt, pad=tuple(f // 2 for f in filt),
                    stride=(1,) * (dims - 2) + (stride, stride), direction=direction,
                    in_type=dtype, wei_type=dtype, out_type=dtype, in_layout=lay,
                    wei_layout=lay, out_layout=lay)
    solver = get_solver(SOLVERS[(dims, direction)])
    params = solver.default_params(p, target)
    row: dict[str, Any] = {"layer": name, "type": dtype, "direction": direction,
                           "key": p.key(), "params": list(params)}
    from miopenkernels.kernels import conv_triton_depthwise3d_spec as spec3
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec

    saved = [(m, m.PAIR_FILTERS, m.align_divisor) for m in (spec, spec3)]
    for variant in ("shipped", "before"):
        if variant == "before":
            depthwise_align_ab.unalign()
        _clear_caches()
        try:
            job = solver.compile_job(p, params, target)
            counts = depthwise_phased_sass._counts(compile_job(job))
        finally:
            for m, pairs, divisor in saved:
                m.PAIR_FILTERS, m.align_divisor = pairs, divisor
            _clear_caches()
        row[variant] = {"assumed_c": _assumed_c(job.options), **{
            k: counts[k] for k in ("instructions", "loads", "registers", "loops")}}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--out", help="path stem of a .json result")
    args = ap.parse_args(argv)
    from rich.progress import track

    work = [(layer, d) for layer in LAYERS for d in "FBW"]
    rows = [measure(layer, d) for layer, d in track(work, description="compiling",
                                                    transient=True, disable=args.json)]
    import triton

    result = {"target": "sm90", "triton": triton.__version__, "rows": rows}
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| layer | type | direction | tile | C assumed (shipped / before) | instructions |"
          " LDG | registers |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        a, b = r["shipped"], r["before"]
        looped = " (a loop)" if a["loops"] else ""
        print(f"| {r['layer']}{looped} | {r['type']} | {r['direction']} | "
              f"{r['params'][0]}x{r['params'][1]} | {a['assumed_c'] or '-'} / "
              f"{b['assumed_c'] or '-'} | {a['instructions']} / {b['instructions']} | "
              f"{a['loads']} / {b['loads']} | {a['registers']} / {b['registers']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
