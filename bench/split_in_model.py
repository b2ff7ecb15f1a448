"""The small-grid forward's split timed inside graph-replayed models, layer by layer.

bench/serial_split.py times each layer alone: the same tensors over and over, its weights
always in L2. Inside a model a layer's weights come from memory once per forward, and a tile
that runs all of a long reduction alone waits on them step after step; what the small-grid
rule's split saves there is what a model sees. For each case (model, batch, type, layout;
bench/torch_models.py's models), the converted model is run with the rule's split as the
package has it (`rule`) and with every small-grid layer's split forced to each of `--splits`
(as far as the layer allows it: at least 2 BLOCK_K steps a part), each captured with
`torch.cuda.graph`, replayed under the profiler (bench/torch_graph_profile.py) and timed
with CUDA events in turn with torch's captured forward. Per variant: the forward's
milliseconds against torch's, and per layer its convolution kernels' median microseconds
(the kernel and any reduce), its split and its solver. bench/small_grid_fit.py --in-model
fits the rule's reduce cost on these per-layer times.

    python bench/split_in_model.py --cases "resnet50,1,FP16,channels_last" --out OUT
    (OUT.json and a table; GPU machine, an installed package's databases through
    MIOPEN_SYSTEM_DB_PATH)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from torch_graph_profile import conv_order, kernel_records, layer_medians, run_cases  # noqa: E402
from torch_models import _graph, _interleaved_ms, model_pair  # noqa: E402

DEFAULT_CASES = ("resnet50,1,FP16,channels_last", "mobilenet_v2,1,FP16,channels_last")
SPLITS = (1, 2, 4, 8, 16)


def force_split(split: int | None) -> None:
    """Make the small-grid rule pick `split` wherever a layer allows it (None: the rule as
    the package has it), and forget every kept solution so the next forward finds again."""
    from miopenkernels.solvers import triton_small_grid
    from miopenkernels.solvers.triton_common import spec_module
    from miopenkernels.torch import _handles

    spec = spec_module()
    if not hasattr(spec, "_rule_split"):
        spec._rule_split = spec.small_grid_split
    if split is None:
        spec.small_grid_split = spec._rule_split
    else:
        def forced(programs: int, steps: int, sms: int, reduce_steps: float,
                   most: int = 16) -> int:
            s = 1
            while s * 2 <= min(split, most) and steps >= 2 * s * 2:
                s *= 2
            return s
        spec.small_grid_split = forced
    # Every kept choice (the rule's, the solvers' defaults, the ranking's) is made again.
    for name, module in list(sys.modules.items()):
        if name.startswith(("miopenkernels.solvers", "miopenkernels.ranking")):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
    triton_small_grid.small_grid_config.cache_clear()
    _handles.set_handle(None, "cuda")
    _handles._prepared.clear()


def layer_name(problem: Any) -> str:
    """A problem named as bench/torch_graph_profile.py's `conv_order` names a layer."""
    h, w = problem.in_spatial
    r, s = problem.filter
    g = f" g{problem.groups}" if problem.groups > 1 else ""
    return f"{problem.c}-{h}x{w}-{r}x{s}-{problem.k} u{problem.stride[0]}{g}"


def solutions() -> dict[str, dict[str, Any]]:
    """Per layer name, the solution the converted model runs (solver, where its pick came
    from, and the small-grid rule's split where the rule applies)."""
    from miopenkernels.solvers.triton_common import problem_view, spec_module, spec_sizes
    from miopenkernels.solvers.triton_small_grid import small_grid_config
    from miopenkernels.torch import _handles

    spec = spec_module()
    out = {}
    for (handle_id, problem), (solution, _) in _handles._prepared.items():
        if problem.direction != "F":
            continue
        handle = next(h for h in _handles._handles.values() if id(h) == handle_id)
        entry: dict[str, Any] = {"problem": problem.key(), "solver": solution.solver,
                                 "source": solution.source}
        cfg = small_grid_config(problem, handle.target, handle.math_mode.name.lower())
        if cfg is not None:
            sizes = spec_sizes(problem_view(problem)[0])
            gx, gy, gz = spec.grid("conv2d_fwd", sizes, {**cfg, "SPLIT_K": 1})
            entry.update(small_grid_split=cfg["SPLIT_K"], programs=gx * gy * gz,
                         steps=spec.reduction_steps("conv2d_fwd", sizes, cfg),
                         tile=f"{cfg['BLOCK_M']}x{cfg['BLOCK_N']}x{cfg['BLOCK_K']} "
                              f"w{cfg['num_warps']} s{cfg['num_stages']}")
        out[layer_name(problem)] = entry
    return out


def one_case(model: str, batch: int, type_name: str, layout: str, splits: tuple[int, ...],
             replays: int) -> dict[str, Any]:
    import torch

    tf32 = type_name == "FP32" and torch.backends.cudnn.allow_tf32
    case = f"{'TF32' if tf32 else type_name}-F-{'NHWC' if layout == 'channels_last' else 'NCHW'}"
    out: dict[str, Any] = {"model": model, "batch": batch, "type": type_name, "layout": layout,
                           "case": case, "variants": {}}
    force_split(None)
    base, _, x, _ = model_pair(model, batch, type_name, layout)
    names = conv_order(torch, base, x)
    with torch.no_grad():
        torch_graph, _ = _graph(torch, lambda: base(x))
    out["torch_layers"] = layer_medians(kernel_records(torch, torch_graph.replay, replays), names)
    for split in (None, *splits):
        force_split(split)
        _, ours, _, _ = model_pair(model, batch, type_name, layout)
        with torch.no_grad():
            ours(x)
            graph, _ = _graph(torch, lambda ours=ours: ours(x))
        ms = _interleaved_ms([torch_graph.replay, graph.replay], replays)
        layers = layer_medians(kernel_records(torch, graph.replay, replays), names)
        sols = solutions()
        rows = [{**layer, **sols.get(layer["layer"], {})} for layer in layers or []]
        out["variants"]["rule" if split is None else f"split{split}"] = {
            "torch_ms": round(ms[0], 4), "ours_ms": round(ms[1], 4),
            "ratio": round(ms[1] / ms[0], 4), "layers": rows}
        del graph, ours
    force_split(None)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        lines.append(f"{r['model']} b{r['batch']} {r['type']} {r['layout']}")
        for name, v in r["variants"].items():
            conv = sum(layer["us"] for layer in v["layers"])
            lines.append(f"  {name:8} torch {v['torch_ms']:.4f} ms  ours {v['ours_ms']:.4f} ms  "
                         f"ratio {v['ratio']:.3f}  conv kernels {conv:.1f} us")
        torch_conv = sum(layer["us"] for layer in r["torch_layers"] or [])
        lines.append(f"  torch conv kernels {torch_conv:.1f} us")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=";".join(DEFAULT_CASES),
                    help="model,batch,type,layout cases separated by ';'")
    ap.add_argument("--splits", default=",".join(map(str, SPLITS)),
                    help="splits to force, comma-separated (the rule's own is always run)")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True, help="OUT.json is written")
    ap.add_argument("--json", action="store_true", help="print the JSON, not the table")
    args = ap.parse_args()
    try:
        splits = tuple(int(s) for s in args.splits.split(",") if s)
    except ValueError:
        ap.error(f"--splits {args.splits!r}: write powers of two, e.g. 1,2,4,8")
    if any(s < 1 or s & (s - 1) for s in splits):
        ap.error(f"--splits {args.splits!r}: each split is a power of two")
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU: the models run on the GPU machine",
              file=sys.stderr)
        return 6
    return run_cases(args, lambda *case: one_case(*case, splits, args.replays), table)


if __name__ == "__main__":
    sys.exit(main())
