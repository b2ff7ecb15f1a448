"""The Triton convolution kernels (kernels/conv_triton.py) against cuDNN, per ResNet-50 layer.

For the 23 forward layers of ResNet-50 (bench/_layers.py, batch 32) and each direction (F, B, W),
type (FP16, BF16, FP32 with IEEE products, TF32 as a math mode; FP32X3, asked for by name:
FP32 data with three TF32 products each, "tf32x3") and layout (NCHW, NHWC): the
kernels are compiled ahead of time exactly as the builder does (triton.compile of an ASTSource
for the GPU's target, the align16 variant where the problem meets its assumptions, else the
generic one; in parallel, into Triton's cache), launched as compiled objects, checked against
torch in float64, and timed with CUDA events (median of samples of several launches, inputs made
outside the timed region) for a small search of tile configurations; the fastest is kept, as
tuning would. cuDNN runs through torch with cudnn.benchmark on, TF32 off for FP32 and on for
TF32 (channels-last tensors for NHWC). Each timed sample is one replay of a CUDA graph of
several calls, so that neither Python's nor PyTorch's launch cost is counted. The ratio is
ours / cuDNN (above 1: cuDNN is faster).

    python bench/triton_conv.py --out bench/results/triton_kernels_h100
    python bench/triton_conv.py --types FP16 --dirs F --layouts NHWC --layers 0,2 --json

Writes <out>.json (rows, `summary` keyed `<type>-<direction>-<layout>` with geomean_ratio,
max_ratio and layers, the best configuration per layer) and <out>.md, and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TYPES = ("FP16", "BF16", "FP32", "TF32")
#: Asked for by name only: FP32 data with three TF32 products per product (the dot's "tf32x3"
#: input precision), against cuDNN with TF32 off and at FP32's tolerance.
EXTRA_TYPES = ("FP32X3",)
DIRS = ("F", "B", "W")
LAYOUTS = ("NHWC", "NCHW")
#: Relative error (Frobenius) allowed against the float64 reference, by type.
TOLERANCE = {"FP16": 5e-3, "BF16": 3e-2, "FP32": 2e-5, "TF32": 5e-3, "FP32X3": 2e-5}

# Candidate tile configurations (sm90), by direction and arithmetic: the search space here.
_T16 = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (256, 128, 64, 8, 3),
        (64, 64, 64, 4, 4), (128, 256, 64, 8, 3), (128, 128, 128, 8, 3), (64, 128, 64, 4, 4)]
# TF32: one stage too, where operands that are not K-major load faster through registers, and
# mma.sync in place of wgmma (a sixth value, the spec's MMA = 2), which reads them from
# registers whatever their order.
_TF32 = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (128, 128, 32, 4, 3), (64, 64, 32, 4, 4),
         (64, 64, 32, 4, 1), (64, 64, 64, 4, 1), (128, 64, 32, 4, 1), (128, 64, 64, 4, 1),
         (64, 128, 32, 4, 1), (128, 128, 32, 8, 1), (256, 128, 32, 8, 1), (128, 256, 32, 8, 1),
         (64, 64, 32, 4, 4, 2), (128, 64, 32, 4, 4, 2), (128, 128, 32, 4, 3, 2),
         (64, 128, 32, 4, 1, 2), (64, 64, 32, 4, 3, 2), (64, 128, 32, 4, 4, 2),
         (128, 128, 32, 8, 3, 2)]
_IEEE = [(64, 64, 32, 4, 2), (128, 64, 32, 4, 2), (128, 128, 32, 8, 2), (64, 128, 32, 4, 2),
         (64, 64, 32, 4, 1), (128, 64, 32, 4, 1), (128, 128, 32, 8, 1), (64, 128, 32, 4, 1),
         (128, 128, 32, 8, 1), (128, 64, 16, 4, 1), (64, 64, 16, 4, 2)]
_SMALLC = {"16": [(128, 64, 32, 4, 3), (256, 64, 32, 8, 3), (128, 64, 32, 4, 1)],
           "TF32": [(128, 64, 32, 4, 1), (128, 64, 32, 4, 3), (256, 64, 32, 8, 3)],
           "FP32": [(128, 64, 32, 4, 1), (128, 64, 32, 4, 2), (64, 64, 32, 4, 2)]}
_W16 = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 64, 64, 4, 4),
        (64, 128, 64, 4, 4)]
# Few input channels: backward data with a narrow N tile (every stride phase at once where
# there is a stride), backward weights over a filter row's (s, c).
_B_SMALLC = {"16": [(128, 16, 64, 4, 3), (256, 16, 64, 8, 3), (256, 16, 32, 4, 4),
                    (128, 16, 32, 4, 3)],
             "TF32": [(128, 16, 32, 4, 1), (128, 16, 16, 4, 2), (128, 16, 32, 4, 3)],
             "FP32": [(128, 16, 32, 4, 1), (128, 16, 32, 4, 2), (64, 16, 32, 4, 2)]}
_W_SMALLC = {"16": [(64, 32, 64, 4, 4), (64, 32, 32, 4, 4), (64, 32, 128, 4, 3)],
             "TF32": [(64, 32, 32, 4, 4), (64, 32, 32, 4, 1), (64, 32, 64, 4, 2)],
             "FP32": [(64, 32, 32, 4, 1), (64, 32, 32, 4, 2)]}


def arith(dtype: str) -> str:
    """The candidate list of a type: 16-bit, TF32 tiles (FP32X3 too) or FP32 ones."""
    return "16" if dtype in ("FP16", "BF16") else "TF32" if dtype == "FP32X3" else dtype


def candidates(kernel: str, dtype: str, sizes: dict[str, int]) -> list[dict[str, int]]:
    a = arith(dtype)
    if kernel == "conv2d_fwd_smallc":
        tiles = _SMALLC[a]
    elif kernel == "conv2d_bwd_weight_smallc":
        tiles = _W_SMALLC[a]
    elif kernel == "conv2d_bwd_data_smallc" or (
            kernel == "conv2d_bwd_data" and sizes["C"] < 16):
        tiles = _B_SMALLC[a]
    elif kernel == "conv2d_bwd_weight" and a == "16":
        tiles = _W16
    else:
        tiles = {"16": _T16, "TF32": _TF32, "FP32": _IEEE}[a]
    out = []
    for m, n, k, w, s, *mma in tiles:
        c = {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": w, "num_stages": s,
             "GROUP_M": 8, "SPLIT_K": 1}
        out.append({**c, "MMA": mma[0]} if mma else c)
    return out


def layer_sizes(p: Any) -> dict[str, int]:
    h, w = p.in_spatial
    r, s = p.filter
    (ph, pw), (sh, sw), (dh, dw) = p.pad, p.stride, p.dilation
    out_h = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    out_w = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    g = p.groups
    return {"N": p.n, "C": p.c // g, "H": h, "W": w, "K": p.k // g, "P": out_h, "Q": out_w,
            "R": r, "S": s, "G": g, "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw,
            "dil_h": dh, "dil_w": dw}


def _compile_job(job: tuple) -> str:
    """Compile one (kernel, dtype, config, layout, precision, aligned) into Triton's cache."""
    kernel, dtype, cfg, channels_last, precision, aligned, target = job
    _compiled(kernel, dtype, cfg, channels_last, precision, aligned, target)
    return kernel


_CACHE: dict[tuple, Any] = {}


def _compiled(kernel: str, dtype: str, cfg: dict[str, int], channels_last: bool,
              precision: str, aligned: bool, target: tuple) -> Any:
    key = (kernel, dtype, tuple(sorted(cfg.items())), channels_last, precision, aligned, target)
    if key not in _CACHE:
        from miopenkernels.compiler.triton import source_arguments
        from miopenkernels.kernels import conv_triton as ct
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler import compile as tcompile

        fn = ct.JIT[kernel]
        sig, cx = ct.triton_signature(kernel, dtype, cfg, channels_last, precision)
        # What the package's aligned object assumes (8 for 16-bit channels-last objects).
        from miopenkernels.kernels import conv_triton_spec as spec

        assume = list(spec.align_assumptions(kernel, dtype, channels_last)) if aligned else []
        sig, cx, attrs = source_arguments(
            fn, [(n, t) for n, t in sig.items() if t != "constexpr"], cx, assume)
        opts = {"num_warps": cfg.get("num_warps", 4), "num_stages": cfg.get("num_stages", 2)}
        import triton
        from miopenkernels.compiler.triton import mma_env

        # Triton's cache key does not hold DISABLE_MMA_V3: mma.sync objects get a folder.
        with mma_env(cfg.get("MMA", 0)), triton.knobs.cache.scope():
            if cfg.get("MMA"):
                triton.knobs.cache.dir = os.path.join(triton.knobs.cache.dir, "mma2")
            _CACHE[key] = tcompile(ASTSource(fn, sig, cx, attrs), target=GPUTarget(*target),
                                   options=opts)
    return _CACHE[key]


def add_timing_args(ap: argparse.ArgumentParser, cases: tuple[str, ...], samples: int,
                    inner: int) -> None:
    """The arguments the layer-sweep benches share (bench/serial_split.py,
    bench/depthwise_tiles.py): cases, timing samples, compile workers, output."""
    ap.add_argument("--cases", default=",".join(cases))
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--inner", type=int, default=inner, help="calls per CUDA graph (a sample)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--out", default="", help="write <out>.json")
    ap.add_argument("--json", action="store_true", help="print the JSON result")


def sweep_setup(args: Any, known: tuple[str, ...]) -> tuple[list[str], Any, tuple]:
    """(cases asked for, the GPU's properties, its Triton target) for a layer-sweep bench;
    SystemExit naming the known cases where one is not."""
    cases = [c for c in args.cases.split(",") if c]
    bad = sorted(set(cases) - set(known))
    if bad:
        raise SystemExit(f"unknown case(s) {', '.join(bad)}: pick from {', '.join(known)}")
    import torch

    cap = torch.cuda.get_device_capability(0)
    return cases, torch.cuda.get_device_properties(0), ("cuda", cap[0] * 10 + cap[1], 32)


def compile_all(job: Any, jobs: list, workers: int) -> None:
    """Run `job` over `jobs` in a pool of spawned processes (each fills Triton's cache)."""
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=workers,
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(job, jobs, chunksize=1))
    print(f"compiled {len(jobs)} objects in {time.time() - t0:.0f}s", flush=True)


def write_result(result: dict, args: Any) -> int:
    """A layer-sweep bench's result to <out>.json and, with --json, to stdout; exit code 0."""
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
    return 0


def median_ms(fn: Any, samples: int, inner: int) -> float:
    """Median GPU time of one call of fn: `inner` calls are captured in a CUDA graph (so the
    host's launch cost, Python's or PyTorch's, is not timed) and each sample is one replay
    between CUDA events."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(inner):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    del graph
    return float(statistics.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--layers", default="", help="comma-separated layer indices (default all)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--inner", type=int, default=10, help="calls per CUDA graph (one sample)")
    ap.add_argument("--max-configs", type=int, default=0, help="search at most this many")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--out", default="", help="write <out>.json and <out>.md")
    ap.add_argument("--json", action="store_true", help="print the JSON result")
    ap.add_argument("--check-first", action="store_true",
                    help="first check every case with one configuration (quick, untimed)")
    ap.add_argument("--from-json", default="",
                    help="no GPU: re-read a result JSON of this script (for --out / --tuned)")
    ap.add_argument("--tuned", default="",
                    help="write the best configuration per case and layer (kernels/"
                         "conv_triton_tuned_sm90.json); into an existing file, this run's "
                         "layers replace their own and the others stay")
    args = ap.parse_args(argv)
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        finish(result, args)
        return 0

    from _layers import resnet50_layers
    from miopenkernels.kernels import conv_triton_spec as spec

    types = [t for t in args.types.split(",") if t]
    unknown = sorted(set(types) - set(TYPES + EXTRA_TYPES))
    if unknown:
        raise SystemExit(f"unknown type(s) {', '.join(unknown)}: pick from "
                         f"{', '.join(TYPES + EXTRA_TYPES)}")
    dirs = [d for d in args.dirs.split(",") if d]
    layouts = [lay for lay in args.layouts.split(",") if lay]
    layers = resnet50_layers("FP32", args.batch)
    picked = [int(i) for i in args.layers.split(",") if i] or list(range(len(layers)))

    import torch

    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    cap = torch.cuda.get_device_capability(0)
    target = ("cuda", cap[0] * 10 + cap[1], 32)

    # Every case and the configurations it tries, then compile them all in parallel.
    cases = []
    jobs: dict[tuple, tuple] = {}
    for li in picked:
        sz = layer_sizes(layers[li])
        for t in types:
            dtype = "FP32" if t in ("TF32", "FP32X3") else t
            precision = {"TF32": "tf32", "FP32X3": "tf32x3"}.get(t, "ieee")
            for lay in layouts:
                cl = lay == "NHWC"
                aligned = sz["C"] % 16 == 0 and sz["K"] % 16 == 0 and (
                    not cl or all(v % 16 == 0 for v in (sz["C"] * sz["W"], sz["K"] * sz["Q"])))
                for d in dirs:
                    kernel = spec.kernel_for(d, sz)
                    cfgs = candidates(kernel, t, sz)
                    if args.max_configs:
                        cfgs = cfgs[: args.max_configs]
                    if d == "W":
                        # The split that fills the GPU, and twice that where blocks allow.
                        ws_cfgs = []
                        for c in cfgs:
                            k = spec.split_for(kernel, sz, c, sms)
                            ws_cfgs.append(dict(c, SPLIT_K=k))
                            blocks = sz["N"] * sz["P"] * sz["Q"] // c["BLOCK_K"]
                            if k < 64 and blocks // (2 * k) >= 4:
                                ws_cfgs.append(dict(c, SPLIT_K=2 * k))
                        cfgs = ws_cfgs
                    elif spec.split_applies(kernel, sz):
                        # Forward / backward data: split the reduction only where the output
                        # tiles leave most of the GPU idle.
                        more = []
                        for c in cfgs:
                            gx, gy, gz = spec.grid(kernel, sz, c)
                            red = sz["R"] * sz["S"] * (sz["C"] if d == "F" else sz["K"])
                            steps = red // c["BLOCK_K"] // (sz["stride_h"] * sz["stride_w"]
                                                             if d == "B" else 1)
                            k = 1
                            while gx * gy * gz * k * 2 <= 2 * sms and steps // (2 * k) >= 8:
                                k *= 2
                            if k > 1:
                                more.append(dict(c, SPLIT_K=k))
                        cfgs = cfgs + more
                    for c in cfgs:
                        jobs[(kernel, dtype, tuple(sorted(c.items())), cl, precision, aligned)] = (
                            kernel, dtype, c, cl, precision, aligned, target)
                        if c["SPLIT_K"] > 1:  # one reduce object serves every split
                            rc = {"num_warps": spec.REDUCE_WARPS, "num_stages": 1}
                            jobs[("r", dtype)] = (
                                "conv2d_bwd_weight_reduce", dtype, rc, False, "ieee", False,
                                target)
                    cases.append((li, t, dtype, precision, lay, d, kernel, cfgs, aligned))
    order = {t: i for i, t in enumerate(TYPES + EXTRA_TYPES + LAYOUTS + DIRS)}
    cases.sort(key=lambda c: (order[c[1]], order[c[4]], order[c[5]], c[0]))
    t0 = time.time()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
        list(pool.map(_compile_job, list(jobs.values()), chunksize=1))
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f}s on {args.workers} workers",
          flush=True)

    if args.check_first:
        quick = argparse.Namespace(**{**vars(args), "samples": 2, "inner": 1,
                                      "out": args.out and args.out + ".check"})
        checked = run_cases([c[:7] + (c[7][:1],) + c[8:] for c in cases], layers, target, quick,
                            sms)
        wrong = [r for r in checked if not r["all_correct"]]
        print(f"checked {len(checked)} cases with one configuration each: {len(wrong)} wrong",
              flush=True)
    rows = run_cases(cases, layers, target, args, sms)
    for r in rows:
        r["shape"] = spec.shape_key(layer_sizes(layers[r["layer"]]))
    finish(summarise(rows, props, target), args)
    return 0


def finish(result: dict, args: Any) -> None:
    """Print the table; write <out>.json/.md and the tuned-configuration file if asked."""
    text = table(result)
    print(text)
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
        Path(args.out + ".md").write_text(text + "\n")
    if args.tuned:
        best = tuned(result, args.from_json or args.out)
        path = Path(args.tuned)
        if path.is_file():
            best = merge_tuned(json.loads(path.read_text()), best)
        path.write_text(json.dumps(best, indent=1, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(result))


def tuned(result: dict, source: str) -> dict:
    """Best configuration per case and layer shape, and each case's most frequent winner."""
    from collections import Counter

    from _layers import resnet50_layers
    from miopenkernels.kernels.conv_triton_spec import shape_key

    keys = {i: shape_key(layer_sizes(p)) for i, p in enumerate(resnet50_layers("FP32"))}
    configs: dict[str, dict[str, dict]] = {}
    for r in result["rows"]:
        if r.get("config"):
            case = f"{r['type']}-{r['direction']}-{r['layout']}"
            configs.setdefault(case, {})[r.get("shape") or keys[r["layer"]]] = r["config"]
    defaults = {}
    for case, by_shape in configs.items():
        counts = Counter(json.dumps(c, sort_keys=True) for c in by_shape.values())
        defaults[case] = json.loads(counts.most_common(1)[0][0])
    name = source and Path(source).name
    name = name if not name or name.endswith(".json") else name + ".json"
    return {"device": result["device"], "triton": result["triton"],
            "sources": {case: name for case in configs}, "configs": configs,
            "defaults": defaults}


def merge_tuned(old: dict, new: dict) -> dict:
    """An existing tuned table with a new run's measurements merged in per layer: a layer the
    run measured takes its configuration, the others keep theirs; each case's usual winner is
    worked out again over its merged layers, and `sources` lists every run a case's layers
    come from."""
    from collections import Counter

    if (old.get("device"), old.get("triton")) != (new["device"], new["triton"]):
        raise SystemExit(f"the tuned table was measured on {old.get('device')} with Triton "
                         f"{old.get('triton')}, this run on {new['device']} with Triton "
                         f"{new['triton']}: write a new table instead")
    sources = {case: [v] if isinstance(v, str) else list(v) for case, v in (
        old.get("sources") or {c: old.get("source") for c in old["configs"]}).items()}
    configs = {case: dict(by_shape) for case, by_shape in old["configs"].items()}
    defaults = dict(old["defaults"])
    for case, by_shape in new["configs"].items():
        merged = configs.setdefault(case, {})
        merged.update(by_shape)
        counts = Counter(json.dumps(c, sort_keys=True) for c in merged.values())
        defaults[case] = json.loads(counts.most_common(1)[0][0])
        names = sources.setdefault(case, [])
        for name in ([new["sources"][case]] if isinstance(new["sources"][case], str)
                     else new["sources"][case]):
            if name not in names:
                names.append(name)
    return {"device": new["device"], "triton": new["triton"], "sources": sources,
            "configs": configs, "defaults": defaults}


def run_cases(cases: list, layers: list, target: tuple, args: Any, sms: int) -> list[dict]:
    import torch
    import torch.nn.functional as F
    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton as ct
    from miopenkernels.kernels import conv_triton_spec as spec

    torch.backends.cudnn.benchmark = True
    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32}
    rows: list[dict] = []
    data: dict[tuple, Any] = {}
    for li, t, dtype, precision, lay, d, kernel, cfgs, aligned in cases:
        p = layers[li]
        sz = layer_sizes(p)
        stride, pad, dil, g = p.stride, p.pad, p.dilation, p.groups
        key = (li, dtype)
        if key not in data:
            gen = torch.Generator(device="cuda").manual_seed(li)
            n, c, k = sz["N"], sz["C"] * g, sz["K"] * g
            x = torch.randn((n, c, sz["H"], sz["W"]), device="cuda", generator=gen)
            w = torch.randn((k, sz["C"], sz["R"], sz["S"]), device="cuda", generator=gen)
            w /= math.sqrt(sz["C"] * sz["R"] * sz["S"])
            dy = torch.randn((n, k, sz["P"], sz["Q"]), device="cuda", generator=gen)
            x, w, dy = (v.to(tdt[dtype]) for v in (x, w, dy))
            xd, wd, dyd = x.double(), w.double(), dy.double()
            ref = {"F": F.conv2d(xd, wd, None, stride, pad, dil, g)}
            gi, gw, _ = torch.ops.aten.convolution_backward(
                dyd, xd, wd, None, list(stride), list(pad), list(dil), False, [0, 0], g,
                [True, True, False])
            ref["B"], ref["W"] = gi, gw
            data[key] = (x, w, dy, ref)
        x, w, dy, ref = data[key]
        mf = torch.channels_last if lay == "NHWC" else torch.contiguous_format
        xl, wl, dyl = (v.contiguous(memory_format=mf) for v in (x, w, dy))
        torch.backends.cudnn.allow_tf32 = t == "TF32"
        cudnn = _cudnn(d, xl, wl, dyl, p)
        out = torch.empty_like(cudnn()) if d == "F" else torch.empty_like(xl if d == "B" else wl)
        # Our tensors: x and dy read; the direction's output written in place of its tensor.
        tx, tw, ty = (out, wl, dyl) if d == "B" else (xl, out, dyl) if d == "W" else (
            xl, wl, out)
        strides = {"x": tx.stride(), "w": tw.stride(), "y": ty.stride()}
        cargs = spec.conv_args(sz, strides)
        cudnn_ms = median_ms(cudnn, args.samples, args.inner)
        best: dict[str, Any] | None = None
        tried = []
        for cfg in cfgs:
            ck = _compiled(kernel, dtype, cfg, lay == "NHWC", precision, aligned, target)
            grid = spec.grid(kernel, sz, cfg)
            wsb = spec.workspace_bytes(kernel, sz, cfg)
            ws = torch.empty(max(wsb // 4, 1), device="cuda", dtype=torch.float32)
            _, cx = spec.triton_signature(kernel, dtype, cfg, lay == "NHWC", precision)
            # Triton's launcher takes the kernel's parameters, the size tuples as tuples.
            vals = list(launch_arguments(ct.JIT[kernel], {
                "x_ptr": tx, "w_ptr": tw, "y_ptr": ty, "ws_ptr": ws, **cargs, **cx}).values())
            launches = [(ck, grid, vals)]
            if cfg["SPLIT_K"] > 1:
                rc = {"num_warps": spec.REDUCE_WARPS, "num_stages": 1}
                rk = _compiled("conv2d_bwd_weight_reduce", dtype, rc, False, "ieee", False, target)
                ra = dict(spec.reduce_args(kernel, cargs, lay == "NHWC"), SPLIT_K=cfg["SPLIT_K"])
                rv = [ws, out, *(ra[nm] for nm, kd in spec.REDUCE_ARGS if kd == "i32"),
                      spec.REDUCE_BLOCK]
                launches.append((rk, (spec.cdiv(ra["TOTAL"], spec.REDUCE_BLOCK), 1, 1), rv))

            def ours(launches: list = launches) -> None:
                for kern, gr, vv in launches:
                    kern[gr](*vv)
            out.fill_(float("nan"))
            ours()
            torch.cuda.synchronize()
            r = ref[d]
            err = float((out.double() - r).norm() / r.norm())
            ok = bool(err <= TOLERANCE[t])
            ms = median_ms(ours, args.samples, args.inner)
            tried.append({"config": cfg, "ms": ms, "rel_err": err, "ok": ok})
            if ok and (best is None or ms < best["ms"]):
                best = tried[-1]
        tried = [[config_name(e["config"]), round(e["ms"], 5), float(f"{e['rel_err']:.2e}"),
                  e["ok"]] for e in tried]
        row = {"layer": li, "problem": p.key(), "type": t, "direction": d, "layout": lay,
               "kernel": kernel, "aligned": aligned, "cudnn_ms": cudnn_ms, "tried": tried,
               "all_correct": all(e[3] for e in tried)}
        if best is not None:
            row.update(ours_ms=best["ms"], config=best["config"], rel_err=best["rel_err"],
                       ratio=best["ms"] / cudnn_ms)
        rows.append(row)
        print(f"{t:5} {d} {lay} L{li:02d} {kernel:18} cudnn {cudnn_ms:7.4f} ours "
              f"{row.get('ours_ms', float('nan')):7.4f} ratio {row.get('ratio', float('nan')):5.2f}"
              f" err {min(e[2] for e in tried):.1e}"
              f"{'' if row['all_correct'] else ' WRONG'}", flush=True)
        if args.out:
            Path(args.out + ".partial.json").write_text(json.dumps(rows) + "\n")
    return rows


def config_name(c: dict[str, int]) -> str:
    return (f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']} s{c['num_stages']} "
            f"g{c['GROUP_M']} k{c['SPLIT_K']}{' mma' + str(c['MMA']) if c.get('MMA') else ''}")


def _cudnn(d: str, x: Any, w: Any, dy: Any, p: Any) -> Any:
    """cuDNN through torch for one direction (backward: aten.convolution_backward's mask)."""
    import torch
    import torch.nn.functional as F

    stride, pad, dil, g = list(p.stride), list(p.pad), list(p.dilation), p.groups
    if d == "F":
        return lambda: F.conv2d(x, w, None, stride, pad, dil, g)
    mask = [d == "B", d == "W", False]
    return lambda: torch.ops.aten.convolution_backward(
        dy, x, w, None, stride, pad, dil, False, [0, 0], g, mask)


def summarise(rows: list[dict], props: Any, target: tuple) -> dict:
    import platform

    import torch
    import triton

    summary: dict[str, dict] = {}
    for r in rows:
        s = summary.setdefault(f"{r['type']}-{r['direction']}-{r['layout']}",
                               {"ratios": [], "wrong": []})
        if "ratio" in r:
            s["ratios"].append(r["ratio"])
        if not r["all_correct"] or "ratio" not in r:
            s["wrong"].append(r["layer"])
    for s in summary.values():
        rs = s.pop("ratios")
        s["layers"] = len(rs)
        s["geomean_ratio"] = math.exp(sum(map(math.log, rs)) / len(rs)) if rs else None
        s["max_ratio"] = max(rs) if rs else None
    from _machine import nvidia_driver

    driver = nvidia_driver()
    return {"device": props.name, "sms": props.multi_processor_count, "target": list(target),
            "driver": driver, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(),
            "method": "median over samples of one CUDA-graph replay of several calls (CUDA "
                      "events), inputs made outside timed regions; cudnn.benchmark on; best of "
                      "a small tile search per layer",
            "summary": summary, "rows": rows}


def table(result: dict) -> str:
    lines = [f"Triton convolution vs cuDNN on {result['device']} (driver {result['driver']}, "
             f"CUDA {result['cuda']}, cuDNN {result['cudnn']}, torch {result['torch']}, "
             f"triton {result['triton']}); ratio = ours / cuDNN", "",
             "| type-dir-layout | geomean | max | layers | wrong |", "|---|---|---|---|---|"]
    for k, s in sorted(result["summary"].items()):
        gm = f"{s['geomean_ratio']:.2f}" if s["geomean_ratio"] else "-"
        mx = f"{s['max_ratio']:.2f}" if s["max_ratio"] else "-"
        lines.append(f"| {k} | {gm} | {mx} | {s['layers']} | {s['wrong'] or ''} |")
    lines += ["", "| type | dir | layout | layer | cuDNN ms | ours ms | ratio | config |",
              "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        c = r.get("config")
        cs = config_name(c) if c else "none correct"
        lines.append(f"| {r['type']} | {r['direction']} | {r['layout']} | {r['layer']} | "
                     f"{r['cudnn_ms']:.4f} | {r.get('ours_ms', float('nan')):.4f} | "
                     f"{r.get('ratio', float('nan')):.2f} | {cs} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
