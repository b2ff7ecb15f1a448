"""Layers whose channel counts are multiples of 8 but not of 16, on the implicit GEMM forward:
the generic object against one that assumes multiples of 8 (device machine).

An implicit GEMM object either assumes its channel counts and strides are multiples of 16
(`conv_triton_spec.ALIGN16_ARGS`; pointers 16-byte aligned) or assumes nothing. A layer with
24, 40, 72, 88, 104, 136 or 232 channels, common in mobile networks, meets no such assumption
and takes the generic object, whose loads the compiler cannot vectorise. A 16-bit element
needs only multiples of 8 for a 16-byte load. For the forward layers of the zoo's manifests
(dbs/manifests/zoo, groups 1, at least 16 channels a side) whose channel counts are multiples
of 8 and not both of 16, in FP16 (`--cases`: NHWC, NCHW) at each `--batches`, this times the
case's usual tile and the small-grid tile (64x32x64), each compiled generic and with the
channel counts and strides assumed multiples of 8 (`align8`), against cuDNN through torch
(benchmark on), every result checked against float64. GPU time per call is the median
replay of a CUDA graph of `--inner` calls (bench/triton_conv.py's `median_ms`).

    python bench/align_variants.py --out bench/results/align_variants_h100
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from triton_conv import (  # noqa: E402
    TOLERANCE,
    _cudnn,
    add_timing_args,
    config_name,
    layer_sizes,
    median_ms,
    sweep_setup,
    write_result,
)

CASES = ("FP16-NHWC", "FP16-NCHW")
SMALL_TILE = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3,
              "GROUP_M": 8, "SPLIT_K": 1}
VARIANTS = {"generic": 0, "align8": 8, "align16": 16}


def odd_layers(batch: int, sixteens: str = "") -> list[tuple[str, Any]]:
    """(network, problem at `batch`) of the zoo's forward layers with channel counts that are
    multiples of 8 and not both of 16, each once; with `sixteens` (a zoo network), that
    network's layers whose channel counts are multiples of 16 instead."""
    from miopenkernels.builder.manifest import load_manifest

    root = HERE.parent / "dbs" / "manifests" / "zoo"
    seen: dict[Any, str] = {}
    for path in sorted(root.glob("*.txt")):
        if sixteens and path.stem != sixteens:
            continue
        for p in load_manifest(str(path)):
            if p.direction == "F" and p.groups == 1 and len(p.in_spatial) == 2 and \
                    p.in_type == "FP32" and p.in_layout == "NCHW" and min(p.c, p.k) >= 16 and \
                    bool(p.c % 16 or p.k % 16) != bool(sixteens) and \
                    p.c % 8 == 0 and p.k % 8 == 0:
                seen.setdefault(replace(p, n=batch), path.stem)
    return [(net, p) for p, net in seen.items()]


def compiled(cfg: dict[str, int], channels_last: bool, divisor: int, target: tuple) -> Any:
    """The FP16 forward object of `cfg`: generic (`divisor` 0) or assuming the align16
    arguments multiples of `divisor` (pointers 16-byte aligned)."""
    from _objects import compiled as object_of
    from miopenkernels.kernels import conv_triton as ct

    kernel = "conv2d_fwd"
    sig, cx = ct.triton_signature(kernel, "FP16", cfg, channels_last, "ieee")
    ptrs = {n for n, t in sig.items() if t.startswith("*")}
    assume = [(a, 16 if a in ptrs else divisor)
              for a in ct.align16_args(kernel, channels_last)] if divisor else []
    return object_of(ct.JIT[kernel], [(n, t) for n, t in sig.items() if t != "constexpr"], cx,
                     assume, cfg["num_warps"], cfg["num_stages"], target)


def run(layers: list[tuple[str, Any]], cases: list[str], target: tuple, args: Any
        ) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    torch.backends.cudnn.benchmark = True
    rows = []
    for net, p in layers:
        sz = layer_sizes(p)
        gen = torch.Generator(device="cuda").manual_seed(7)
        x = torch.randn((sz["N"], sz["C"], sz["H"], sz["W"]), device="cuda", generator=gen)
        w = torch.randn((sz["K"], sz["C"], sz["R"], sz["S"]), device="cuda", generator=gen)
        w /= math.sqrt(sz["C"] * sz["R"] * sz["S"])
        x, w = x.half(), w.half()
        ref = F.conv2d(x.double(), w.double(), None, p.stride, p.pad, p.dilation, 1)
        for case in cases:
            cl = case.endswith("NHWC")
            mf = torch.channels_last if cl else torch.contiguous_format
            xl, wl = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
            cudnn = _cudnn("F", xl, wl, None, p)
            out = torch.empty_like(cudnn())
            # A size-1 axis's stride is never used: torch's may be anything (1 for a 1x1
            # channels-last filter); the canonical one of the layout is passed.
            def canon(t: Any, cl: bool = cl) -> tuple[int, ...]:
                n, c, h, w = t.shape
                return (h * w * c, 1, w * c, c) if cl else (c * h * w, h * w, w, 1)

            cargs = spec.conv_args(sz, {"x": canon(xl), "w": canon(wl), "y": canon(out)})
            if not all(int(cargs[a]) % 8 == 0 for a in spec.ALIGN16_ARGS[cl]):
                continue  # a stride not a multiple of 8 either: not a layer for align8
            row: dict[str, Any] = {"network": net, "problem": p.key(), "case": case,
                                   "batch": sz["N"],
                                   "cudnn_us": median_ms(cudnn, args.samples, args.inner) * 1e3}
            usual = spec.usual_config("sm90", f"FP16-F-{'NHWC' if cl else 'NCHW'}")
            for tile_name, cfg in (("usual", {**usual, "SPLIT_K": 1}), ("small", SMALL_TILE)):
                for variant, divisor in VARIANTS.items():
                    if divisor and any(int(cargs[a]) % divisor for a in spec.ALIGN16_ARGS[cl]):
                        continue  # the layer does not meet this variant's assumption
                    obj = compiled(cfg, cl, divisor, target)
                    _, cx = spec.triton_signature("conv2d_fwd", "FP16", cfg, cl, "ieee")
                    grid = spec.grid("conv2d_fwd", sz, cfg)
                    vals = list(launch_arguments(ct.JIT["conv2d_fwd"], {
                        "x_ptr": xl, "w_ptr": wl, "y_ptr": out, "ws_ptr": out, **cargs,
                        **cx}).values())

                    def call(obj: Any = obj, grid: tuple = grid, vals: list = vals) -> None:
                        obj[grid](*vals)

                    out.fill_(float("nan"))
                    call()
                    torch.cuda.synchronize()
                    err = float((out.double() - ref).norm() / ref.norm())
                    name = f"{tile_name}_{variant}"
                    row[f"{name}_us"] = median_ms(call, args.samples, args.inner) * 1e3
                    row[f"{name}_ok"] = err <= TOLERANCE["FP16"]
                    row[f"{tile_name}_tile"] = config_name(cfg)
            rows.append(row)
            print(f"{case} b{sz['N']:<3} {net:18} {p.key()[:40]:40} cudnn {row['cudnn_us']:7.2f}"
                  + "".join(f"  {k[:-3]} {row[k]:7.2f}" for k in row if k.endswith("_us")
                            and k != "cudnn_us"), flush=True)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per case and batch: geomeans of each variant against cuDNN, and of align8 over generic
    and over align16 (where the layers meet it)."""
    def geo(values: list[float]) -> float:
        return round(math.exp(sum(map(math.log, values)) / len(values)), 3) if values else 0.0

    out: dict[str, Any] = {}
    for key in sorted({(r["case"], r["batch"]) for r in rows}):
        mine = [r for r in rows if (r["case"], r["batch"]) == key]
        entry: dict[str, Any] = {"layers": len(mine),
                                 "wrong": sum(not r[k] for r in mine for k in r
                                              if k.endswith("_ok"))}
        for tile in ("usual", "small"):
            for variant in VARIANTS:
                entry[f"{tile}_{variant}_vs_cudnn"] = geo(
                    [r[f"{tile}_{variant}_us"] / r["cudnn_us"] for r in mine
                     if f"{tile}_{variant}_us" in r])
            for base in ("generic", "align16"):
                entry[f"{tile}_align8_vs_{base}"] = geo(
                    [r[f"{tile}_align8_us"] / r[f"{tile}_{base}_us"] for r in mine
                     if f"{tile}_{base}_us" in r])
        out[f"{key[0]} b{key[1]}"] = entry
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_args(ap, CASES, samples=9, inner=10)
    ap.add_argument("--batches", default="32,1", help="batches, comma-separated")
    ap.add_argument("--sixteens", default="", metavar="NETWORK",
                    help="time a zoo network's layers whose channel counts are multiples of 16 "
                         "instead (align8 against align16: what the weaker assumption costs)")
    args = ap.parse_args()
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        ap.error(f"--batches {args.batches!r}: write whole numbers, e.g. 32,1")
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU: run this on the GPU machine", file=sys.stderr)
        return 6
    cases, props, target = sweep_setup(args, CASES)
    layers = [item for b in batches for item in odd_layers(b, args.sixteens)]
    rows = run(layers, cases, target, args)
    summary = summarise(rows)
    for key, s in summary.items():
        print(f"{key:16} {s['layers']:3} layers  wrong {s['wrong']}  " + "  ".join(
            f"{k} {v}" for k, v in s.items() if k not in ("layers", "wrong")))
    import triton

    result = {"device": props.name, "sms": props.multi_processor_count, "target": list(target),
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "triton": triton.__version__, "batches": batches, "summary": summary,
              "rows": rows}
    return write_result(result, args)


if __name__ == "__main__":
    sys.exit(main())
