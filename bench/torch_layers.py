"""Per convolution layer of a converted model, GPU time against PyTorch/cuDNN, graph-replayed.

bench/torch_models.py times whole forwards; this script says which layers make the difference.
For each case (model, batch, type, layout; the models of bench/torch_models.py), the input of
every `Conv2d` is recorded in one torch forward; then each layer alone, torch's module and the
converted one on that same input, is captured `--calls` times in one CUDA graph and replayed
(median of 7 replays, CUDA events): GPU time per call with no host cost and no launch gap, as a
graph-replayed model sees it. The solution the converted layer runs (immediate mode: a FindDb
record, else the miss ranking) is recorded beside it. cuDNN runs as torch_models.py runs it
(`cudnn.benchmark` off, TF32 as torch's default).

    python bench/torch_layers.py --cases resnet50,1,FP16,channels_last --out OUT
    (OUT.json and a table on stdout; GPU machine, an installed package's databases through
    MIOPEN_SYSTEM_DB_PATH)
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

from torch_models import BUILDERS, _graph, environment, model_pair  # noqa: E402

DEFAULT_CASES = ("resnet50,1,FP16,channels_last", "resnet50,1,FP32,contiguous",
                 "mobilenet_v2,1,FP16,contiguous")


def graph_us(torch: Any, fn: Any, calls: int) -> float:
    """GPU microseconds per call of `fn`: `calls` calls captured in one graph (torch_models'
    capture recipe), median of 7 replays."""
    def calls_of() -> None:
        for _ in range(calls):
            fn()

    graph, _ = _graph(torch, calls_of)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    return sorted(times)[3]


def one_case(model: str, batch: int, type_name: str, layout: str, calls: int
             ) -> dict[str, Any]:
    """Every conv layer of one case: torch's and the converted module's GPU time per call."""
    import torch
    from miopenkernels.torch import _handles

    base, ours, x, _ = model_pair(model, batch, type_name, layout)
    inputs: dict[str, Any] = {}
    hooks = [m.register_forward_pre_hook(lambda m, a, n=n: inputs.setdefault(n, a[0]))
             for n, m in base.named_modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        base(x)
        for hook in hooks:
            hook.remove()
        theirs, mine = dict(base.named_modules()), dict(ours.named_modules())
        layers = []
        seen: dict[tuple[Any, ...], Any] = {}  # a layer's convolution -> its solution
        for name, inp in inputs.items():
            known = set(_handles._prepared)
            mine[name](inp)  # finds the solution (outside the timings)
            new = [v for k, v in _handles._prepared.items() if k not in known]
            mod = theirs[name]
            conv = (tuple(inp.shape), tuple(mod.weight.shape), mod.stride, mod.padding,
                    mod.dilation, mod.groups)
            solution = seen.setdefault(conv, new[0][0] if new else None)
            layers.append({
                "layer": name, "input": list(inp.shape), "filter": list(mod.kernel_size),
                "stride": list(mod.stride), "groups": mod.groups, "out_channels": mod.out_channels,
                "solver": getattr(solution, "solver", None),
                "params": list(getattr(solution, "params", None) or []),
                "torch_us": round(graph_us(torch, lambda m=mod, i=inp: m(i), calls), 3),
                "ours_us": round(graph_us(torch, lambda m=mine[name], i=inp: m(i), calls), 3)})
        whole = {"torch_us": round(graph_us(torch, lambda: base(x), 5), 1),
                 "ours_us": round(graph_us(torch, lambda: ours(x), 5), 1)}
    torch_sum = sum(r["torch_us"] for r in layers)
    ours_sum = sum(r["ours_us"] for r in layers)
    ratios = [r["ours_us"] / r["torch_us"] for r in layers if r["torch_us"] > 0]
    return {"model": model, "batch": batch, "type": type_name, "layout": layout,
            "forward": whole, "conv_torch_us": round(torch_sum, 1),
            "conv_ours_us": round(ours_sum, 1),
            "conv_ratio": round(ours_sum / torch_sum, 3) if torch_sum else None,
            "layer_geomean": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3)
            if ratios else None, "layers": layers}


def table(case: dict[str, Any], worst: int) -> str:
    """A case as text: totals, then its `worst` layers by the time they add."""
    lines = [f"{case['model']} b{case['batch']} {case['type']} {case['layout']}: forward "
             f"torch {case['forward']['torch_us']} us, ours {case['forward']['ours_us']} us; "
             f"{len(case['layers'])} convs torch {case['conv_torch_us']} us, ours "
             f"{case['conv_ours_us']} us ({case['conv_ratio']}x, layer geomean "
             f"{case['layer_geomean']}x)"]
    for r in sorted(case["layers"], key=lambda r: r["torch_us"] - r["ours_us"])[:worst]:
        lines.append(f"  {r['layer']:22} {str(r['input']):20} {r['filter'][0]}x{r['filter'][1]}"
                     f" s{r['stride'][0]} g{r['groups']:<4} torch {r['torch_us']:7.1f} ours "
                     f"{r['ours_us']:7.1f}  {r['solver']} {r['params']}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=";".join(DEFAULT_CASES),
                    help="model,batch,type,layout cases separated by ';'")
    ap.add_argument("--calls", type=int, default=20, help="calls per captured graph")
    ap.add_argument("--worst", type=int, default=10, help="layers listed per case")
    ap.add_argument("--out", type=Path, help="write OUT.json")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU: the script times GPU layers; run it on the GPU "
              "machine", file=sys.stderr)
        return 6
    cases = []
    for spec in filter(None, args.cases.split(";")):
        model, batch, type_name, layout = spec.split(",")
        if model not in BUILDERS:
            ap.error(f"unknown model {model!r}; known: {', '.join(BUILDERS)}")
        case = one_case(model, int(batch), type_name, layout, args.calls)
        cases.append(case)
        if not args.json:
            print(table(case, args.worst), flush=True)
    result = {"environment": environment(), "calls": args.calls, "cases": cases}
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
