"""Where a graph-replayed forward's time goes: kernels, their sum and the gaps between them.

bench/torch_models.py times whole forwards and bench/torch_layers.py each convolution alone;
neither says how much of a replayed forward is kernels and how much the time between one
kernel's end and the next one's start. For each case (model, batch, type, layout; the models
of bench/torch_models.py), both engines' forwards (torch's model on cuDNN, the converted copy)
are captured once with `torch.cuda.graph` and replayed `--replays` times under the profiler
(CUPTI kernel records). Per engine and replay: the kernels, their summed time, the span from
the first kernel's start to the last one's end, and the gap before each kernel (its start
minus the previous kernel's end; negative where the two overlapped), split by whether the
kernel is a convolution's (cuDNN's or this package's) or another op's. The replays are timed
with CUDA events too, outside the profiler, in turn with the other engine's.

    python bench/torch_graph_profile.py --cases resnet50,1,FP16,channels_last --out OUT
    (OUT.json and a table on stdout; GPU machine, an installed package's databases through
    MIOPEN_SYSTEM_DB_PATH)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from torch_models import _graph, _interleaved_ms, environment, model_pair  # noqa: E402

DEFAULT_CASES = ("resnet50,1,FP16,channels_last", "resnet50,1,FP32,channels_last")
# Substrings of the kernels that compute a convolution: cuDNN's (and the cuBLAS-like kernels
# it runs for 1x1 layers) and this package's (Triton families and the portable kernels).
CONV_NAMES = ("conv", "xmma", "cudnn", "implicit", "gemm", "gemv", "sm90_", "sm80_", "winograd",
              "depthwise", "grouped", "naive", "splitkreduce")
# cuDNN's batch norm kernels carry "cudnn" in their names without being a convolution's.
NOT_CONV = ("elementwise", "bn_fw", "batch_norm")


def is_conv(name: str) -> bool:
    low = name.lower()
    return any(s in low for s in CONV_NAMES) and not any(s in low for s in NOT_CONV)


def conv_order(torch: Any, net: Any, x: Any) -> list[str]:
    """The model's convolutions and linear layers as they run, each named by its shape
    (C-HxW-RxS-K stride, or fc C-K)."""
    names: list[str] = []

    def hook(module: Any, inputs: Any, _out: Any) -> None:
        if isinstance(module, torch.nn.Linear):
            names.append(f"fc {module.in_features}-{module.out_features}")
            return
        h, w = inputs[0].shape[-2:]
        r, s = module.kernel_size
        g = f" g{module.groups}" if module.groups > 1 else ""
        names.append(f"{module.in_channels}-{h}x{w}-{r}x{s}-{module.out_channels} "
                     f"u{module.stride[0]}{g}")

    hooks = [m.register_forward_hook(hook) for m in net.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    try:
        with torch.no_grad():
            net(x)
    finally:
        for h in hooks:
            h.remove()
    return names


def per_layer(kernels: list[tuple[str, float, float]], names: list[str]
              ) -> list[dict[str, Any]] | None:
    """One replay's convolution kernels grouped into layers (a run of consecutive convolution
    kernels is one layer's: its kernel and any split reduce), named in `names` order; None
    where the runs and the layers do not pair up."""
    runs: list[list[tuple[str, float, float]]] = []
    prev_conv = False
    for k in kernels:
        conv = is_conv(k[0])
        if conv:
            if prev_conv:
                runs[-1].append(k)
            else:
                runs.append([k])
        prev_conv = conv
    if len(runs) != len(names):
        return None
    return [{"layer": name, "us": round(sum(e - s for _, s, e in run), 3), "kernels": len(run)}
            for name, run in zip(names, runs, strict=True)]


def kernel_records(torch: Any, replay: Any, replays: int) -> list[list[tuple[str, float, float]]]:
    """Per replay, its kernels as (name, start us, end us), in start order."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            replay()
            torch.cuda.synchronize()
    kernels = sorted(((e.name, e.time_range.start, e.time_range.end)
                      for e in prof.events() if e.device_type.name == "CUDA"
                      and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()),
                     key=lambda k: k[1])
    if not kernels:
        return []
    # Replays are separated by a host synchronisation: split where the gap is the largest
    # replays-1 gaps.
    gaps = sorted(range(1, len(kernels)), key=lambda i: kernels[i][1] - kernels[i - 1][2],
                  reverse=True)[:replays - 1]
    cuts = [0, *sorted(gaps), len(kernels)]
    return [kernels[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def summarise(replays: list[list[tuple[str, float, float]]]) -> dict[str, Any]:
    """Medians over replays of the kernel count, summed time, span and gaps."""
    rows = []
    for ks in replays:
        conv_gap = other_gap = 0.0
        conv_n = other_n = overlaps = 0
        for prev, cur in zip(ks, ks[1:], strict=False):
            gap = cur[1] - prev[2]
            overlaps += gap < 0
            if is_conv(cur[0]):
                conv_gap += gap
                conv_n += 1
            else:
                other_gap += gap
                other_n += 1
        rows.append({"kernels": len(ks), "conv_kernels": sum(is_conv(k[0]) for k in ks),
                     "kernel_us": sum(k[2] - k[1] for k in ks),
                     "conv_us": sum(k[2] - k[1] for k in ks if is_conv(k[0])),
                     "span_us": ks[-1][2] - ks[0][1], "gap_us": conv_gap + other_gap,
                     "gap_before_conv_us": conv_gap / max(conv_n, 1),
                     "gap_before_other_us": other_gap / max(other_n, 1),
                     "overlaps": overlaps})
    out = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}
    names: dict[str, list[float]] = {}
    for name, start, end in replays[len(replays) // 2]:
        names.setdefault(name, []).append(end - start)
    out["top"] = sorted(([n[:90], len(t), round(sum(t), 2)] for n, t in names.items()),
                        key=lambda r: -r[2])[:12]
    return out


def layer_medians(replays: list[list[tuple[str, float, float]]], names: list[str]
                  ) -> list[dict[str, Any]] | None:
    """Per layer, the median over replays of its kernels' time."""
    per = [per_layer(ks, names) for ks in replays]
    good = [p for p in per if p is not None]
    if not good:
        return None
    return [{**good[0][i], "us": round(statistics.median(p[i]["us"] for p in good), 3)}
            for i in range(len(names))]


def one_case(model: str, batch: int, type_name: str, layout: str, replays: int
             ) -> dict[str, Any]:
    import torch

    base, ours, x, _ = model_pair(model, batch, type_name, layout)
    out: dict[str, Any] = {"model": model, "batch": batch, "type": type_name, "layout": layout}
    graphs = {}
    with torch.no_grad():
        ours(x)  # finds the solutions and loads their kernels before the capture
        for engine, net in (("torch", base), ("miopenkernels", ours)):
            graphs[engine], _ = _graph(torch, lambda net=net: net(x))
    names = conv_order(torch, base, x)
    ms = _interleaved_ms([g.replay for g in graphs.values()], replays)
    layers = {}
    for (engine, graph), replay_ms in zip(graphs.items(), ms, strict=True):
        records = kernel_records(torch, graph.replay, replays)
        out[engine] = {"graph_ms": round(replay_ms, 4), **summarise(records)}
        layers[engine] = layer_medians(records, names)
    if layers["torch"] and layers["miopenkernels"]:
        out["layers"] = [{"layer": a["layer"], "torch_us": a["us"], "ours_us": b["us"],
                          "ours_kernels": b["kernels"]}
                         for a, b in zip(layers["torch"], layers["miopenkernels"], strict=True)]
    return out


def layer_table(rows: list[dict[str, Any]]) -> list[str]:
    """Layers of one shape summed: count, torch us, ours us, ratio; largest excess first."""
    by: dict[str, list[float]] = {}
    for r in rows:
        acc = by.setdefault(r["layer"], [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += r["torch_us"]
        acc[2] += r["ours_us"]
    lines = [f"  {'layer':34}{'n':>3}{'torch us':>10}{'ours us':>10}{'ratio':>7}"]
    for name, (n, t, o) in sorted(by.items(), key=lambda kv: kv[1][1] - kv[1][2]):
        lines.append(f"  {name:34}{n:>3}{t:>10.2f}{o:>10.2f}{o / max(t, 1e-9):>7.2f}")
    return lines


def table(rows: list[dict[str, Any]]) -> str:
    keys = ("graph_ms", "kernels", "conv_kernels", "kernel_us", "conv_us", "span_us", "gap_us",
            "gap_before_conv_us", "gap_before_other_us", "overlaps")
    lines = []
    for r in rows:
        lines.append(f"{r['model']} b{r['batch']} {r['type']} {r['layout']}")
        lines.append(f"  {'':22}{'torch':>12}{'ours':>12}")
        for k in keys:
            lines.append(f"  {k:22}{r['torch'][k]:>12}{r['miopenkernels'][k]:>12}")
        for engine in ("torch", "miopenkernels"):
            lines.append(f"  {engine}: top kernels (name, count, us)")
            lines += [f"    {n:90} {c:>4} {t:>9}" for n, c, t in r[engine]["top"][:8]]
        if r.get("layers"):
            lines += layer_table(r["layers"])
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=";".join(DEFAULT_CASES),
                    help="model,batch,type,layout cases separated by ';'")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True, help="OUT.json is written")
    ap.add_argument("--json", action="store_true", help="print the JSON, not the table")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU: the profile replays GPU forwards; run it on the "
              "GPU machine", file=sys.stderr)
        return 6
    return run_cases(args, lambda *case: one_case(*case, args.replays), table)


def run_cases(args: Any, one: Any, show: Any) -> int:
    """Each of `args.cases` ("model,batch,type,layout" separated by ';') through `one`, the
    rows with the environment into `args.out` (.json) and, by `show` or as JSON, on stdout."""
    rows = []
    for case in args.cases.split(";"):
        model, batch, type_name, layout = case.split(",")
        rows.append(one(model, int(batch), type_name, layout))
    result = {"environment": environment(), "replays": args.replays, "cases": rows}
    path = args.out.with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1) if args.json else show(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
