"""What the few-channel 3-D kernels (kernels/conv_triton_3d_smallc.py) gain from what Triton's
JIT knows about their arguments, on the device machine (FP16, GPU time queued behind a sleep
kernel).

The runtime launches objects compiled ahead of time that assume nothing of the sizes and
strides; Triton's JIT specialises a launch on every integer argument equal to 1 (a constant)
and on every one divisible by 16 (and 16-byte aligned pointers). On 3D U-Net's first layer the
runtime's forward took 3x the JIT's time on the same tile. This times each direction's kernels
(backward weights: its split launch; backward data: both launches) on each layer and layout
with the JIT told to specialise (every variant but `jit` specialises no argument on its value
or alignment, as the runtime's objects; the kernels' FIX constexpr makes chosen ones constant):

  jit       everything (Triton's default)
  none      nothing
  s, d, g   unit strides, unit dilations, one group (FIX bits 0, 1, 2)
  c         the channel count (FIX >> 4)
  sdgc      all four
  planar    all four and the layout's unit stride (CHANNELS_LAST 2 on NCDHW, 1 on NDHWC)
  aligned   that and divisibility by 16 of sizes, strides and pointers

    python bench/smallc_specialise.py --out bench/results/smallc_specialise_h200

Prints a table and writes <out>.json (device, versions, rows); each output is checked against
cuDNN's (relative error).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from smallc_layouts import LAYERS as _LAYERS  # noqa: E402
from smallc_layouts import layer, layout_tensors, measure, run_kernels, workspace  # noqa: E402

#: bench/smallc_layouts.py's few-channel layers, 3D U-Net's first at batch 16.
LAYERS = tuple((r[0], 16, *r[2:]) if r[0].startswith("unet3d") else r for r in _LAYERS)
ARGS = ("x_ptr", "w_ptr", "y_ptr", "ws_ptr", "dims", "conv", "strides")
VARIANTS = ("jit", "none", "s", "d", "g", "c", "sdgc", "planar", "aligned")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("smallc_specialise"), help="output stem")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--layers", default="", help="comma-separated indices into LAYERS")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def _jit(fn: Any, variant: str) -> Any:
    """`fn` (a JITFunction) re-made with the variant's specialisation."""
    import triton

    if variant == "jit":
        return fn
    return triton.jit(fn.fn, do_not_specialize=list(ARGS),
                      do_not_specialize_on_alignment=[] if variant == "aligned" else list(ARGS))


def _fix(variant: str, channels: int, unit_strides: bool) -> int | None:
    """The FIX constexpr of a variant (the layer's, where its strides are not 1: `s` does
    not apply then, None; the combined variants leave bit 0 out)."""
    s = 1 if unit_strides else 0
    if variant == "s" and not s:
        return None
    bits = {"s": 1, "d": 2, "g": 4, "c": channels << 4}
    if variant in ("sdgc", "planar", "aligned"):
        return s | 6 | channels << 4
    return bits.get(variant, 0)


def _layer(args: argparse.Namespace, spec_row: tuple, direction: str) -> dict[str, Any]:
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton_3d_smallc as ker
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    lay = layer(spec_row, direction)
    row: dict[str, Any] = {"layer": lay["name"], "direction": direction, "tile": lay["tile"]}
    kernels = {v: (_jit(getattr(ker, spec.KERNEL[direction]), v),
                   _jit(ker.conv3d_bwd_data_smallc_gather, v))
               for v in args.variants.split(",")}
    for layout in ("NCDHW", "NDHWC"):
        tensors, out, ref, _ = layout_tensors(lay, layout)
        ws = workspace(lay)
        for variant, (main, gather) in kernels.items():
            last = 0 if variant not in ("planar", "aligned") else (
                1 if layout == "NDHWC" else 2)
            fix = _fix(variant, lay["sizes"]["C"], lay["stride"] == (1, 1, 1))
            if fix is None:
                continue
            measure(row, f"{layout}_{variant}", lay, out, ref,
                    lambda main=main, gather=gather, last=last, fix=fix, tensors=tensors,
                    ws=ws: run_kernels(lay, tensors, ws, main, gather, last, last, FIX=fix),
                    lambda fn: queued_gpu_ms(fn, args.repeats, args.warmup))
        del ws
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import triton

    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "triton": triton.__version__, "rows": []}
    for spec_row in [LAYERS[int(i)] for i in args.layers.split(",") if i] or LAYERS:
        for direction in args.directions.split(","):
            row = _layer(args, spec_row, direction)
            result["rows"].append(row)
            print(f"{row['layer']} {direction}: " + "  ".join(
                f"{k[:-3]} {v:.3f}" for k, v in row.items() if k.endswith("_ms")), flush=True)
            bad = {k: v for k, v in row.items() if k.endswith("_err") and not v < 1e-2}
            if bad:
                print(f"  wrong: {bad}", flush=True)
            args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
            torch.cuda.empty_cache()
    if args.json:
        print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
