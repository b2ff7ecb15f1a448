"""Where a split backward-weights launch spends its GPU time, kernel by kernel (on the device
machine): the runtime's objects (an invoker, as find's pick runs) against the same kernels
launched through Triton's JIT on the same tensors.

For each FindDb key of `--keys` (backward weights) and each `--params` (the solver's tuple:
BLOCK_M BLOCK_N BLOCK_K GROUP_M SPLIT_K num_warps num_stages), both paths run `--iters` times
under torch.profiler, which reports each kernel's GPU time: the main kernel and the reduce
launch apart. The JIT path launches `conv2d_bwd_weight` (SPLIT_K 2, for every split, as the
runtime's object) and `conv2d_bwd_weight_reduce` with the runtime's own reduce arguments, so
the two paths differ only in how their objects were compiled (the JIT specialises the integer
arguments it sees: those equal to 1, and divisibility by 16). Results are checked against
cuDNN's.

    python bench/split_profile.py \\
        --keys 192-8-8-1x1-1280-8-8-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-W \\
        --params 64,64,64,8,4,4,4 --out bench/results/split_profile_h200
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOLVER = "ConvTritonImplicitGemmWrw"


def _profile(fn: Any, iters: int) -> dict[str, float]:
    """Per kernel name, GPU microseconds per call of `fn` (mean over `iters` calls)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for ev in prof.key_averages():
        us = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
        if us:
            out[ev.key] = out.get(ev.key, 0.0) + us / iters
    return out


def measure(zoo: Any, handle: Any, key: str, params: tuple[int, ...], iters: int
            ) -> dict[str, Any]:
    import math

    import torch
    from miopenkernels.kernels import conv_triton
    from miopenkernels.kernels import conv_triton_spec as spec
    from miopenkernels.plan import make_invoker, workspace_ptr
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.solvers.triton_common import problem_view, spec_sizes

    p = ConvProblem.from_key(key)
    solver = get_solver(SOLVER)
    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = zoo._tensors(p, tdt)
    peer = zoo._peer(p, {role: view for role, (_, view) in tensors.items()})
    ref = peer().float()
    out = tensors["w"][1]
    row: dict[str, Any] = {"key": key, "params": list(params)}
    inv = make_invoker(handle.context, p, solver, params=params)
    ptrs = {role: int(t.data_ptr()) for role, (t, _) in tensors.items()}
    ptrs["workspace"] = workspace_ptr(handle.backend, inv)
    row["aligned"] = inv.aligned_for(ptrs) is inv
    out.fill_(float("nan"))
    inv(ptrs)
    torch.cuda.synchronize()
    row["runtime_err"] = float((out.float() - ref).norm() / ref.norm())
    row["runtime_us"] = _profile(lambda: inv(ptrs), iters)

    view, args, kernel, _ = problem_view(p)
    sizes = spec_sizes(view)
    bm, bn, bk, gm, split, nw, ns = params
    x, dy, dw = (tensors[r][1] for r in ("x", "y", "w"))
    dims = tuple(int(args[n]) for n in spec.CONV_TUPLES["dims"])
    conv = tuple(int(args[n]) for n in spec.CONV_TUPLES["conv"])
    strides = tuple(int(args[n]) for n in spec.CONV_TUPLES["strides"])
    grid = spec.grid(kernel, sizes, {"BLOCK_M": bm, "BLOCK_N": bn, "SPLIT_K": split})
    ws = torch.empty(max(1, spec.workspace_bytes(kernel, sizes, {"SPLIT_K": split})) // 4 + 1,
                     device="cuda", dtype=torch.float32)
    red = spec.reduce_args(kernel, args, True)

    def jit() -> None:
        conv_triton.conv2d_bwd_weight[grid](
            x, dw, dy, ws, dims, conv, strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
            SPLIT_K=min(split, 2), CHANNELS_LAST=p.in_layout == "NHWC", PRECISION="ieee",
            num_warps=nw, num_stages=ns)
        if split > 1:
            conv_triton.conv2d_bwd_weight_reduce[(math.ceil(red["TOTAL"] / spec.REDUCE_BLOCK),)](
                ws, dw, red["TOTAL"], red["C"], red["R"], red["S"], red["swk"], red["swc"],
                red["swr"], red["sws"], split, BLOCK=spec.REDUCE_BLOCK,
                num_warps=spec.REDUCE_WARPS)

    out.fill_(float("nan"))
    jit()
    torch.cuda.synchronize()
    row["jit_err"] = float((out.float() - ref).norm() / ref.norm())
    row["jit_us"] = _profile(jit, iters)
    return row


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """A line per row: each kernel's runtime time, and over the JIT's."""
    lines = []
    for r in rows:
        parts = [f"{name} {us:.1f} us ({us / r['jit_us'][name]:.2f}x the JIT's)"
                 for name, us in r["runtime_us"].items() if r["jit_us"].get(name)]
        lines.append(f"{r['key']} {','.join(map(str, r['params']))}: " + "; ".join(parts) +
                     f"; rel err {r['runtime_err']:.1e}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", help="comma-separated FindDb keys (direction W)")
    ap.add_argument("--params",
                    help="semicolon-separated parameter tuples, e.g. 64,64,64,8,4,4,4")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", help="path stem of the .json result")
    ap.add_argument("--from-json", type=Path, metavar="FILE",
                    help="print a saved run's summary (no GPU) and exit")
    args = ap.parse_args(argv)
    if args.from_json:
        try:
            lines = summary(json.loads(args.from_json.read_text())["rows"])
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            print(f"split_profile: {args.from_json} is not a saved split_profile.py run ({exc})",
                  file=sys.stderr)
            return 2
        print("\n".join(lines))
        return 0
    if not (args.keys and args.params and args.out):
        ap.error("--keys, --params and --out are needed (or --from-json)")
    sys.path.insert(0, str(HERE))
    import torch
    import triton
    import zoo
    from miopenkernels.handle import Handle

    handle = Handle()
    rows = []
    for key in args.keys.split(","):
        for item in args.params.split(";"):
            params = tuple(int(v) for v in item.split(","))
            row = measure(zoo, handle, key, params, args.iters)
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "triton": triton.__version__, "compiles": handle.compilations, "rows": rows}
    Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
