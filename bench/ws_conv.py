"""Warp-specialised trial kernels (bench/_ws_kernel.py) against cuDNN, the shipped
pointer-gather implicit GEMM and cuBLAS, on the zoo's stride-1 NHWC layers.

On the GPU machine, with Triton: for every zoo layer the shift kernel runs (2-D, groups 1,
stride 1, channel counts multiples of 8 and at least 16 as bench/tma_conv.py's, not
transposed; backward data where the padding is at most the filter's reach), at one batch, per
type (FP16, BF16) and direction (F, B, W), NHWC tensors made outside any timing:
- cuDNN (aten.convolution / convolution_backward, benchmark on);
- the pointer-gather kernel at its sm90 usual configuration (what ships; bench/tma_conv.py);
- `pad_nhwc` alone (the zero-bordered copy the shift kernel reads);
- `conv2d_shift` at each configuration of `CONFIGS`, alone and after its copy (`total`: what a
  solver would take), checked against cuDNN (relative L2 error); backward weights
  `conv2d_shift_wrw` at each of `W_CONFIGS`, alone and with both copies and the sum of its
  parts (no gather column there);
- forward with `--gemm`: cuBLAS (`torch.mm`) and `gemm_ws` at each configuration on the
  layer's GEMM, operands made outside the timing: the ceilings without the gather.
Each is timed as bench/zoo.py times GPU work (launches queued behind a sleep kernel). The table
gives per case the geomean of each column over cuDNN's; the JSON (`--out`) holds device,
versions, every row and the summaries, also when the run's time limit (SIGTERM) cut it short.

    python bench/ws_conv.py --out bench/results/ws_conv_h200 [--every 3] [--batch 32]
        [--types FP16,BF16] [--directions F,B,W] [--gemm] [--budget-s 400] [--held-out]
    python bench/ws_conv.py --compile-check bench/results/ws_conv-sm90   # no GPU
    python bench/ws_conv.py --from-json bench/results/ws_conv_h200.json  # summary again
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import nvidia_driver  # noqa: E402
from _results import Stopped, stop_on_sigterm  # noqa: E402
from _ws_launch import (  # noqa: E402
    CONFIGS,
    W_CONFIGS,
    config_name,
    eligible,
    geometry,
    launches,
    launches_w,
    parts,
    programs,
)


def _gemm_columns(kern: Any, zoo: Any, p: Any, dt: Any, repeats: int, row: dict) -> None:
    """cuBLAS and gemm_ws on the forward layer's GEMM [N*P*Q, C*R*S] x [K, C*R*S]^T."""
    import torch

    m, red = p.n * math.prod(p.out_shape[2:]), p.c * math.prod(p.wei_shape[2:])
    a = torch.randn(m, red, device="cuda", dtype=dt)
    b = torch.randn(p.k, red, device="cuda", dtype=dt) / math.sqrt(red)
    out = torch.empty(m, p.k, device="cuda", dtype=dt)
    row["cublas_gpu_ms"] = zoo.queued_gpu_ms(lambda: torch.mm(a, b.t()), repeats, 2)
    row["gemm"] = {}
    for cfg in CONFIGS:
        bm, bn, bk, warps, stages, ws = cfg[:6]
        grid, n_programs = programs(cfg, math.ceil(m / bm) * math.ceil(p.k / bn))

        def run(grid: tuple = grid, bm: int = bm, bn: int = bn, bk: int = bk,
                warps: int = warps, stages: int = stages, ws: int = ws,
                n_programs: int = n_programs) -> None:
            kern.gemm_ws[grid](a, b, out, m, p.k, red, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                               GROUP_M=8, WS=bool(ws), PROGRAMS=n_programs, num_warps=warps,
                               num_stages=stages)
        try:
            row["gemm"][config_name(cfg)] = {"gpu_ms": zoo.queued_gpu_ms(run, repeats, 2)}
        except Exception as exc:  # noqa: BLE001 - a configuration that fails is listed
            row["gemm"][config_name(cfg)] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def measure(zoo: Any, tma_conv: Any, kern: Any, ct: Any, spec: Any, layer: Any,
            type_name: str, direction: str, batch: int, repeats: int, gemm: bool) -> dict:
    import torch

    p = zoo.layer_problem(layer, type_name, direction, "NHWC", batch)
    g = geometry(p)
    stored, peer, ref = tma_conv.nhwc_tensors(zoo, p, type_name)
    dt = stored["x"].dtype
    row: dict[str, Any] = {
        "network": layer.network, "layer": layer.name, "held_out": layer.held_out,
        "case": f"{type_name}-{direction}-NHWC", "n": batch, "geometry": g,
        "cudnn_gpu_ms": zoo.queued_gpu_ms(peer, repeats, 3)}
    if direction == "W":
        _measure_w(zoo, tma_conv, kern, g, stored, ref, repeats, row)
        return row
    out_role = "y" if direction == "F" else "x"
    gather = tma_conv._gather_launch(ct, spec, p, stored, type_name, direction)
    gather()
    row["gather_rel_err"] = tma_conv._rel_err(stored[out_role], ref)
    row["gather_gpu_ms"] = zoo.queued_gpu_ms(gather, repeats, 2)
    src = stored["x"] if direction == "F" else stored["y"]
    xp = torch.empty(g["N"] * g["Hp"] * g["Wp"] * g["C_in"], device="cuda", dtype=dt)
    row["shift"] = {}
    for cfg in CONFIGS:
        name = config_name(cfg)
        try:
            pad, conv = launches(kern, g, src, stored["w"], stored[out_role], xp, cfg,
                                  direction == "B")
            if "pad_gpu_ms" not in row:
                row["pad_gpu_ms"] = zoo.queued_gpu_ms(pad, repeats, 2)
            stored[out_role].fill_(float("nan"))
            pad()
            conv()
            err = tma_conv._rel_err(stored[out_role], ref)

            def both(pad: Any = pad, conv: Any = conv) -> None:
                pad()
                conv()
            row["shift"][name] = {"rel_err": err,
                                  "conv_gpu_ms": zoo.queued_gpu_ms(conv, repeats, 2),
                                  "total_gpu_ms": zoo.queued_gpu_ms(both, repeats, 2)}
        except Exception as exc:  # noqa: BLE001 - a configuration that fails is listed
            row["shift"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    del xp
    if gemm and direction == "F":
        _gemm_columns(kern, zoo, p, dt, repeats, row)
    return row


def _measure_w(zoo: Any, tma_conv: Any, kern: Any, g: dict[str, int], stored: dict,
               ref: Any, repeats: int, row: dict) -> None:
    """Backward weights' columns: the copies alone (`pad_gpu_ms`) and each configuration of
    W_CONFIGS, its kernel alone (`conv_gpu_ms`) and with the copies and the parts' sum
    (`total_gpu_ms`). No gather column: the shipped backward weights run a split and a reduce
    the runtime launches (bench/zoo.py times them in place)."""
    import torch

    rows = g["N"] * g["Hp"] * g["Wp"]
    dt = stored["x"].dtype
    xp = torch.empty(rows * g["C_in"], device="cuda", dtype=dt)
    dyp = torch.empty(rows * g["C_out"], device="cuda", dtype=dt)
    most = max(parts(g, cfg)[0] for cfg in W_CONFIGS)
    ws = torch.empty(most * stored["w"].numel(), device="cuda", dtype=torch.float32)
    row["shift"] = {}
    for cfg in W_CONFIGS:
        name = config_name(cfg)
        try:
            pad, conv, reduce = launches_w(kern, g, stored["x"], stored["y"], stored["w"],
                                            xp, dyp, ws, cfg)
            if "pad_gpu_ms" not in row:
                row["pad_gpu_ms"] = zoo.queued_gpu_ms(pad, repeats, 2)
            stored["w"].fill_(float("nan"))
            pad()
            conv()
            reduce()
            err = tma_conv._rel_err(stored["w"], ref)

            def whole(pad: Any = pad, conv: Any = conv, reduce: Any = reduce) -> None:
                pad()
                conv()
                reduce()
            row["shift"][name] = {"rel_err": err, "parts": parts(g, cfg)[0],
                                  "conv_gpu_ms": zoo.queued_gpu_ms(conv, repeats, 2),
                                  "total_gpu_ms": zoo.queued_gpu_ms(whole, repeats, 2)}
        except Exception as exc:  # noqa: BLE001 - a configuration that fails is listed
            row["shift"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _geo(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def summarise(rows: list[dict]) -> dict:
    """Per case (the held-out networks' layers apart, `<case> held out`): the geomean over its
    layers of each column's GPU time over cuDNN's; a configuration's column only where it ran
    on every layer of the case."""
    out: dict[str, Any] = {}
    groups: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: (r["case"], bool(r.get("held_out")))):
        groups.setdefault(r["case"] + (" held out" if r.get("held_out") else ""), []).append(r)
    for case, rs in groups.items():
        e: dict[str, Any] = {"layers": len(rs)}
        if all("gather_gpu_ms" in r for r in rs):
            e["gather"] = _geo([r["gather_gpu_ms"] / r["cudnn_gpu_ms"] for r in rs])
        if all("pad_gpu_ms" in r for r in rs):
            e["pad"] = _geo([r["pad_gpu_ms"] / r["cudnn_gpu_ms"] for r in rs])
        for name in dict.fromkeys(config_name(c) for c in CONFIGS + W_CONFIGS):
            ok = [r for r in rs if "total_gpu_ms" in r["shift"].get(name, {})]
            if ok and len(ok) == len(rs):
                e[f"{name} total"] = _geo([r["shift"][name]["total_gpu_ms"] / r["cudnn_gpu_ms"]
                                           for r in ok])
                e[f"{name} conv"] = _geo([r["shift"][name]["conv_gpu_ms"] / r["cudnn_gpu_ms"]
                                          for r in ok])
        best = [min(v["total_gpu_ms"] for v in r["shift"].values() if "total_gpu_ms" in v)
                / r["cudnn_gpu_ms"] for r in rs
                if any("total_gpu_ms" in v for v in r["shift"].values())]
        e["shift best total"] = _geo(best)
        if "gather" in e:
            e["best of shift and gather"] = _geo([
                min([r["gather_gpu_ms"]] + [v["total_gpu_ms"] for v in r["shift"].values()
                                            if "total_gpu_ms" in v]) / r["cudnn_gpu_ms"]
                for r in rs])
        with_gemm = [r for r in rs if "cublas_gpu_ms" in r]
        if with_gemm:
            e["cublas"] = _geo([r["cublas_gpu_ms"] / r["cudnn_gpu_ms"] for r in with_gemm])
            for cfg in CONFIGS:
                name = config_name(cfg)
                ok = [r for r in with_gemm if "gpu_ms" in r["gemm"].get(name, {})]
                if ok and len(ok) == len(with_gemm):
                    e[f"gemm {name}"] = _geo([r["gemm"][name]["gpu_ms"] / r["cudnn_gpu_ms"]
                                              for r in ok])
        errs = [v["rel_err"] for r in rs for v in r["shift"].values() if "rel_err" in v]
        e["max_rel_err"] = max(errs) if errs else None
        out[case] = e
    return out


def markdown(result: dict) -> str:
    lines = [f"{result.get('device', '?')}, batch {result.get('batch')}, "
             f"{result.get('measured', len(result['rows']))} layer cases; GPU time / cuDNN "
             "(benchmark on), geomean over each case's layers", "",
             "| case | column | time / cuDNN |", "| --- | --- | --- |"]
    for case, e in result["summary"].items():
        for col, v in e.items():
            if col not in ("layers", "max_rel_err"):
                lines.append(f"| {case} ({e['layers']}) | {col} | {v:.2f} |")
        err = e["max_rel_err"]
        lines.append(f"| {case} ({e['layers']}) | max rel err | "
                     f"{'-' if err is None else f'{err:.1e}'} |")
    return "\n".join(lines) + "\n"


def compile_check(out: str) -> int:
    """No GPU: every configuration of the shift kernels (forward, backward data, backward
    weights) and of gemm_ws compiled for sm90, the loop's warp specialisation as the
    configuration says: the wgmma and setmaxnreg (a specialised kernel's register split) its
    PTX holds, its warps and shared memory, or the compile's error."""
    import contextlib
    import os
    import tempfile

    import _ws_kernel as kern
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    rows = []
    for fn, directions, configs in ((kern.conv2d_shift, (False, True), CONFIGS),
                                    (kern.gemm_ws, (None,), CONFIGS),
                                    (kern.conv2d_shift_wrw, (None,), W_CONFIGS)):
        for backward in directions:
            for cfg in configs:
                bm, bn, bk, warps, stages, ws = cfg[:6]
                consts: dict[str, Any] = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                          "GROUP_M": 8, "WS": bool(ws)}
                if "PROGRAMS" in fn.arg_names:
                    consts["PROGRAMS"] = programs(cfg, 1)[1]
                if backward is not None:
                    consts["BACKWARD_DATA"] = backward
                sig = {n: "*fp16" if n.endswith("_ptr") else "i32" for n in fn.arg_names}
                if "ws_ptr" in sig:
                    sig["ws_ptr"] = "*fp32"
                sig.update({k: "constexpr" for k in consts})
                direction = {None: "-", False: "F", True: "B"}[backward]
                if fn is kern.conv2d_shift_wrw:
                    direction = "W"
                row: dict[str, Any] = {"kernel": fn.__name__, "config": config_name(cfg),
                                       "direction": direction}
                # Triton's C++ passes print their failures to fd 2: kept out of the table.
                with tempfile.TemporaryFile() as err, contextlib.ExitStack() as stack:
                    saved = os.dup(2)
                    os.dup2(err.fileno(), 2)
                    stack.callback(os.close, saved)
                    stack.callback(os.dup2, saved, 2)
                    try:
                        k = triton.compile(ASTSource(fn, signature=sig, constexprs=consts,
                                                     attrs={}),
                                           target=GPUTarget("cuda", 90, 32),
                                           options={"num_warps": warps, "num_stages": stages})
                        ptx = k.asm["ptx"]
                        row.update(wgmma=ptx.count("wgmma.mma_async"),
                                   setmaxnreg=ptx.count("setmaxnreg"),
                                   num_warps=k.metadata.num_warps, shared=k.metadata.shared)
                    except Exception as exc:  # noqa: BLE001 - a failed compile is a result
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
    Path(out + ".json").write_text(json.dumps({"triton": triton.__version__, "target": "sm90",
                                               "rows": rows}, indent=1) + "\n")
    return 0


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="path stem of the .json and .md results")
    ap.add_argument("--compile-check", metavar="STEM",
                    help="no GPU: compile every configuration for sm90 into STEM.json")
    ap.add_argument("--from-json", type=Path, metavar="FILE",
                    help="print a saved run's summary again, recomputed from its rows")
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--types", default="FP16,BF16")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--gemm", action="store_true",
                    help="forward: also cuBLAS and gemm_ws on each layer's GEMM")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--max-gb", type=float, default=3.0)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    if not (args.out or args.compile_check or args.from_json):
        ap.error("give --out STEM (GPU run), --compile-check STEM or --from-json FILE")
    return args


def _run(args: argparse.Namespace) -> dict:
    import _ws_kernel as kern
    import tma_conv
    import torch
    import triton
    import zoo
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    layers = [la for la in zoo.every_kth(zoo.load_layers(held_out=args.held_out), args.every)
              if tma_conv.eligible(la.problem)]
    seen, unique = set(), []
    for la in layers:  # one row per distinct shape
        pr = la.problem
        key = (pr.c, pr.k, pr.in_shape[2:], pr.wei_shape[2:], tuple(pr.pad),
               tuple(pr.dilation))
        if key not in seen:
            seen.add(key)
            unique.append(la)
    # A fixed shuffled order: a run its budget cuts short holds a sample of every network,
    # the held-out ones among them.
    unique.sort(key=lambda la: zlib.crc32(f"{la.network}/{la.name}".encode()))
    jobs = [(la, t, d) for t in args.types.split(",") for d in args.directions.split(",")
            for la in unique]
    rows: list[dict] = []
    errors: list[dict] = []
    skipped = 0
    stopped = None
    t0 = time.monotonic()
    try:
        with stop_on_sigterm(), tma_conv._progress(len(jobs)) as advance:
            for la, t, d in jobs:
                if time.monotonic() - t0 > args.budget_s:
                    break
                p = zoo.layer_problem(la, t, d, "NHWC", args.batch)
                if zoo.tensor_gb(p) > args.max_gb or not eligible(p):
                    skipped += 1
                    advance()
                    continue
                try:
                    rows.append(measure(zoo, tma_conv, kern, ct, spec, la, t, d, args.batch,
                                        args.repeats, args.gemm))
                except Exception as exc:  # noqa: BLE001 - listed, the run goes on
                    errors.append({"network": la.network, "layer": la.name, "case": f"{t}-{d}",
                                   "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                torch.cuda.empty_cache()
                advance()
    except Stopped:
        stopped = time.monotonic() - t0
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__,
            "driver": nvidia_driver(),
            "batch": args.batch, "every": args.every, "repeats": args.repeats,
            "held_out": args.held_out, "configs": [config_name(c) for c in CONFIGS],
            "w_configs": [config_name(c) for c in W_CONFIGS],
            "jobs": len(jobs), "measured": len(rows), "skipped": skipped,
            "stopped_at_s": stopped, "errors": errors, "summary": summarise(rows),
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.compile_check:
        return compile_check(args.compile_check)
    if args.from_json:
        try:
            result = json.loads(args.from_json.read_text())
            result["summary"] = summarise(result["rows"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"error: {args.from_json} is not a saved bench/ws_conv.py run ({exc}); give "
                  "the .json it wrote", file=sys.stderr)
            return 2
    else:
        result = _run(args)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
        Path(args.out + ".md").write_text(markdown(result))
    print(json.dumps(result["summary"], indent=1) if args.json else markdown(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
