"""A trial TMA-fed stride-1 NHWC kernel (bench/_tma_kernel.py) against cuDNN and against the
pointer-gather implicit GEMM kernel (conv2d_fwd / conv2d_bwd_data) on the zoo's layers.

On the GPU machine, with Triton: for every zoo layer the TMA kernel can run (2-D, groups 1,
stride 1, channel counts multiples of 8 and at least 16, not transposed), at one batch, per
type (FP16, BF16) and direction (F, B), NHWC tensors made outside any timing:
- cuDNN (aten.convolution / convolution_backward, benchmark on);
- the pointer-gather kernel at its sm90 usual configuration (conv_triton_spec.usual_config,
  what the ranking starts from on an untuned shape), launched through Triton;
- the TMA kernel at each configuration of `CONFIGS`.
Each is timed as bench/zoo.py times GPU work: `--repeats` launches queued behind a sleep
kernel, between two events. Every TMA result is checked against cuDNN's (relative L2 error).
The table gives, per type and direction, the geomean ratio to cuDNN of the gather kernel, of
each TMA configuration, and of the best TMA configuration per layer; the JSON (`--out`) holds
device, versions, every row and those summaries.

    python bench/tma_conv.py --out bench/results/tma_conv_h200 [--every 2] [--batch 32]
        [--types FP16,BF16] [--directions F,B] [--repeats 20] [--budget-s 500] [--held-out]
    python bench/tma_conv.py --compile-check bench/results/tma_conv_ws-sm90   # no GPU
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: (BLOCK_H, BLOCK_W, BLOCK_N, BLOCK_K, NUM_STAGES, num_warps)
CONFIGS = ((8, 16, 128, 64, 4, 4), (8, 16, 128, 64, 4, 8), (16, 16, 128, 64, 3, 8),
           (8, 16, 256, 64, 3, 8), (16, 8, 128, 64, 4, 4), (4, 32, 128, 64, 4, 4),
           (8, 32, 128, 64, 3, 8), (8, 8, 128, 64, 4, 4))


def _zoo() -> Any:
    """bench/zoo.py (its layers, problems, tensors and GPU timing)."""
    sys.path.insert(0, str(HERE))
    import zoo

    return zoo


def eligible(p: Any) -> bool:
    """Whether the TMA kernel runs a layer's problem."""
    return (p.spatial_dim == 2 and p.groups == 1 and p.mode != "trans"
            and tuple(p.stride) == (1, 1) and p.c % 8 == 0 and p.k % 8 == 0
            and min(p.c, p.k) >= 16)


def _tma_launch(kernel: Any, p: Any, t: dict, cfg: tuple, direction: str) -> Any:
    bh, bw, bn, bk, stages, warps = cfg
    n, c, k = p.n, p.c, p.k
    (h, w_), (ho, wo) = p.in_shape[2:], p.out_shape[2:]
    r, s = p.wei_shape[2:]
    if direction == "F":
        src, dst, dims = t["x"], t["y"], (c, h, w_, k, ho, wo)
    else:
        src, dst, dims = t["y"], t["x"], (k, ho, wo, c, h, w_)
    grid = (math.ceil(dims[3] / bn) * n * math.ceil(dims[4] / bh) * math.ceil(dims[5] / bw),)
    args = (src, t["w"], dst, n, *dims, r, s, p.pad[0], p.pad[1], p.dilation[0], p.dilation[1])
    consts = dict(BLOCK_H=bh, BLOCK_W=bw, BLOCK_N=bn, BLOCK_K=bk, NUM_STAGES=stages,
                  BACKWARD_DATA=direction == "B", num_warps=warps, num_stages=stages)
    return lambda: kernel[grid](*args, **consts)


def _gather_launch(ct: Any, spec: Any, p: Any, t: dict, type_name: str, direction: str) -> Any:
    """The pointer-gather kernel at the sm90 usual configuration of the case."""
    (h, w_), (ho, wo) = p.in_shape[2:], p.out_shape[2:]
    r, s = p.wei_shape[2:]
    sizes = {"N": p.n, "C": p.c, "H": h, "W": w_, "K": p.k, "P": ho, "Q": wo, "R": r, "S": s,
             "G": 1, "stride_h": 1, "stride_w": 1, "pad_h": p.pad[0], "pad_w": p.pad[1],
             "dil_h": p.dilation[0], "dil_w": p.dilation[1]}
    # NHWC element strides in (n, c, h, w) order; w stored [K][R][S][C]
    strides = {"x": (h * w_ * p.c, 1, w_ * p.c, p.c), "w": (r * s * p.c, 1, s * p.c, p.c),
               "y": (ho * wo * p.k, 1, wo * p.k, p.k)}
    args = spec.conv_args(sizes, strides)
    tuples = [tuple(args[name] for name in names) for names in spec.CONV_TUPLES.values()]
    kernel_name = "conv2d_fwd" if direction == "F" else "conv2d_bwd_data"
    config = dict(spec.usual_config("sm90", f"{type_name}-{direction}-NHWC", kernel_name))
    config["SPLIT_K"] = 1
    warps, stages = config.pop("num_warps"), config.pop("num_stages")
    kernel = getattr(ct, kernel_name)
    grid = spec.grid(kernel_name, sizes, config)
    ws = t["y"]  # SPLIT_K 1 writes no partials
    return lambda: kernel[grid](t["x"], t["w"], t["y"], ws, *tuples, **config,
                                CHANNELS_LAST=True, PRECISION="ieee", num_warps=warps,
                                num_stages=stages)


def _rel_err(a: Any, b: Any) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def nhwc_tensors(zoo: Any, p: Any, type_name: str) -> tuple[dict, Any, Any]:
    """A 16-bit NHWC problem's x, w and y stored channels-last on the device (w scaled by its
    fan-in), cuDNN's call on them (bench/zoo.py's peer, benchmark on) and its output in the
    stored layout: (stored, peer, reference)."""
    import torch

    dt = {"FP16": torch.float16, "BF16": torch.bfloat16}[type_name]
    stored = {}
    for role, shape in (("x", p.in_shape), ("w", p.wei_shape), ("y", p.out_shape)):
        v = torch.randn((shape[0], *shape[2:], shape[1]), device="cuda", dtype=dt)
        if role == "w":
            v /= math.sqrt(shape[1] * math.prod(shape[2:]))
        stored[role] = v
    views = {k: v.permute(0, 3, 1, 2) for k, v in stored.items()}
    peer = zoo._peer(p, views)
    torch.backends.cudnn.benchmark = True
    return stored, peer, peer().permute(0, 2, 3, 1).contiguous()


def measure(zoo: Any, ct: Any, tma: Any, spec: Any, layer: Any, type_name: str,
            direction: str, batch: int, repeats: int) -> dict:
    p = zoo.layer_problem(layer, type_name, direction, "NHWC", batch)
    stored, peer, ref = nhwc_tensors(zoo, p, type_name)
    cudnn_ms = zoo.queued_gpu_ms(peer, repeats, 3)
    out_role = "y" if direction == "F" else "x"
    gather = _gather_launch(ct, spec, p, stored, type_name, direction)
    gather()
    gather_err = _rel_err(stored[out_role], ref)
    gather_ms = zoo.queued_gpu_ms(gather, repeats, 2)
    row = {"network": layer.network, "layer": layer.name, "held_out": layer.held_out,
           "case": f"{type_name}-{direction}-NHWC", "n": batch,
           "shape": {"C": p.c, "K": p.k, "H": p.in_shape[2], "W": p.in_shape[3],
                     "R": p.wei_shape[2], "S": p.wei_shape[3], "P": p.out_shape[2],
                     "Q": p.out_shape[3], "pad": list(p.pad), "dil": list(p.dilation)},
           "cudnn_gpu_ms": cudnn_ms, "gather_gpu_ms": gather_ms, "gather_rel_err": gather_err,
           "tma": {}}
    for cfg in CONFIGS:
        name = "x".join(map(str, cfg))
        try:
            fn = _tma_launch(tma.conv2d_tma, p, stored, cfg, direction)
            stored[out_role].zero_()
            fn()
            err = _rel_err(stored[out_role], ref)
            ms = zoo.queued_gpu_ms(fn, repeats, 2)
            row["tma"][name] = {"gpu_ms": ms, "rel_err": err}
        except Exception as exc:  # noqa: BLE001 - a configuration that does not fit is listed
            row["tma"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return row


def summarise(rows: list[dict]) -> dict:
    g = _zoo().geomean
    out: dict[str, Any] = {}
    for case in sorted({r["case"] for r in rows}):
        rs = [r for r in rows if r["case"] == case]
        entry: dict[str, Any] = {"layers": len(rs),
                                 "gather": g(r["gather_gpu_ms"] / r["cudnn_gpu_ms"] for r in rs)}
        for cfg in CONFIGS:
            name = "x".join(map(str, cfg))
            ok = [r for r in rs if "gpu_ms" in r["tma"].get(name, {})]
            if len(ok) == len(rs):
                entry[name] = g(r["tma"][name]["gpu_ms"] / r["cudnn_gpu_ms"] for r in ok)
        entry["tma_best"] = g(min(v["gpu_ms"] for v in r["tma"].values() if "gpu_ms" in v)
                              / r["cudnn_gpu_ms"] for r in rs)
        entry["max_rel_err"] = max(v.get("rel_err", 0.0) for r in rs for v in r["tma"].values())
        out[case] = entry
    return out


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A progress bar (rich) where rich is installed, else a line every 20 jobs."""
    try:
        from rich.progress import Progress
    except ImportError:
        done = [0]

        def line() -> None:
            done[0] += 1
            if done[0] % 20 == 0 or done[0] == total:
                print(f"[{done[0]}/{total}]", file=sys.stderr, flush=True)
        yield line
        return
    with Progress() as progress:
        task = progress.add_task("layers", total=total)
        yield lambda: progress.advance(task)


def compile_check(out: str) -> int:
    """No GPU: each configuration compiled for sm90 with Triton's warp specialisation of the
    loop off and on (`tl.range(warp_specialize=)`), both directions: the wgmma and setmaxnreg
    (a warp-specialised kernel's register split) the PTX holds, or the compile's error."""
    import contextlib
    import os
    import tempfile

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, str(HERE))
    import _tma_kernel as tma

    names = ["src_ptr", "w_ptr", "dst_ptr", "N", "C_in", "H_in", "W_in", "C_out", "H_out",
             "W_out", "R", "S", "pad_h", "pad_w", "dil_h", "dil_w"]
    rows = []
    for backward in (False, True):
        for cfg in CONFIGS:
            for ws in (False, True):
                bh, bw, bn, bk, stages, warps = cfg
                consts = {"BLOCK_H": bh, "BLOCK_W": bw, "BLOCK_N": bn, "BLOCK_K": bk,
                          "NUM_STAGES": stages, "BACKWARD_DATA": backward, "WARP_SPECIALIZE": ws}
                sig = {n: "*fp16" if n.endswith("_ptr") else "i32" for n in names}
                sig.update({k: "constexpr" for k in consts})
                row: dict[str, Any] = {"config": "x".join(map(str, cfg)),
                                       "direction": "B" if backward else "F",
                                       "warp_specialize": ws}
                # Triton's C++ passes print their failures to fd 2: kept out of the table.
                with tempfile.TemporaryFile() as err, contextlib.ExitStack() as stack:
                    saved = os.dup(2)
                    os.dup2(err.fileno(), 2)
                    stack.callback(os.close, saved)
                    stack.callback(os.dup2, saved, 2)
                    try:
                        k = triton.compile(ASTSource(tma.conv2d_tma, signature=sig,
                                                     constexprs=consts, attrs={}),
                                           target=GPUTarget("cuda", 90, 32),
                                           options={"num_warps": warps, "num_stages": stages})
                        ptx = k.asm["ptx"]
                        row.update(wgmma=ptx.count("wgmma.mma_async"),
                                   setmaxnreg=ptx.count("setmaxnreg"),
                                   num_warps=k.metadata.num_warps)
                    except Exception as exc:  # noqa: BLE001 - a failed compile is a result
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                rows.append(row)
                print(row)
    Path(out + ".json").write_text(json.dumps({"triton": triton.__version__, "target": "sm90",
                                               "rows": rows}, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--compile-check"]:
        ap = argparse.ArgumentParser(description=compile_check.__doc__)
        ap.add_argument("--compile-check", dest="out", required=True,
                        help="path stem of the .json result")
        return compile_check(ap.parse_args(argv).out)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="path stem of the .json result")
    ap.add_argument("--every", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--types", default="FP16,BF16")
    ap.add_argument("--directions", default="F,B")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=500.0)
    ap.add_argument("--max-gb", type=float, default=3.0)
    ap.add_argument("--held-out", action="store_true")
    args = ap.parse_args(argv)
    import torch
    import triton
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    sys.path.insert(0, str(HERE))
    import _tma_kernel as tma

    zoo = _zoo()
    layers = [la for la in zoo.every_kth(zoo.load_layers(held_out=args.held_out), args.every)
              if eligible(la.problem)]
    seen, unique = set(), []
    for la in layers:  # one row per distinct shape
        key = (la.problem.c, la.problem.k, la.problem.in_shape[2:], la.problem.wei_shape[2:],
               tuple(la.problem.pad), tuple(la.problem.dilation))
        if key not in seen:
            seen.add(key)
            unique.append(la)
    jobs = [(la, t, d) for t in args.types.split(",") for d in args.directions.split(",")
            for la in unique]
    rows, t0, errors = [], time.monotonic(), []
    with _progress(len(jobs)) as advance:
        for la, t, d in jobs:
            if time.monotonic() - t0 > args.budget_s:
                break
            p = zoo.layer_problem(la, t, d, "NHWC", args.batch)
            if zoo.tensor_gb(p) > args.max_gb:
                advance()
                continue
            try:
                rows.append(measure(zoo, ct, tma, spec, la, t, d, args.batch, args.repeats))
            except Exception as exc:  # noqa: BLE001 - listed, the run goes on
                errors.append({"network": la.network, "layer": la.name, "case": f"{t}-{d}",
                               "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            advance()
    summary = summarise(rows)
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
              "batch": args.batch, "every": args.every, "repeats": args.repeats,
              "configs": ["x".join(map(str, c)) for c in CONFIGS],
              "jobs": len(jobs), "measured": len(rows), "errors": errors,
              "summary": summary, "rows": rows}
    Path(args.out + ".json").write_text(json.dumps(result, indent=1))
    print(f"{props.name}, batch {args.batch}, {len(rows)} of {len(jobs)} layer cases, "
          f"{len(errors)} errors; GPU time / cuDNN (benchmark on), geomean")
    names = ["gather", "tma_best"] + [c for c in result["configs"]]
    print("| case | layers | " + " | ".join(names) + " | max err |")
    for case, e in summary.items():
        cells = [f"{e[n]:.2f}" if n in e else "-" for n in names]
        print(f"| {case} | {e['layers']} | " + " | ".join(cells) + f" | {e['max_rel_err']:.1e} |")
    worst = sorted(rows, key=lambda r: -min(v.get("gpu_ms", 1e9) for v in r["tma"].values())
                   / r["cudnn_gpu_ms"])[:8]
    for r in worst:
        best = min(v.get("gpu_ms", 1e9) for v in r["tma"].values())
        print(f"  worst: {r['network']} {r['layer']} {r['case']} {r['shape']} "
              f"tma {best / r['cudnn_gpu_ms']:.2f} gather "
              f"{r['gather_gpu_ms'] / r['cudnn_gpu_ms']:.2f} cudnn {r['cudnn_gpu_ms']:.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
