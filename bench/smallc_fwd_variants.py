"""The few-channel 3-D forward (kernels/conv_triton_3d_smallc.py) as shipped against the
variants in bench/_smallc_fwd_kernels.py and cuDNN, on the device machine: GPU time queued
behind a sleep kernel, each output checked against cuDNN's (relative error).

Variants (the same arguments and tiles; each launched through Triton's JIT told to
specialise no argument on its value, only pointers and arguments on their alignment, as the
package's aligned objects assume):

  divide    the columns split into channel and taps by signed divisions (before)
  quotient  the same by a multiply and a shift (`_quotient`: the shipped kernel)
  taps      the depth taps as a loop over blocks of (r, s, c)

Each at the solvers' tile for the layer and type, and with `--block-m 256` also at 256
positions a program; `--generic` launches the objects for any strides instead (no
alignment assumed, CHANNELS_LAST 0). FP32 against cuDNN without TF32.

    python bench/smallc_fwd_variants.py --out bench/results/smallc_fwd_variants_h100

Prints a table and writes <out>.json (device, versions, rows).
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

#: bench/smallc_layouts.py's few-channel layers, X3D-S's stem (3 -> 24, 1x3x3, stride
#: (1, 2, 2), 13 frames of 160x160, batch 8) and a 2-D 3x3 stem of 32 filters at 224x224
#: (a depth of one, as the 2-D solvers launch these kernels; batch 32).
LAYERS = (*_LAYERS, ("x3d_s stem", 8, 3, 24, (13, 160, 160), (1, 3, 3), (1, 2, 2), (0, 1, 1)),
          ("2-D 3x3 stem 3->32", 32, 3, 32, (1, 224, 224), (1, 3, 3), (1, 1, 1), (0, 1, 1)))
VARIANTS = ("divide", "quotient", "taps")
ARGS = ("x_ptr", "w_ptr", "y_ptr", "ws_ptr", "dims", "conv", "strides")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("smallc_fwd_variants"), help="output stem")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", default="", help="comma-separated indices into LAYERS")
    ap.add_argument("--types", default="FP16,BF16,FP32")
    ap.add_argument("--layouts", default="NCDHW,NDHWC")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--block-m", default="", help="comma-separated BLOCK_M values to try "
                    "beside the solvers' tile (its own left out)")
    ap.add_argument("--generic", action="store_true",
                    help="the objects for any strides: no alignment, CHANNELS_LAST 0")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def _kernels(names: list[str], generic: bool) -> dict[str, Any]:
    """Each variant's forward kernel, re-made to specialise on alignment alone (`generic`:
    on nothing, as the objects for any strides; launched with CHANNELS_LAST 0)."""
    import _smallc_fwd_kernels as alt
    import triton
    from miopenkernels.kernels import conv_triton_3d_smallc as ker

    fns = {"divide": alt.conv3d_fwd_smallc_divide, "quotient": ker.conv3d_fwd_smallc,
           "taps": alt.conv3d_fwd_smallc_taps}
    return {n: triton.jit(fns[n].fn, do_not_specialize=list(ARGS),
                          do_not_specialize_on_alignment=list(ARGS) if generic else [])
            for n in names}


def _rows(args: argparse.Namespace, spec_row: tuple, dtype: str, kernels: dict[str, Any]
          ) -> list[dict[str, Any]]:
    from _gpu_timing import queued_gpu_ms

    def time_ms(fn: Any) -> float:
        return queued_gpu_ms(fn, args.repeats, args.warmup)

    lay = layer(spec_row, "F", 0, dtype)
    tiles = [dict(lay["tile"])] + [{**lay["tile"], "BLOCK_M": int(b)}
                                   for b in dict.fromkeys(args.block_m.split(","))
                                   if b and int(b) != lay["tile"]["BLOCK_M"]]
    rows = []
    for layout in args.layouts.split(","):
        tensors, out, ref, cudnn = layout_tensors(lay, layout)
        row: dict[str, Any] = {"layer": lay["name"], "type": dtype, "layout": layout,
                               "sizes": lay["sizes"], "cudnn_ms": time_ms(cudnn)}
        last = 0 if args.generic else 1 if layout == "NDHWC" else 2
        ws = workspace(lay)
        for tile in tiles:
            lay_tile = {**lay, "tile": tile}
            for name, fn in kernels.items():
                measure(row, f"{name}_{tile['BLOCK_M']}", lay_tile, out, ref,
                        lambda fn=fn, lay_tile=lay_tile, tensors=tensors, ws=ws, last=last:
                        run_kernels(lay_tile, tensors, ws, fn, None, last, 0), time_ms)
        rows.append(row)
        del tensors, out, ref, ws
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import triton

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(),
                              "triton": triton.__version__, "generic": args.generic,
                              "rows": []}
    kernels = _kernels(args.variants.split(","), args.generic)
    for spec_row in [LAYERS[int(i)] for i in args.layers.split(",") if i] or LAYERS:
        for dtype in args.types.split(","):
            for row in _rows(args, spec_row, dtype, kernels):
                result["rows"].append(row)
                cudnn = row["cudnn_ms"]
                print(f"{row['layer']} {dtype} {row['layout']}: cudnn {cudnn:.3f}  " + "  ".join(
                    f"{k[:-3]} {v:.3f} ({v / cudnn:.2f})" for k, v in row.items()
                    if k.endswith("_ms") and k != "cudnn_ms"), flush=True)
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
