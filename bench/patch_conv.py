"""Non-overlapping ("patch") convolutions, stride equal to the filter and no padding, on the
implicit GEMM's kernels and on its all-taps-at-once kernels (the few-channel ones), against
cuDNN (on the device machine; FP16, GPU time queued behind a sleep kernel).

U-Net's 2x2 up-convolutions (transposed: their forward is a 2x2 stride-2 convolution's
backward data) and ConvNeXt's 2x2 downsampling layers took 1.2-5.4x cuDNN's GPU time in the
zoo (zoo_h200-fb-9ec5af9, zoo_h200-w-9ec5af9). In a patch convolution every input pixel meets
exactly one tap, so backward data is one GEMM (dy's K channels into dx's stride_h * stride_w
* C columns (phase, channel)) and the forward's reduction is one filter row's S * C
contiguous span per row. This times, per layer, direction and layout, each kernel at TILES
(objects specialised as the runtime's aligned ones are: no value specialised, alignment
assumed), backward weights at the split `spec.split_for` gives each tile plus its reduce:

  gemm     conv2d_fwd / conv2d_bwd_data (one stride phase a program) / conv2d_bwd_weight
  flat     conv2d_fwd_smallc / conv2d_bwd_data_smallc (every phase a program) /
           conv2d_bwd_weight_smallc

    python bench/patch_conv.py --out bench/results/patch_conv_h200

`--set grouped` times the same two variants on the zoo's grouped 3x3 layers instead (ResNeXt's
4, 8, 16 and 32 channels a group, RegNet-Y's 8; backward weights by default): `gemm` is the
kernel the implicit GEMM runs on them (`kernel_for`: the packed one below 16 channels a
group), `flat` the few-channel kernel, which takes a filter row's (s, c) taps in one tile
where the per-tap kernel fills 16 of its 64 rows and columns a group.

Prints a line per case and writes <out>.json (device, versions, rows); every output is
checked against cuDNN's (relative L2 error).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, N, C, H, W, K, filter, stride, pad, groups): the zoo's patch convolutions (filter =
#: stride, no padding; U-Net's up-convolutions in their convolution form: x the large side).
LAYERS = (
    ("unet dec4.up", 32, 512, 32, 32, 1024, 2, 2, 0, 1),
    ("unet dec3.up", 32, 256, 64, 64, 512, 2, 2, 0, 1),
    ("unet dec2.up", 32, 128, 128, 128, 256, 2, 2, 0, 1),
    ("unet dec1.up", 32, 64, 256, 256, 128, 2, 2, 0, 1),
    ("convnext features.2.1", 32, 96, 56, 56, 192, 2, 2, 0, 1),
    ("convnext features.4.1", 32, 192, 28, 28, 384, 2, 2, 0, 1),
    ("convnext features.6.1", 32, 384, 14, 14, 768, 2, 2, 0, 1),
)
#: The zoo's grouped 3x3 layers (`--set grouped`).
GROUPED = (
    ("resnext50 layer1.1.conv2", 32, 128, 56, 56, 128, 3, 1, 1, 32),
    ("resnext50 layer2.1.conv2", 32, 256, 28, 28, 256, 3, 1, 1, 32),
    ("resnext50 layer2.0.conv2", 32, 256, 56, 56, 256, 3, 2, 1, 32),
    ("resnext50 layer3.1.conv2", 32, 512, 14, 14, 512, 3, 1, 1, 32),
    ("resnext50 layer4.1.conv2", 32, 1024, 7, 7, 1024, 3, 1, 1, 32),
    ("regnet_y_400mf block2.1.b", 32, 104, 28, 28, 104, 3, 1, 1, 13),
    ("regnet_y_400mf block3.1.b", 32, 208, 14, 14, 208, 3, 1, 1, 26),
)
#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
TILES = ((128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (128, 64, 64, 4, 3), (256, 128, 32, 8, 3),
         (64, 128, 64, 4, 3), (128, 256, 64, 8, 3))
GROUPED_TILES = ((64, 64, 64, 4, 3), (64, 32, 64, 4, 3), (64, 64, 32, 4, 4), (128, 64, 32, 4, 3),
                 (64, 128, 32, 4, 3), (128, 128, 32, 4, 3))
FLAT = {"F": "conv2d_fwd_smallc", "B": "conv2d_bwd_data_smallc", "W": "conv2d_bwd_weight_smallc"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("patch_conv"), help="output stem")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--set", choices=("patch", "grouped"), default="patch",
                    help="the patch convolutions (LAYERS) or the grouped ones (GROUPED)")
    ap.add_argument("--layers", default="", help="comma-separated indices into the set")
    ap.add_argument("--directions", default="", help="F,B,W (default: all; grouped: W)")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def _strides(t: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in t.stride())


def _object(kernel: str, config: dict[str, int], channels_last: bool, aligned: bool,
            flat: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The sm90 object of `kernel` as a package builds it (sizes run-time arguments; with
    `aligned`, the align16 arguments assumed multiples of 16, pointers 16-byte aligned) and
    its argument values for a launch with `flat` (pointers and CONV_ARGS by name)."""
    from _objects import compiled
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct

    sig, cx = ct.triton_signature(kernel, "FP16", config, channels_last, "ieee")
    assume = [(a, 16) for a in ct.align16_args(kernel, channels_last)] if aligned else []
    obj = compiled(ct.JIT[kernel], [(n, t) for n, t in sig.items() if t != "constexpr"], cx,
                   assume, config["num_warps"], config["num_stages"])
    values = list(launch_arguments(ct.JIT[kernel], {**flat, **cx}).values())
    return obj, values


def _case(layer: tuple, direction: str, layout: str, kernels: dict, time: Any) -> dict:
    """One layer's direction and layout: cuDNN, then each kernel's tiles."""
    import torch
    import triton
    from miopenkernels.kernels import conv_triton_spec as spec

    name, n, c, h, w_, k, f, st, pad, groups = layer
    p, q = (h + 2 * pad - f) // st + 1, (w_ + 2 * pad - f) // st + 1
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    x = torch.randn(n, c, h, w_, device="cuda", dtype=torch.float16).to(memory_format=fmt)
    cg, kg = c // groups, k // groups
    wt = (torch.randn(k, cg, f, f, device="cuda", dtype=torch.float16) / (cg * f * f) ** 0.5
          ).to(memory_format=fmt)
    dy = torch.randn(n, k, p, q, device="cuda", dtype=torch.float16).to(memory_format=fmt)
    conv = ([st, st], [pad, pad], [1, 1], False, [0, 0], groups)
    if direction == "F":
        def cudnn() -> Any:
            return torch.nn.functional.conv2d(x, wt, stride=st, padding=pad, groups=groups)
    else:
        mask = [direction == "B", direction == "W", False]
        index = 0 if direction == "B" else 1

        def cudnn() -> Any:
            return torch.ops.aten.convolution_backward(dy, x, wt, None, *conv, mask)[index]
    ref = cudnn().float()
    row: dict[str, Any] = {"layer": name, "direction": direction, "layout": layout,
                           "sizes": [n, c, h, w_, k, f, st, pad, groups],
                           "cudnn_ms": time(cudnn)}
    out = {"F": torch.empty_like(dy), "B": torch.empty_like(x),
           "W": torch.empty_like(wt)}[direction]
    y_t = out if direction == "F" else dy
    x_t = out if direction == "B" else x
    w_t = out if direction == "W" else wt
    sizes = {"N": n, "C": cg, "H": h, "W": w_, "K": kg, "P": p, "Q": q, "R": f, "S": f,
             "G": groups, "stride_h": st, "stride_w": st, "pad_h": pad, "pad_w": pad,
             "dil_h": 1, "dil_w": 1}
    args = spec.conv_args(sizes, {"x": _strides(x_t), "w": _strides(w_t), "y": _strides(y_t)})
    last = int(layout == "NHWC")
    ptrs = {"x_ptr": x_t, "w_ptr": w_t, "y_ptr": y_t}
    for variant in ("gemm", "flat"):
        kname = spec.kernel_for(direction, sizes) if variant == "gemm" else FLAT[direction]
        row[f"{variant}_kernel"] = kname
        reduce = kernels["conv2d_bwd_weight_reduce"]
        best = None
        for bm, bn, bk, warps, stages in kernels["tiles"]:
            config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SPLIT_K": 1,
                      "num_warps": warps, "num_stages": stages}
            if direction == "W":
                config["SPLIT_K"] = int(spec.split_for(kname, sizes, config, 132))
            split = config["SPLIT_K"]
            grid = tuple(int(v) for v in spec.grid(kname, sizes, config))
            ws = torch.empty(max(1, int(spec.workspace_bytes(kname, sizes, config)) // 4),
                             device="cuda", dtype=torch.float32)
            rargs = spec.reduce_args(kname, args, bool(last)) if split > 1 else None
            aligned = bool(spec.meets_align16(args, bool(last), "FP16", kname)) if \
                True in spec.align16_variants(kname, bool(last), "FP16") else \
                bool(spec.meets_align16(args, bool(last), "FP16", "conv2d_fwd"))
            obj, values = kernels["object"](kname, config, bool(last), aligned,
                                            {**ptrs, "ws_ptr": ws, **args})

            def run(obj=obj, grid=grid, values=values, ws=ws, rargs=rargs, split=split,
                    reduce=reduce) -> None:
                obj[grid](*values)
                if rargs is not None:
                    r = rargs
                    reduce[(triton.cdiv(r["TOTAL"], 1024), 1, 1)](
                        ws, out, r["TOTAL"], r["C"], r["R"], r["S"], r["swk"], r["swc"],
                        r["swr"], r["sws"], split, BLOCK=1024, num_warps=4)
            tile = f"{bm}x{bn}x{bk}w{warps}s{stages}k{split}"
            try:
                out.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                err = float((out.float() - ref).norm() / ref.norm())
                ms = time(run)
            except Exception as e:  # a tile that does not fit (shared memory)
                print(f"  {name} {direction}-{layout} {variant} {tile}: {type(e).__name__}",
                      flush=True)
                continue
            row.setdefault(f"{variant}_tiles", {})[tile] = [ms, err]
            if not err < 1e-2:
                row.setdefault("wrong", []).append([variant, tile, err])
            elif best is None or ms < best[0]:
                best = (ms, tile)
        if best is not None:
            row[f"{variant}_ms"], row[f"{variant}_best"] = best
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import triton
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton as ker

    torch.backends.cudnn.benchmark = True
    grouped = args.set == "grouped"
    kernels: dict[str, Any] = {"conv2d_bwd_weight_reduce": ker.conv2d_bwd_weight_reduce,
                               "object": _object, "tiles": GROUPED_TILES if grouped else TILES}
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(),
                              "triton": triton.__version__, "set": args.set,
                              "tiles": kernels["tiles"], "rows": []}
    table = GROUPED if grouped else LAYERS
    layers = [table[int(i)] for i in args.layers.split(",") if i] or list(table)
    for direction in (args.directions or ("W" if grouped else "F,B,W")).split(","):
        for layout in args.layouts.split(","):
            for layer in layers:
                row = _case(layer, direction, layout, kernels,
                            lambda fn: queued_gpu_ms(fn, args.repeats, args.warmup))
                result["rows"].append(row)
                cu = row["cudnn_ms"]
                print(f"{direction}-{layout} {row['layer']:24s} cudnn {cu:.4f}  " + "  ".join(
                    f"{v} {row[v + '_ms'] / cu:.2f}x ({row[v + '_best']})"
                    for v in ("gemm", "flat") if v + "_ms" in row), flush=True)
                if row.get("wrong"):
                    print(f"  wrong: {row['wrong']}", flush=True)
                args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
                torch.cuda.empty_cache()
    if args.json:
        print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
