"""The layout transpose of the Via solvers (kernels/conv_triton.py `transpose_021`), per tile.

For every tensor that a Via solver transposes on the 23 ResNet-50 layers at batch 32 (x, dy and
weights, both ways: [B][R][S] -> [B][S][R] for NCHW -> NHWC and back), in FP16 and FP32: each
tile of the spec's TRANSPOSE_TILES, compiled ahead of time as the builder compiles it (no
alignment assumptions), launched as a compiled object and checked bit for bit against torch;
timed as bench/triton_conv.py times kernels (median of CUDA-graph replays of several calls,
inputs made outside the timed region), beside torch's own copy of the transposed view. The
tile that `transpose_tile` picks is marked, with its time against the fastest tile's.

    python bench/transpose.py --out bench/results/transpose_h100

Writes <out>.json (rows; `summary`: per type, the geomean and the worst of the picked tile's
time over the fastest tile's, and of the square tile's) and <out>.md, and prints a table.
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

TYPES = ("FP16", "FP32")


def shapes(batch: int) -> list[tuple[int, int, int]]:
    """The distinct [B][R][S] the Via solvers transpose on ResNet-50's layers, both ways."""
    from _layers import resnet50_layers
    from triton_conv import layer_sizes

    out: set[tuple[int, int, int]] = set()
    for p in resnet50_layers("FP16", batch):
        z = layer_sizes(p)
        for b, r, s in ((z["N"], z["C"], z["H"] * z["W"]), (z["N"], z["K"], z["P"] * z["Q"]),
                        (z["K"], z["C"], z["R"] * z["S"])):
            if r > 1 and s > 1:  # else no copy is made
                out.update({(b, r, s), (b, s, r)})
    return sorted(out)


def run(args: argparse.Namespace) -> dict:
    import torch
    from miopenkernels.kernels import conv_triton_spec as spec
    from triton_conv import _compiled, median_ms

    cap = torch.cuda.get_device_capability(0)
    target = ("cuda", cap[0] * 10 + cap[1], 32)
    tdt = {"FP16": torch.float16, "FP32": torch.float32}
    rows = []
    for dtype in args.types.split(","):
        kernels = {}
        for tile in spec.TRANSPOSE_TILES:
            cfg = {"BLOCK_R": tile[0], "BLOCK_S": tile[1], "num_warps": spec.TRANSPOSE_WARPS,
                   "num_stages": 1}
            kernels[tile] = _compiled("transpose_021", dtype, cfg, False, "ieee", False, target)
        for b, r, s in shapes(args.batch):
            src = torch.randn((b, r, s), device="cuda").to(tdt[dtype])
            dst = torch.empty((b, s, r), device="cuda", dtype=tdt[dtype])
            ref = src.transpose(1, 2).contiguous()

            def theirs(src: Any = src, dst: Any = dst) -> None:
                dst.copy_(src.transpose(1, 2))
            es = src.element_size()
            row: dict[str, Any] = {
                "type": dtype, "B": b, "R": r, "S": s, "mbytes": 2 * src.numel() * es / 1e6,
                "picked": list(spec.transpose_tile(r, s, es)),
                "torch_ms": median_ms(theirs, args.samples, args.inner), "tiles": {}}
            for tile, kern in kernels.items():
                grid = spec.grid("transpose_021", {"B": b, "R": r, "S": s},
                                 {"BLOCK_R": tile[0], "BLOCK_S": tile[1]})
                launch = (src, dst, b, r, s, s, b, r, tile[0], tile[1])

                def ours(kern: Any = kern, grid: tuple = grid, launch: tuple = launch) -> None:
                    kern[grid](*launch)
                dst.zero_()
                ours()
                torch.cuda.synchronize()
                if not torch.equal(dst, ref):
                    raise SystemExit(f"transpose_021 {tile} is wrong on {dtype} {(b, r, s)}")
                row["tiles"][f"{tile[0]}x{tile[1]}"] = median_ms(ours, args.samples, args.inner)
            times = row["tiles"]
            best = min(times.values())
            picked = times["{}x{}".format(*row["picked"])]
            square = times["{}x{}".format(*spec.TRANSPOSE_TILES[0])]
            row.update(best_ms=best, picked_ms=picked, picked_over_best=picked / best,
                       square_over_best=square / best)
            rows.append(row)
            print(f"{dtype} {b:5d} {r:6d} {s:6d} {row['mbytes']:7.1f} MB torch "
                  f"{row['torch_ms'] * 1e3:7.1f} us picked {row['picked']} "
                  f"{picked * 1e3:7.1f} us ({picked / best:4.2f} of best; square "
                  f"{square / best:4.2f})", flush=True)
    return {"rows": rows}


def summarise(result: dict) -> dict:
    import platform

    import torch
    import triton

    def geomean(v: list[float]) -> float:
        return math.exp(sum(map(math.log, v)) / len(v))

    summary = {}
    for dtype in sorted({r["type"] for r in result["rows"]}):
        rs = [r for r in result["rows"] if r["type"] == dtype]
        summary[dtype] = {
            "tensors": len(rs),
            "picked_over_best_geomean": geomean([r["picked_over_best"] for r in rs]),
            "picked_over_best_max": max(r["picked_over_best"] for r in rs),
            "square_over_best_geomean": geomean([r["square_over_best"] for r in rs]),
            "square_over_best_max": max(r["square_over_best"] for r in rs),
            "picked_total_ms": sum(r["picked_ms"] for r in rs),
            "square_total_ms": sum(r["square_over_best"] * r["best_ms"] for r in rs),
            "torch_total_ms": sum(r["torch_ms"] for r in rs)}
    from _machine import nvidia_driver

    driver = nvidia_driver()
    return {"device": torch.cuda.get_device_name(0), "driver": driver,
            "cuda": torch.version.cuda, "torch": torch.__version__,
            "triton": triton.__version__, "python": platform.python_version(),
            "method": "median over samples of one CUDA-graph replay of several calls (CUDA "
                      "events), inputs made outside timed regions; objects compiled ahead of "
                      "time without alignment assumptions, as the builder does",
            "summary": summary, **result}


def table(result: dict) -> str:
    lines = [f"transpose_021 per tile on {result['device']} (driver {result['driver']}, "
             f"torch {result['torch']}, triton {result['triton']})", "",
             "| type | tensors | picked/best geomean | max | square/best geomean | max | "
             "picked total ms | square total ms | torch total ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t, s in result["summary"].items():
        lines.append(f"| {t} | {s['tensors']} | {s['picked_over_best_geomean']:.3f} | "
                     f"{s['picked_over_best_max']:.2f} | {s['square_over_best_geomean']:.3f} | "
                     f"{s['square_over_best_max']:.2f} | {s['picked_total_ms']:.3f} | "
                     f"{s['square_total_ms']:.3f} | {s['torch_total_ms']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--inner", type=int, default=10, help="calls per CUDA graph (one sample)")
    ap.add_argument("--out", default="", help="write <out>.json and <out>.md")
    ap.add_argument("--json", action="store_true", help="print the JSON result")
    args = ap.parse_args(argv)
    result = summarise(run(args))
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
        Path(args.out + ".md").write_text(table(result))
    print(json.dumps(result) if args.json else table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
