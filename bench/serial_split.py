"""Small-batch forward layers: no split, the two-launch split and the one-launch split, against
cuDNN (device machine).

For the forward convolutions of ResNet-50 and MobileNet-v2 (groups 1) at batch 1 (`--batch`),
FP16 in NHWC and NCHW and FP32 under TF32 in NCHW (`--cases`), over a search of tiles and
SPLIT_K values: the package's `conv2d_fwd` alone (SPLIT_K 1), `conv2d_fwd` with SPLIT_K > 1
and then `conv2d_bwd_weight_reduce` (two launches, as the package runs a split today), and
`conv2d_fwd_serial` (bench/_serial_split_kernel.py), whose last program per tile sums the
parts (one launch). Every object is compiled ahead of time as the builder does and checked
against torch in float64, also after its timed replays (the one-launch split leaves its
counters at zero). GPU time per call is the median replay of a CUDA graph of `--inner` calls
(bench/triton_conv.py's `median_ms`); cuDNN runs through torch with benchmark on.

    python bench/serial_split.py --out bench/results/serial_split_h100
    python bench/serial_split.py --networks resnet50 --cases FP16-NHWC --json

Writes <out>.json (rows per layer and case: cuDNN, the best of each variant, its tile; a
`summary` per case with the geomean of each variant's best against cuDNN) and prints a table.
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
    _compiled,
    _cudnn,
    add_timing_args,
    compile_all,
    config_name,
    layer_sizes,
    median_ms,
    sweep_setup,
    write_result,
)

CASES = ("FP16-NHWC", "FP16-NCHW", "TF32-NCHW", "TF32-NHWC")
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) by arithmetic.
TILES = {"16": [(64, 64, 64, 4, 3), (64, 32, 64, 4, 3), (32, 64, 64, 4, 3), (64, 64, 128, 4, 3),
                (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 128, 64, 8, 3)],
         "TF32": [(64, 64, 32, 4, 3), (64, 32, 32, 4, 3), (32, 64, 32, 4, 3),
                  (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3)]}
SPLITS = (1, 2, 4, 8, 16)
_SERIAL: dict[tuple, Any] = {}


def forward_layers(network: str, batch: int) -> list[Any]:
    from miopenkernels.builder.manifest import load_manifest

    seen: dict[Any, None] = {}
    for p in load_manifest(network):
        if p.direction == "F" and p.in_layout == "NCHW" and p.in_type == "FP32" and \
                p.groups == 1 and len(p.in_spatial) == 2 and p.c >= 16:
            seen.setdefault(replace(p, n=batch))
    return list(seen)


def _serial_compiled(dtype: str, cfg: dict[str, int], channels_last: bool, precision: str,
                     aligned: bool, target: tuple) -> Any:
    key = (dtype, tuple(sorted(cfg.items())), channels_last, precision, aligned, target)
    if key not in _SERIAL:
        import triton
        from _serial_split_kernel import conv2d_fwd_serial
        from miopenkernels.compiler.triton import source_arguments
        from miopenkernels.kernels import conv_triton_spec as spec
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        sig, cx = spec.triton_signature("conv2d_fwd", dtype, cfg, channels_last, precision)
        flat = []
        for name, kind in sig.items():
            if kind == "constexpr":
                continue
            flat.append((name, kind))
            if name == "ws_ptr":
                flat.append(("sem_ptr", "*i32"))
        assume = [(a, 16) for a in spec.align16_args("conv2d_fwd", channels_last)] if aligned \
            else []
        s, c, attrs = source_arguments(conv2d_fwd_serial, flat, cx, assume)
        opts = {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}
        _SERIAL[key] = triton.compile(ASTSource(conv2d_fwd_serial, s, c, attrs),
                                      target=GPUTarget(*target), options=opts)
    return _SERIAL[key]


def _job(job: tuple) -> None:
    kind, *rest = job
    if kind == "serial":
        _serial_compiled(*rest)
    else:
        _compiled(*rest)


def parse_tiles(text: str) -> list[tuple[int, int, int, int, int]]:
    """`--tiles` (`64x16x64w4s3,64x32x128w4s3`): (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)."""
    out = []
    for item in (t for t in text.split(",") if t):
        shape, rest = item.split("w")
        warps, stages = rest.split("s")
        m, n, k = (int(v) for v in shape.split("x"))
        out.append((m, n, k, int(warps), int(stages)))
    return out


def plan_cases(layers: list[tuple[str, Any]], cases: list[str], sms: int, target: tuple,
               serial: bool = True, extra_tiles: list[tuple[int, ...]] | None = None
               ) -> tuple[list[tuple], dict[tuple, tuple]]:
    """(cases to time, compile jobs): per layer and case the (variant, config) list."""
    from miopenkernels.kernels import conv_triton_spec as spec

    out, jobs = [], {}
    for net, p in layers:
        sz = layer_sizes(p)
        for case in cases:
            t, lay = case.split("-")
            dtype, precision = ("FP32", "tf32") if t == "TF32" else (t, "ieee")
            cl = lay == "NHWC"
            aligned = sz["C"] % 16 == 0 and sz["K"] % 16 == 0 and (
                not cl or all(v % 16 == 0 for v in (sz["C"] * sz["W"], sz["K"] * sz["Q"])))
            tiles = TILES["TF32" if t == "TF32" else "16"] + list(extra_tiles or [])
            red_steps = sz["R"] * sz["S"]
            tried = []
            for m, n, k, w, s in tiles:
                base = {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": w,
                        "num_stages": s, "GROUP_M": 8}
                gx, gy, _ = spec.grid("conv2d_fwd", sz, {**base, "SPLIT_K": 1})
                steps = red_steps * spec.cdiv(sz["C"], k)
                for split in SPLITS:
                    if split > 1 and (gx * gy * split > 4 * sms or steps < 2 * split):
                        continue
                    cfg = {**base, "SPLIT_K": split}
                    variants = ("plain",) if split == 1 else ("reduce", "serial")[:1 + serial]
                    for v in variants:
                        tried.append((v, cfg))
                        if v == "serial":
                            jobs[("s", dtype, str(cfg), cl, precision)] = (
                                "serial", dtype, cfg, cl, precision, aligned, target)
                        else:
                            jobs[("p", dtype, str(cfg), cl, precision)] = (
                                "plain", "conv2d_fwd", dtype, cfg, cl, precision, aligned, target)
                        if v == "reduce":  # one reduce object serves every split
                            rc = {"num_warps": spec.REDUCE_WARPS, "num_stages": 1}
                            jobs[("r", dtype)] = (
                                "plain", "conv2d_bwd_weight_reduce", dtype, rc, False, "ieee",
                                False, target)
            out.append((net, p, case, t, dtype, precision, cl, aligned, tried))
    return out, jobs


def run(cases: list[tuple], target: tuple, args: Any) -> list[dict]:
    import torch
    import torch.nn.functional as F
    from _serial_split_kernel import conv2d_fwd_serial
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    torch.backends.cudnn.benchmark = True
    tdt = {"FP16": torch.float16, "FP32": torch.float32}
    sem = torch.zeros(1 << 16, device="cuda", dtype=torch.int32)
    rows = []
    for net, p, case, t, dtype, precision, cl, aligned, tried in cases:
        sz = layer_sizes(p)
        gen = torch.Generator(device="cuda").manual_seed(7)
        x = torch.randn((sz["N"], sz["C"], sz["H"], sz["W"]), device="cuda", generator=gen)
        w = torch.randn((sz["K"], sz["C"], sz["R"], sz["S"]), device="cuda", generator=gen)
        w /= math.sqrt(sz["C"] * sz["R"] * sz["S"])
        x, w = x.to(tdt[dtype]), w.to(tdt[dtype])
        ref = F.conv2d(x.double(), w.double(), None, p.stride, p.pad, p.dilation, 1)
        mf = torch.channels_last if cl else torch.contiguous_format
        xl, wl = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
        torch.backends.cudnn.allow_tf32 = t == "TF32"
        cudnn = _cudnn("F", xl, wl, None, p)
        out = torch.empty_like(cudnn())
        cargs = spec.conv_args(sz, {"x": xl.stride(), "w": wl.stride(), "y": out.stride()})
        cudnn_ms = median_ms(cudnn, args.samples, args.inner)
        best: dict[str, dict] = {}
        results = []
        for variant, cfg in tried:
            _, cx = spec.triton_signature("conv2d_fwd", dtype, cfg, cl, precision)
            gx, gy, gz = spec.grid("conv2d_fwd", sz, cfg)
            if variant == "serial":
                ck = _serial_compiled(dtype, cfg, cl, precision, aligned, target)
                ws = torch.empty(max(gx * gy * gz * cfg["BLOCK_M"] * cfg["BLOCK_N"], 1),
                                 device="cuda", dtype=torch.float32)
                vals = list(launch_arguments(conv2d_fwd_serial, {
                    "x_ptr": xl, "w_ptr": wl, "y_ptr": out, "ws_ptr": ws, "sem_ptr": sem,
                    **cargs, **cx}).values())
                launches = [(ck, (gx, gy, gz), vals)]
            else:
                ck = _compiled("conv2d_fwd", dtype, cfg, cl, precision, aligned, target)
                ws = torch.empty(max(spec.workspace_bytes("conv2d_fwd", sz, cfg) // 4, 1),
                                 device="cuda", dtype=torch.float32)
                vals = list(launch_arguments(ct.JIT["conv2d_fwd"], {
                    "x_ptr": xl, "w_ptr": wl, "y_ptr": out, "ws_ptr": ws, **cargs,
                    **cx}).values())
                launches = [(ck, (gx, gy, gz), vals)]
                if variant == "reduce":
                    rc = {"num_warps": spec.REDUCE_WARPS, "num_stages": 1}
                    rk = _compiled("conv2d_bwd_weight_reduce", dtype, rc, False, "ieee", False,
                                   target)
                    ra = dict(spec.reduce_args("conv2d_fwd", cargs, cl), SPLIT_K=cfg["SPLIT_K"])
                    rv = [ws, out, *(ra[nm] for nm, kd in spec.REDUCE_ARGS if kd == "i32"),
                          spec.REDUCE_BLOCK]
                    launches.append((rk, (spec.cdiv(ra["TOTAL"], spec.REDUCE_BLOCK), 1, 1),
                                     rv))

            def call(launches: list = launches) -> None:
                for kern, grid, vv in launches:
                    kern[grid](*vv)

            errs = []
            for when in ("first", "after"):
                out.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                errs.append(float((out.double() - ref).norm() / ref.norm()))
                if when == "first":
                    ms = median_ms(call, args.samples, args.inner)
            ok = all(e <= TOLERANCE[t] for e in errs)
            results.append([variant, config_name(cfg), round(ms * 1000, 3), max(errs), ok])
            if ok and (variant not in best or ms < best[variant]["ms"]):
                best[variant] = {"ms": ms, "config": cfg}
        row = {"network": net, "problem": p.key(), "case": case, "aligned": aligned,
               "cudnn_us": cudnn_ms * 1000,
               "tried": results, "all_correct": all(r[4] for r in results)}
        for v, b in best.items():
            row[f"{v}_us"] = b["ms"] * 1000
            row[f"{v}_config"] = config_name(b["config"])
        rows.append(row)
        one = min(row.get("plain_us", 1e9), row.get("serial_us", 1e9))
        two = min(row.get("plain_us", 1e9), row.get("reduce_us", 1e9))
        print(f"{case:9} {net:13} {p.key()[:44]:44} cudnn {row['cudnn_us']:6.2f} "
              f"plain {row.get('plain_us', float('nan')):6.2f} two {two:6.2f} one {one:6.2f} "
              f"ratio {one / row['cudnn_us']:5.2f}{'' if row['all_correct'] else ' WRONG'}",
              flush=True)
    return rows


def summarise(rows: list[dict]) -> dict:
    def geo(vals: list[float]) -> float:
        return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")

    out = {}
    for case in sorted({r["case"] for r in rows}):
        rs = [r for r in rows if r["case"] == case]
        best_plain = [r["plain_us"] / r["cudnn_us"] for r in rs]
        two = [min(r["plain_us"], r.get("reduce_us", 1e9)) / r["cudnn_us"] for r in rs]
        one = [min(r["plain_us"], r.get("serial_us", r.get("reduce_us", 1e9))) / r["cudnn_us"]
               for r in rs]
        out[case] = {"layers": len(rs), "plain_geomean": round(geo(best_plain), 3),
                     "two_launch_geomean": round(geo(two), 3),
                     "one_launch_geomean": round(geo(one), 3),
                     "one_launch_max": round(max(one), 3),
                     "wrong": sum(not r["all_correct"] for r in rs)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--networks", default="resnet50,mobilenet_v2")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--no-serial", action="store_true",
                    help="leave the one-launch split out (no split against two launches only)")
    ap.add_argument("--tiles", default="", help="tiles to try besides the usual set, e.g. "
                    "64x16x64w4s3,64x32x128w4s3 (BLOCK_MxBLOCK_NxBLOCK_K, warps, stages)")
    add_timing_args(ap, CASES, 11, 20)
    args = ap.parse_args(argv)
    try:
        extra = parse_tiles(args.tiles)
    except ValueError:
        ap.error(f"--tiles {args.tiles!r}: write each tile as 64x16x64w4s3")
    cases, props, target = sweep_setup(args, CASES)
    import torch

    seen: dict[str, tuple[str, Any]] = {}  # a layer two networks share is timed once
    for net in (n for n in args.networks.split(",") if n):
        for p in forward_layers(net, args.batch):
            seen.setdefault(p.key(), (net, p))
    planned, jobs = plan_cases(list(seen.values()), cases, props.multi_processor_count, target,
                               serial=not args.no_serial, extra_tiles=extra)
    compile_all(_job, list(jobs.values()), args.workers)
    rows = run(planned, target, args)
    import platform

    import triton
    result = {"device": props.name, "sms": props.multi_processor_count,
              "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                           "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
                           "python": platform.python_version()},
              "batch": args.batch, "networks": args.networks.split(","),
              "summary": summarise(rows), "rows": rows}
    for case, s in result["summary"].items():
        print(f"{case:9} layers {s['layers']:3}  best/cuDNN geomean: no split "
              f"{s['plain_geomean']:.3f}, two-launch split {s['two_launch_geomean']:.3f}, "
              f"one-launch split {s['one_launch_geomean']:.3f} (max {s['one_launch_max']:.2f})"
              f"  wrong {s['wrong']}")
    return write_result(result, args)


if __name__ == "__main__":
    sys.exit(main())
