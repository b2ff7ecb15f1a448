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
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, N, C, K, D=H=W, filter, stride, pad): few-channel 3-D layers.
LAYERS = (
    ("unet3d analysis1.conv_a", 16, 1, 32, 128, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("r3d_18 stem", 32, 3, 64, (16, 112, 112), (3, 7, 7), (1, 2, 2), (1, 3, 3)),
    ("r2plus1d_18 stem", 32, 3, 45, (16, 112, 112), (1, 7, 7), (1, 2, 2), (0, 3, 3)),
)
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
    import torch
    import torch.nn.functional as F
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton_3d_smallc as ker
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    name, n, c, k, size, filt, stride, pad = spec_row
    d, h, w = (size,) * 3 if isinstance(size, int) else size
    outs = [(s + 2 * p - f) // st + 1 for s, p, f, st in zip((d, h, w), pad, filt, stride,
                                                               strict=True)]
    sizes = {"N": n, "C": c, "K": k, "G": 1, "D": d, "H": h, "W": w, "Z": outs[0],
             "P": outs[1], "Q": outs[2], "T": filt[0], "R": filt[1], "S": filt[2]}
    for i, axis in enumerate("dhw"):
        sizes.update({f"stride_{axis}": stride[i], f"pad_{axis}": pad[i], f"dil_{axis}": 1})
    tile = spec.narrow_tile(direction, spec.usual_tile("FP16", direction, "FP16", "sm90"),
                            sizes)
    if direction == "W":
        tile["SPLIT_K"] = spec.split_for(sizes, tile, 132)
    row: dict[str, Any] = {"layer": name, "direction": direction, "tile": tile}
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, d, h, w, device="cuda", generator=g).half()
    wt = (torch.randn(k, c, *filt, device="cuda", generator=g) / math.sqrt(c * math.prod(filt))
          ).half()
    dy = (torch.randn(n, k, *outs, device="cuda", generator=g) / 8).half()
    geo = (list(stride), list(pad), [1, 1, 1], False, [0, 0, 0], 1)
    conf = (*stride, *pad, 1, 1, 1)
    dims = tuple(sizes[s] for s in ("N", "C", "D", "H", "W", "K", "Z", "P", "Q", "T", "R",
                                    "S", "G"))
    kernels = {v: (_jit(getattr(ker, spec.KERNEL[direction]), v),
                   _jit(ker.conv3d_bwd_data_smallc_gather, v))
               for v in args.variants.split(",")}
    for layout in ("NCDHW", "NDHWC"):
        fmt = torch.channels_last_3d if layout == "NDHWC" else torch.contiguous_format
        xl, wl, dyl = (t.contiguous(memory_format=fmt) for t in (x, wt, dy))
        if direction == "F":
            ref = F.conv3d(xl, wl, stride=stride, padding=pad)
            out = torch.empty(ref.shape, device="cuda", dtype=ref.dtype).contiguous(
                memory_format=fmt)
            tensors = (xl, wl, out)
        else:
            mask = (True, False, False) if direction == "B" else (False, True, False)
            ref = torch.ops.aten.convolution_backward(dyl, xl, wl, None, *geo, mask)[
                0 if direction == "B" else 1]
            out = torch.empty(ref.shape, device="cuda", dtype=ref.dtype).contiguous(
                memory_format=fmt)
            tensors = (out, wl, dyl) if direction == "B" else (xl, out, dyl)
        strides = tuple(s for t in tensors for s in t.stride())
        ws = torch.empty(max(spec.workspace_bytes(direction, sizes, tile) // 4, 1),
                         device="cuda", dtype=torch.float32)
        grid = spec.grid(direction, sizes, tile)
        for variant, (main, gather) in kernels.items():
            last = 0 if variant not in ("planar", "aligned") else (
                1 if layout == "NDHWC" else 2)
            fix = _fix(variant, c, stride == (1, 1, 1))
            if fix is None:
                continue

            def run(main: Any = main, gather: Any = gather, last: int = last, fix: int = fix,
                    tensors: tuple = tensors, strides: tuple = strides, ws: Any = ws,
                    grid: tuple = grid) -> None:
                main[grid](*tensors, ws, dims, conf, strides, BLOCK_M=tile["BLOCK_M"],
                           BLOCK_N=tile["BLOCK_N"], BLOCK_K=tile["BLOCK_K"],
                           GROUP_M=tile["GROUP_M"], CHANNELS_LAST=last, PRECISION="ieee",
                           FIX=fix, num_warps=tile["num_warps"], num_stages=tile["num_stages"])
                if direction == "B":
                    gc = spec.GATHER_CONFIG
                    gather[spec.gather_grid(sizes)](
                        *tensors, ws, dims, conf, strides, BLOCK_M=gc["BLOCK_M"],
                        BLOCK_N=gc["BLOCK_N"], BLOCK_K=gc["BLOCK_K"], GROUP_M=gc["GROUP_M"],
                        CHANNELS_LAST=last, PRECISION="ieee", FIX=fix,
                        num_warps=gc["num_warps"],
                        num_stages=gc["num_stages"])

            key = f"{layout}_{variant}"
            out.fill_(float("nan"))
            run()
            if direction != "W" or tile["SPLIT_K"] == 1:
                row[f"{key}_err"] = float((out.float() - ref.float()).norm()
                                          / ref.float().norm())
            row[f"{key}_ms"] = queued_gpu_ms(run, args.repeats, args.warmup)
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
