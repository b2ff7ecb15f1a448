"""The 3-D backward-weights kernel with several taps a program (TAPS) against one tap a
program, on the layers a zoo run put on ConvTriton3dWrw (on the device machine).

For every NDHWC FP16 backward-weights row of a bench/zoo.py JSON whose solver was
ConvTriton3dWrw and whose filter has a tap group (`conv_triton_3d_spec.taps`: 2-3 taps along
s, or along t of a 3x1x1 filter), the kernel is launched through Triton's own launcher with
the arguments the solver gives it (its default parameters), inputs made before the timing,
and timed by CUDA events (`--repeats` launches, the kernel alone, the split's reduce left
out): one tap a program (the solver's launch), then TAPS a program at the same tile and split
("same"), at three times the split ("same_p3"), and at three other tiles. Where the launch is
split, the partial sums over the parts are compared with the one-tap launch's (relative L2).
Prints a table (each variant's time over one tap's) and writes JSON.

    python bench/taps_3d.py ZOO_JSON [--out FILE] [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

#: (label, (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) or None for the solver's,
#: the split's multiplier).
VARIANTS = (("same", None, 1), ("same_p3", None, 3),
            ("128x64x32w8s3", (128, 64, 32, 8, 3), 1),
            ("128x64x32w8s3_p3", (128, 64, 32, 8, 3), 3),
            ("64x64x32w4s3", (64, 64, 32, 4, 3), 1),
            ("64x64x64w4s3_p3", (64, 64, 64, 4, 3), 3))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("zoo", type=Path, help="a bench/zoo.py JSON (its rows)")
    ap.add_argument("--out", type=Path, default=Path("taps_3d.json"))
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def _layer(key: str, repeats: int) -> dict[str, Any] | None:
    import torch
    import triton
    from miopenkernels.compiler.triton import TritonOptions, launch_arguments
    from miopenkernels.kernels import conv_triton_3d as k3
    from miopenkernels.kernels import conv_triton_3d_spec as spec
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    sm90 = Target("sm90", 132)
    p = ConvProblem.from_key(key)
    t, r, s = p.filter
    taps, axis = spec.taps("W", {"T": t, "R": r, "S": s})
    if taps == 1:
        return None
    solver = get_solver("ConvTriton3dWrw")
    params = solver.default_params(p, sm90)
    launch = solver.launch(p, params)
    base = dict(TritonOptions(solver.compile_job(p, params, sm90).options).constexprs)
    sizes = {n: math.prod(v) for n, v in
             (("x", p.in_shape), ("w", p.wei_shape), ("y", p.out_shape))}
    data = {n: torch.randn(sizes[n], device="cuda", dtype=torch.float16) for n in sizes}
    fn = k3.conv3d_bwd_weight
    roles = {"x": "x", "w": "w", "y": "y", "dx": "x", "dw": "w", "dy": "y"}

    def run(tile: tuple[int, ...] | None, parts: int, count: int) -> tuple[float, Any]:
        grid = list(launch.grid)
        grid[1] //= count
        grid[2] *= parts
        ws = torch.zeros(grid[2] * sizes["w"] + 16, device="cuda", dtype=torch.float32)
        flat: dict[str, Any] = {}
        for a in launch.args:
            if a.name in ("global_scratch", "profile_scratch"):
                continue
            flat[a.name] = (ws if a.tensor == "workspace" else data[roles[a.tensor]]) \
                if a.is_pointer else int(a.value)
        consts = {"TAPS": count, "TAP_AXIS": axis if count > 1 else 2, **base}
        warps, stages = params[5], params[6]
        if tile:
            consts.update(BLOCK_M=tile[0], BLOCK_N=tile[1], BLOCK_K=tile[2])
            warps, stages = tile[3], tile[4]
        grid[0] = triton.cdiv(p.k, consts["BLOCK_M"]) * triton.cdiv(p.c, consts["BLOCK_N"])
        args = launch_arguments(fn, {**flat, **consts})
        args.update(num_warps=warps, num_stages=stages)
        fn[tuple(grid)](**args)
        torch.cuda.synchronize()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        for _ in range(repeats):
            fn[tuple(grid)](**args)
        end.record()
        torch.cuda.synchronize()
        total = ws[:grid[2] * sizes["w"]].view(grid[2], -1).sum(0) if grid[2] > 1 else None
        return start.elapsed_time(end) / repeats, total

    one, ref = run(None, 1, 1)
    row: dict[str, Any] = {"key": key, "params": list(params), "taps": taps, "axis": axis,
                           "base_ms": one}
    for label, tile, parts in VARIANTS:
        ms, total = run(tile, parts, taps)
        err = None if ref is None or total is None else \
            float((total - ref).norm() / ref.norm())
        row[label] = [ms, err]
    return row


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        rows = json.loads(args.zoo.read_text())["rows"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"taps_3d: cannot read zoo rows from {args.zoo}: {exc}", file=sys.stderr)
        return 2
    import torch
    import triton

    if not torch.cuda.is_available():
        print("taps_3d: no CUDA device (run on the device machine)", file=sys.stderr)
        return 3
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["case"] == "FP16-W-NDHWC" and r["solver"] == "ConvTriton3dWrw" and \
                r["key"] not in seen:
            seen[r["key"]] = {"layer": f"{r['network']} {r['layer']}",
                              "held_out": r.get("held_out", False),
                              "cudnn_ms": r["cudnn_gpu_ms"]}
    out = []
    for key, info in seen.items():
        row = _layer(key, args.repeats)
        if row is None:
            continue
        row.update(info)
        out.append(row)
        cells = " ".join(f"{label}={row[label][0] / row['base_ms']:.2f}"
                         for label, _, _ in VARIANTS)
        print(f"{row['layer'][:34]:34} taps {row['taps']} base {row['base_ms']:.3f} ms "
              f"{cells}", flush=True)
    ratios = [row["same"][0] / row["base_ms"] for row in out]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "triton": triton.__version__, "zoo": str(args.zoo),
              "repeats": args.repeats, "layers": len(out),
              "same_geomean": geo, "same_range": [min(ratios), max(ratios)] if ratios else None,
              "rows": out}
    args.out.write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result))
    elif geo is not None:
        print(f"{len(out)} layers: TAPS at the same tile and split {geo:.2f} of one tap's "
              f"time (geomean; {min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
