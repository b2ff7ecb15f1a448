"""Stride-1 NHWC forward convolutions with both operands moved by the tensor memory accelerator,
against cuDNN and the shipped implicit GEMM, on the device machine (FP16, batch 32).

The shipped kernels gather the input a row at a time with pointer loads. For a stride-1 layer
in NHWC, the input rows one filter tap needs for a block of output positions that is a box of
the output (images x rows x columns) are the same box of the input moved by the tap: one 4-D
TMA load ([N, H, W, C], the box [BI, BH, BW, BLOCK_K]) whose part outside the image the copy
engine fills with zeros (padding for free), reshaped to [BI*BH*BW, BLOCK_K]. The filters are
a 3-D box ([K, R*S, C]); the output is stored as a box too (clipped at the edges). So the
main loop is a GEMM's: no address arithmetic, no masks.

    python bench/conv_tma_probe.py --out bench/results/conv_tma_probe_h200

Prints a table (GPU time in microseconds queued behind a sleep kernel, each kernel's time over
cuDNN's) and writes <out>.json (device, versions, rows, summary). Each kernel's output is
checked against cuDNN's (relative error).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, C, H, W, K, R, S, pad): stride-1 forward layers of the zoo, batch 32.
LAYERS: tuple[tuple[str, int, int, int, int, int, int, int], ...] = (
    ("sd15_unet up_blocks.1 conv 1280 at 32x32", 1280, 32, 32, 1280, 3, 3, 1),
    ("sd15_unet down_blocks.0 conv 320 at 64x64", 320, 64, 64, 320, 3, 3, 1),
    ("vgg16 features.28 512 at 14x14", 512, 14, 14, 512, 3, 3, 1),
    ("resnet50 layer1.0.conv2 64 at 56x56", 64, 56, 56, 64, 3, 3, 1),
    ("resnet50 layer2.1.conv2 128 at 28x28", 128, 28, 28, 128, 3, 3, 1),
    ("resnet50 layer3.0.conv2 256 at 14x14", 256, 14, 14, 256, 3, 3, 1),
    ("resnet50 layer4.1.conv2 512 at 7x7", 512, 7, 7, 512, 3, 3, 1),
    ("esrgan body.rdb.conv4 160 -> 32 at 128x128", 160, 128, 128, 32, 3, 3, 1),
    ("fcn_resnet50 aux_classifier.0 1024 -> 256 at 65x65", 1024, 65, 65, 256, 3, 3, 1),
    ("unet decoder 128 -> 64 at 160x160", 128, 160, 160, 64, 3, 3, 1),
)

#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, warp_specialize) of the TMA kernel.
TILES = ((128, 128, 64, 4, 4, 0), (128, 128, 64, 8, 4, 0), (128, 256, 64, 8, 3, 0),
         (256, 128, 64, 8, 3, 0), (128, 128, 64, 4, 4, 1), (128, 256, 64, 8, 3, 1))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("conv_tma_probe"),
                    help="output stem: <out>.json")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", default="", help="comma-separated indices into LAYERS")
    ap.add_argument("--tiles", default="",
                    help="BM:BN:BK:warps:stages:ws,... (default: TILES)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    return ap.parse_args(argv)


def box_of(block_m: int, n: int, p: int, q: int) -> tuple[int, int, int]:
    """(BI, BH, BW), powers of two whose product is block_m, covering the batch's outputs
    with the fewest positions computed (ties: the widest BW, then the tallest BH); BW at least
    8 where the output is that wide (a box row of 8 positions: 1 KiB at BLOCK_K 64)."""
    best: tuple[int, int, int, tuple[int, int, int]] | None = None
    bw = min(8, 1 << (q - 1).bit_length())
    while bw <= block_m:
        bh = 1
        while bw * bh <= block_m:
            bi = block_m // (bw * bh)
            cover = math.ceil(n / bi) * bi * math.ceil(p / bh) * bh * math.ceil(q / bw) * bw
            key = (cover, -bw, -bh, (bi, bh, bw))
            if best is None or key[:3] < best[:3]:
                best = key
            bh *= 2
        bw *= 2
    assert best is not None
    return best[3]


def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def conv_tma_fwd(x_ptr, w_ptr, y_ptr, N, H, W, C, K, P, Q, R, S, pad_h, pad_w, dil_h,
                     dil_w, BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     WS: tl.constexpr):
        BLOCK_M: tl.constexpr = BI * BH * BW
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N, H, W, C],
                                           strides=[H * W * C, W * C, C, 1],
                                           block_shape=[BI, BH, BW, BLOCK_K])
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[K, R * S, C],
                                           strides=[R * S * C, C, 1],
                                           block_shape=[BLOCK_N, 1, BLOCK_K])
        y_desc = tl.make_tensor_descriptor(y_ptr, shape=[N, P, Q, K],
                                           strides=[P * Q * K, Q * K, K, 1],
                                           block_shape=[BI, BH, BW, BLOCK_N])
        tiles_h = tl.cdiv(P, BH)
        tiles_w = tl.cdiv(Q, BW)
        num_m = tl.cdiv(N, BI) * tiles_h * tiles_w
        num_n = tl.cdiv(K, BLOCK_N)
        pid = tl.program_id(0)
        in_group = GROUP_M * num_n
        first_m = (pid // in_group) * GROUP_M
        size_m = tl.minimum(num_m - first_m, GROUP_M)
        pid_m = first_m + (pid % in_group) % size_m
        pid_n = (pid % in_group) // size_m
        plane = tiles_h * tiles_w
        n0 = (pid_m // plane) * BI
        rest = pid_m % plane
        p0 = (rest // tiles_w) * BH
        q0 = (rest % tiles_w) * BW
        k0 = pid_n * BLOCK_N
        c_blocks = tl.cdiv(C, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for i in tl.range(0, R * S * c_blocks, warp_specialize=WS):
            tap = i // c_blocks
            cb = i - tap * c_blocks
            r = tap // S
            s = tap - r * S
            a = x_desc.load([n0, p0 - pad_h + r * dil_h, q0 - pad_w + s * dil_w,
                             cb * BLOCK_K]).reshape(BLOCK_M, BLOCK_K)
            b = w_desc.load([k0, tap, cb * BLOCK_K]).reshape(BLOCK_N, BLOCK_K)
            acc = tl.dot(a, b.T, acc)
        y_desc.store([n0, p0, q0, k0], acc.to(tl.float16).reshape(BI, BH, BW, BLOCK_N))

    return conv_tma_fwd


def _layer(args: argparse.Namespace, spec: tuple, kernel: Any, tiles: list[tuple[int, ...]]
           ) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton

    name, c, h, w, k, r, s, pad = spec
    n = args.batch
    p, q = h + 2 * pad - r + 1, w + 2 * pad - s + 1
    row: dict[str, Any] = {"layer": name, "N": n, "C": c, "H": h, "W": w, "K": k, "R": r,
                           "S": s, "pad": pad, "gflop": 2.0 * n * p * q * k * c * r * s / 1e9}
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, h, w, device="cuda", generator=g).half() \
        .to(memory_format=torch.channels_last)
    wt = (torch.randn(k, c, r, s, device="cuda", generator=g) / math.sqrt(c * r * s)).half() \
        .to(memory_format=torch.channels_last)
    y = torch.empty(n, k, p, q, device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last)
    ref = F.conv2d(x, wt, padding=pad).float()

    def time_us(fn: Any) -> float:
        return queued_gpu_ms(fn, args.repeats, args.warmup) * 1e3

    def check(key: str, fn: Any) -> None:
        y.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - a tile that does not compile is a result
            row[f"{key}_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            return
        row[f"{key}_err"] = float((y.float() - ref).norm() / ref.norm())
        row[f"{key}_us"] = time_us(fn)

    row["cudnn_us"] = time_us(lambda: F.conv2d(x, wt, padding=pad))
    dims = (n, c, h, w, k, p, q, r, s, 1)
    conv = (1, 1, pad, pad, 1, 1)
    strides = (*x.stride(), *wt.stride(), *y.stride())
    grid = (math.ceil(n * p * q / 256) * math.ceil(k / 128), 1, 1)
    check("shipped_256x128x64w8s3", lambda: conv_triton.conv2d_fwd[grid](
        x, wt, y, y, dims, conv, strides, BLOCK_M=256, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
        SPLIT_K=1, CHANNELS_LAST=True, PRECISION="ieee", num_warps=8, num_stages=3))
    for bm, bn, bk, nw, ns, ws in tiles:
        bi, bh, bw = box_of(bm, n, p, q)
        grid_t = (math.ceil(n / bi) * math.ceil(p / bh) * math.ceil(q / bw)
                  * math.ceil(k / bn),)
        key = f"tma_{bm}x{bn}x{bk}w{nw}s{ns}{'ws' if ws else ''}_{bi}x{bh}x{bw}"
        check(key, lambda grid_t=grid_t, bi=bi, bh=bh, bw=bw, bn=bn, bk=bk, nw=nw, ns=ns,
              ws=ws: kernel[grid_t](x, wt, y, n, h, w, c, k, p, q, r, s, pad, pad, 1, 1,
                                    BI=bi, BH=bh, BW=bw, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                    WS=bool(ws), num_warps=nw, num_stages=ns))
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kernel family (`shipped`, `tma`): the geomean over the rows of its fastest column's
    time over cuDNN's; per column the same over the rows it ran on."""
    out: dict[str, Any] = {}
    cols = sorted({k[:-3] for r in rows for k in r if k.endswith("_us") and k != "cudnn_us"})
    for col in cols:
        have = [r for r in rows if f"{col}_us" in r]
        ratios = [r[f"{col}_us"] / r["cudnn_us"] for r in have]
        out[col] = {"vs_cudnn": math.exp(sum(map(math.log, ratios)) / len(ratios)),
                    "layers": len(have)}
    for fam in ("shipped", "tma"):
        best = [min(r[k] for k in r if k.startswith(fam) and k.endswith("_us")) / r["cudnn_us"]
                for r in rows if any(k.startswith(fam) and k.endswith("_us") for k in r)]
        if best:
            out[f"{fam}_best"] = {"vs_cudnn": math.exp(sum(map(math.log, best)) / len(best)),
                                  "layers": len(best)}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import triton

    torch.backends.cudnn.benchmark = True
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    tiles = [tuple(int(v) for v in t.split(":")) for t in args.tiles.split(",")] \
        if args.tiles else list(TILES)
    picked = [LAYERS[int(i)] for i in args.layers.split(",") if i] or list(LAYERS)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "triton": triton.__version__, "batch": args.batch, "rows": []}
    kernel = _kernel()
    for spec in picked:
        t0 = time.perf_counter()
        row = _layer(args, spec, kernel, tiles)
        row["seconds"] = time.perf_counter() - t0
        result["rows"].append(row)
        torch.cuda.empty_cache()
        cells = "  ".join(f"{k[:-3]}={row[k] / row['cudnn_us']:.2f}" for k in row
                          if k.endswith("_us") and k != "cudnn_us")
        errs = [k for k in row if k.endswith("_error")]
        print(f"{spec[0]}: cuDNN {row['cudnn_us']:.0f} us; {cells}"
              f"{'; errors ' + str([row[e] for e in errs]) if errs else ''}", flush=True)
        result["summary"] = summarise(result["rows"])
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1) if args.json else "\n".join(
        f"{k:40s} {v['vs_cudnn']:.2f} ({v['layers']})" for k, v in result["summary"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
