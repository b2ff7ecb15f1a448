"""The forward kernel's main loop against its ceilings, on the device machine (FP16 NHWC).

For a set of forward layers (batch 32, FP16, NHWC), the GPU time (queued behind a sleep kernel,
bench/_gpu_timing.py) of:
- cuDNN through torch (benchmark on, channels-last tensors);
- cuBLAS (`torch.mm`) on the layer's GEMM: [N*P*Q, C*R*S] x [C*R*S, K], the operands made
  outside the timing (the ceiling of a kernel that had the im2col matrix for free);
- a plain Triton GEMM (`gemm` below: pointer loads, the same tiles) on those operands: what
  Triton makes of the GEMM without the convolution's gather; and the same GEMM with its
  operands moved by the tensor memory accelerator (`gemm_tma`, descriptors made on the
  device);
- `conv2d_fwd` of each kernel module named by `--kernels` (default the package's,
  miopenkernels.kernels.conv_triton; e.g. `before=kernels_before.conv_triton` for a copy of
  another tree's kernels folder on sys.path) at each tile of `--tiles`, launched through
  Triton's JIT with the runtime's arguments, its output checked against cuDNN's.

Each row gives the times in microseconds and TFLOP/s; the summary the geomean of each column
over cuDNN's. Triton compiles what it lacks before the timing.

    python bench/conv_ceiling.py --kernels shipped=miopenkernels.kernels.conv_triton \\
        --out bench/results/conv_ceiling_h200

Writes <out>.json (device, versions, rows, summary) and prints a table; `--from-json FILE`
prints a saved run's summary again, recomputed from its rows (no GPU).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, C, H, W, K, R, S, stride, pad): forward layers of the zoo, batch 32.
LAYERS: tuple[tuple[str, int, int, int, int, int, int, int, int], ...] = (
    ("sd15_unet up_blocks.1.upsamplers.0.conv", 1280, 32, 32, 1280, 3, 3, 1, 1),
    ("sd15_unet down_blocks.0.resnets.0.conv1", 320, 64, 64, 320, 3, 3, 1, 1),
    ("sd15_vae encoder.down_blocks.1.resnets.0.conv2", 256, 256, 256, 256, 3, 3, 1, 1),
    ("vgg16 features.28", 512, 14, 14, 512, 3, 3, 1, 1),
    ("resnet50 layer1.0.conv2", 64, 56, 56, 64, 3, 3, 1, 1),
    ("resnet50 layer3.0.conv2", 256, 14, 14, 256, 3, 3, 1, 1),
    ("resnet50 layer1.0.conv3", 64, 56, 56, 256, 1, 1, 1, 0),
    ("resnet50 layer2.0.conv1", 256, 56, 56, 128, 1, 1, 1, 0),
    ("resnet50 layer3.1.conv1", 1024, 14, 14, 256, 1, 1, 1, 0),
    ("resnet50 layer4.0.conv3", 512, 7, 7, 2048, 1, 1, 1, 0),
    ("esrgan body.rdb.conv4", 160, 512, 512, 32, 3, 3, 1, 1),
    ("fcn_resnet50 aux_classifier.0", 1024, 65, 65, 256, 3, 3, 1, 1),
)

#: (name, C, H, W, K, R, S, stride, pad): backward-weights layers of the zoo (`--direction W`),
#: batch 32, from 1.2x to 4x cuDNN in zoo_h200-bw-3086ab8.
W_LAYERS: tuple[tuple[str, int, int, int, int, int, int, int, int], ...] = (
    ("resnext50_32x4d 1x1 1024 -> 1024 at 14x14", 1024, 14, 14, 1024, 1, 1, 1, 0),
    ("densenet121 1x1 416 -> 128 at 28x28", 416, 28, 28, 128, 1, 1, 1, 0),
    ("unet 3x3 1024 -> 512 at 32x32", 1024, 32, 32, 512, 3, 3, 1, 1),
    ("sd15_vae 3x3 128 -> 128 at 512x512", 128, 512, 512, 128, 3, 3, 1, 1),
    ("retinanet 3x3 256 -> 256 at 50x68", 256, 50, 68, 256, 3, 3, 1, 1),
    ("retinanet 1x1 128 -> 512 at 100x136", 128, 100, 136, 512, 1, 1, 1, 0),
    ("inception_v3 1x1 1280 -> 192 at 8x8", 1280, 8, 8, 192, 1, 1, 1, 0),
    ("resnet50 3x3 64 -> 64 at 56x56", 64, 56, 56, 64, 3, 3, 1, 1),
    ("yolov5s 1x1 128 -> 128 at 40x40", 128, 40, 40, 128, 1, 1, 1, 0),
    ("sd15_vae 3x3 stride 2 512 at 129x129", 512, 129, 129, 512, 3, 3, 2, 0),
)

TILES = "256:128:64:8:3,128:256:64:8:3,128:128:64:8:3,128:128:64:4:4"
W_TILES = "128:128:64:8:3:0,64:64:64:4:4:0,128:128:32:4:4:0,128:64:64:4:4:0"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="shipped=miopenkernels.kernels.conv_triton",
                    help="comma-separated NAME=MODULE[:KERNEL] of conv_triton modules to time "
                         "(KERNEL: the direction's kernel name by default)")
    ap.add_argument("--tiles", default="",
                    help="comma-separated BLOCK_M:BLOCK_N:BLOCK_K:num_warps:num_stages[:SPLIT_K]"
                         " (SPLIT_K, backward weights: 0 for conv_triton_spec.split_for's; "
                         "default TILES, W_TILES for W)")
    ap.add_argument("--layers", default="",
                    help="comma-separated indices into LAYERS (W_LAYERS for W)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--direction", choices=("F", "B", "W"), default="F",
                    help="forward, backward data (conv2d_bwd_data; cuDNN through "
                         "aten.convolution_backward, as bench/zoo.py calls it; no GEMM "
                         "columns) or backward weights (conv2d_bwd_weight, its split "
                         "finished by conv2d_bwd_weight_reduce; GEMM columns on dy^T x "
                         "im2col(x) in NHWC's memory order)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--no-gemm", action="store_true", help="skip cuBLAS and the Triton GEMM")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "conv_ceiling")
    ap.add_argument("--best", action="store_true",
                    help="print, per kernel, the geomean of each layer's best tile over cuDNN, "
                         "and per pair of kernels their times at the same tile (`best`)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--from-json", type=Path, metavar="FILE",
                    help="print the summary of a saved run (recomputed from its rows; no GPU)")
    return ap.parse_args(argv)


def _gemm_kernel() -> Any:
    import triton
    import triton.language as tl
    from miopenkernels.kernels.conv_triton_common import tile_ids

    @triton.jit
    def gemm(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_bn, s_cm, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        """c[M, N] = a[M, K] b[N, K]^T, K contiguous in both (tile order as the kernels')."""
        pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N),
                                GROUP_M)
        om = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        on = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ok = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + (om.to(tl.int64) * s_am)[:, None] + (k + ok)[None, :],
                        mask=(om < M)[:, None] & ((k + ok) < K)[None, :], other=0.0)
            b = tl.load(b_ptr + (on.to(tl.int64) * s_bn)[None, :] + (k + ok)[:, None],
                        mask=((k + ok) < K)[:, None] & (on < N)[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + (om.to(tl.int64) * s_cm)[:, None] + on[None, :], acc.to(tl.float16),
                 mask=(om < M)[:, None] & (on < N)[None, :])

    @triton.jit
    def gemm_tma(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        """`gemm` with its operands and output moved by the tensor memory accelerator
        (descriptors made on the device)."""
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
        pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N),
                                GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([pid_m * BLOCK_M, k])
            b = b_desc.load([pid_n * BLOCK_N, k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))

    @triton.jit
    def gemm_w(a_ptr, b_ptr, c_ptr, M, N, K, s_ak, s_bk, s_cm, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        """c[M, N] = a[K, M]^T b[K, N], M and N contiguous: backward weights' operands in
        NHWC (dy as [pixels, K], im2col(x) as [pixels, C*R*S])."""
        pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N),
                                GROUP_M)
        om = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        on = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ok = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            kk = (k + ok).to(tl.int64)
            a = tl.load(a_ptr + om[:, None] + (kk * s_ak)[None, :],
                        mask=(om < M)[:, None] & (kk < K)[None, :], other=0.0)
            b = tl.load(b_ptr + (kk * s_bk)[:, None] + on[None, :],
                        mask=(kk < K)[:, None] & (on < N)[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + (om.to(tl.int64) * s_cm)[:, None] + on[None, :], acc.to(tl.float16),
                 mask=(om < M)[:, None] & (on < N)[None, :])

    return gemm, gemm_tma, gemm_w


def _tiles(text: str) -> list[tuple[int, ...]]:
    out = []
    for item in text.split(","):
        out.append(tuple(int(v) for v in item.split(":")))
    return out


def _tile_name(t: tuple[int, ...]) -> str:
    name = f"{t[0]}x{t[1]}x{t[2]}w{t[3]}s{t[4]}"
    return name + (f"k{t[5]}" if len(t) > 5 and t[5] else "")


def _sizes(args: argparse.Namespace, spec: tuple) -> tuple[Any, ...]:
    """A layer's (name, n, c, h, w, k, r, s, stride, pad, p, q) and its row's first columns."""
    name, c, h, w, k, r, s, stride, pad = spec
    n = args.batch
    p = (h + 2 * pad - r) // stride + 1
    q = (w + 2 * pad - s) // stride + 1
    flop = 2.0 * n * p * q * k * c * r * s
    row: dict[str, Any] = {"layer": name, "C": c, "H": h, "W": w, "K": k, "R": r, "S": s,
                           "stride": stride, "pad": pad, "N": n, "gflop": flop / 1e9}
    return (n, c, h, w, k, r, s, stride, pad, p, q), row


def _layer_w(args: argparse.Namespace, spec: tuple, modules: dict[str, Any],
             tiles: list[tuple[int, ...]], gemms: Any) -> dict[str, Any]:
    """One backward-weights layer's row (NHWC, channels-last tensors): cuDNN through
    aten.convolution_backward, cuBLAS and a Triton GEMM on dy^T x im2col(x) (operands made
    outside the timing, skipped where they would take more than 4 GB), and each kernel at each
    tile, a split launch's reduce included in its time."""
    import torch
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels.conv_triton_spec import split_for

    (n, c, h, w, k, r, s, stride, pad, p, q), row = _sizes(args, spec)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, h, w, device="cuda", generator=g).half() \
        .to(memory_format=torch.channels_last)
    dy = (torch.randn(n, k, p, q, device="cuda", generator=g) / 8).half() \
        .to(memory_format=torch.channels_last)
    wt = torch.empty(k, c, r, s, device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last)

    def time_us(fn: Any) -> float:
        return queued_gpu_ms(fn, args.repeats, args.warmup) * 1e3

    geo = ([stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1)
    row["cudnn_us"] = time_us(lambda: torch.ops.aten.convolution_backward(
        dy, x, wt, None, *geo, [False, True, False])[1])
    ref = torch.ops.aten.convolution_backward(dy.float(), x.float(), wt.float(), None, *geo,
                                              [False, True, False])[1]
    npq, crs = n * p * q, c * r * s
    if not args.no_gemm and npq * (k + crs) * 2 <= 4 << 30:
        _, _, gemm_w = gemms
        a = dy.permute(0, 2, 3, 1).reshape(npq, k)  # NHWC memory: [pixels, K]
        b = torch.randn(npq, crs, device="cuda", generator=g).half()
        out = torch.empty(k, crs, device="cuda", dtype=torch.float16)
        row["cublas_us"] = time_us(lambda: torch.mm(a.t(), b))
        for t in tiles:
            bm, bn, bk, nw, ns = t[:5]
            grid = (math.ceil(k / bm) * math.ceil(crs / bn),)
            row[f"gemm-w_{_tile_name(t[:5])}_us"] = time_us(
                lambda grid=grid, bm=bm, bn=bn, bk=bk, nw=nw, ns=ns: gemm_w[grid](
                    a, b, out, k, crs, npq, k, crs, crs, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                    GROUP_M=8, num_warps=nw, num_stages=ns))
        del a, b, out
    dims = (n, c, h, w, k, p, q, r, s, 1)
    conv = (stride, stride, pad, pad, 1, 1)
    strides = (*x.stride(), *wt.stride(), *dy.stride())
    sizes = {"N": n, "C": c, "H": h, "W": w, "K": k, "P": p, "Q": q, "R": r, "S": s, "G": 1,
             "stride_h": stride, "stride_w": stride, "pad_h": pad, "pad_w": pad, "dil_h": 1,
             "dil_w": 1}
    total = k * crs
    for mod_name, (mod, kernel) in modules.items():
        for t in tiles:
            bm, bn, bk, nw, ns = t[:5]
            split = t[5] if len(t) > 5 else 1
            if split == 0:
                split = split_for("conv2d_bwd_weight", sizes,
                                  {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, 132)
            extra = {}
            if "ROW_PIX" in kernel.arg_names:
                extra["ROW_PIX"] = bk if q >= bk else 1 << (q - 1).bit_length()
            ws = torch.empty(max(split, 2) * k * crs, device="cuda", dtype=torch.float32)
            grid = (math.ceil(k / bm) * math.ceil(c / bn), r * s, split)

            def run(kernel: Any = kernel, grid: tuple = grid, bm: int = bm, bn: int = bn,
                    bk: int = bk, nw: int = nw, ns: int = ns, split: int = split,
                    ws: Any = ws, extra: dict = extra, mod: Any = mod) -> None:
                kernel[grid](x, wt, dy, ws, dims, conv, strides, BLOCK_M=bm, BLOCK_N=bn,
                             BLOCK_K=bk, GROUP_M=8, SPLIT_K=min(split, 2), CHANNELS_LAST=True,
                             PRECISION="ieee", num_warps=nw, num_stages=ns, **extra)
                if split > 1:  # one object for every split, as the runtime's: the grid's
                    mod.conv2d_bwd_weight_reduce[(math.ceil(total / 256),)](
                        ws, wt, total, c, r, s, *wt.stride(), split, BLOCK=256, num_warps=2)

            key = f"{mod_name}_{_tile_name((bm, bn, bk, nw, ns, split))}"
            wt.fill_(float("nan"))
            run()
            row[f"{key}_err"] = float((wt.float() - ref).norm() / ref.norm())
            row[f"{key}_us"] = time_us(run)
            del ws
    return row


def _layer(args: argparse.Namespace, spec: tuple, modules: dict[str, Any],
           tiles: list[tuple[int, int, int, int, int]], gemms: Any) -> dict[str, Any]:
    """One layer's row: every column's GPU time, the kernels' errors against cuDNN."""
    import torch
    import torch.nn.functional as F
    from _gpu_timing import queued_gpu_ms

    (n, c, h, w, k, r, s, stride, pad, p, q), row = _sizes(args, spec)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, h, w, device="cuda", generator=g).half() \
        .to(memory_format=torch.channels_last)
    wt = (torch.randn(k, c, r, s, device="cuda", generator=g) / math.sqrt(c * r * s)).half() \
        .to(memory_format=torch.channels_last)

    def time_us(fn: Any) -> float:
        return queued_gpu_ms(fn, args.repeats, args.warmup) * 1e3

    if args.direction == "B":  # as bench/zoo.py calls it: x's tensor, channels-last
        dy = torch.randn(n, k, p, q, device="cuda", generator=g).half() \
            .to(memory_format=torch.channels_last)
        geo = ([stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1)
        row["cudnn_us"] = time_us(lambda: torch.ops.aten.convolution_backward(
            dy, x, wt, None, *geo, [True, False, False])[0])
        del dy
    else:
        ref = F.conv2d(x, wt, stride=stride, padding=pad).float()
        row["cudnn_us"] = time_us(lambda: F.conv2d(x, wt, stride=stride, padding=pad))
    if not args.no_gemm and args.direction == "F":
        gemm, gemm_tma, _ = gemms
        m_rows, red = n * p * q, c * r * s
        a = torch.randn(m_rows, red, device="cuda", generator=g).half()
        b = torch.randn(k, red, device="cuda", generator=g).half()
        out = torch.empty(m_rows, k, device="cuda", dtype=torch.float16)
        row["cublas_us"] = time_us(lambda: torch.mm(a, b.t()))
        for bm, bn, bk, nw, ns in tiles:
            grid = (math.ceil(m_rows / bm) * math.ceil(k / bn),)
            row[f"gemm_{_tile_name((bm, bn, bk, nw, ns))}_us"] = time_us(
                lambda grid=grid, bm=bm, bn=bn, bk=bk, nw=nw, ns=ns: gemm[grid](
                    a, b, out, m_rows, k, red, red, red, k, BLOCK_M=bm, BLOCK_N=bn,
                    BLOCK_K=bk, GROUP_M=8, num_warps=nw, num_stages=ns))
            row[f"gemm-tma_{_tile_name((bm, bn, bk, nw, ns))}_us"] = time_us(
                lambda grid=grid, bm=bm, bn=bn, bk=bk, nw=nw, ns=ns: gemm_tma[grid](
                    a, b, out, m_rows, k, red, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                    num_warps=nw, num_stages=ns))
        del a, b, out
    y = torch.empty(n, k, p, q, device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last)
    if args.direction == "B":  # dy in y's place, dx written into x
        y.copy_(torch.randn(n, k, p, q, device="cuda", generator=g))
        ref = torch.ops.aten.convolution_backward(
            y, x, wt, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1,
            [True, False, False])[0].float()
    dims = (n, c, h, w, k, p, q, r, s, 1)
    conv = (stride, stride, pad, pad, 1, 1)
    strides = (*x.stride(), *wt.stride(), *y.stride())
    out_t = x if args.direction == "B" else y
    for mod_name, mod in modules.items():
        for bm, bn, bk, nw, ns in tiles:
            if args.direction == "B":
                rows_b = n * math.ceil(h / stride) * math.ceil(w / stride)
                grid = (math.ceil(rows_b / bm) * math.ceil(c / bn), 1, stride * stride)
            else:
                grid = (math.ceil(n * p * q / bm) * math.ceil(k / bn), 1, 1)

            def run(mod: Any = mod, grid: tuple = grid, bm: int = bm, bn: int = bn,
                    bk: int = bk, nw: int = nw, ns: int = ns) -> None:
                kernel = mod.conv2d_bwd_data if args.direction == "B" else mod.conv2d_fwd
                kernel[grid](x, wt, y, y, dims, conv, strides, BLOCK_M=bm, BLOCK_N=bn,
                             BLOCK_K=bk, GROUP_M=8, SPLIT_K=1, CHANNELS_LAST=True,
                             PRECISION="ieee", num_warps=nw, num_stages=ns)

            key = f"{mod_name}_{_tile_name((bm, bn, bk, nw, ns))}"
            out_t.fill_(float("nan"))
            run()
            row[f"{key}_err"] = float((out_t.float() - ref).norm() / ref.norm())
            row[f"{key}_us"] = time_us(run)
    return row


def measure(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """Time every layer into result["rows"] and result["summary"], writing <out>.json after
    each layer (a run cut short keeps what it measured)."""
    import torch

    torch.backends.cudnn.benchmark = True
    modules = {}
    direction_kernel = {"F": "conv2d_fwd", "B": "conv2d_bwd_data", "W": "conv2d_bwd_weight"}
    for item in args.kernels.split(","):
        name, module = item.split("=", 1)
        module, _, kernel = module.partition(":")
        mod = importlib.import_module(module)
        modules[name] = mod if args.direction != "W" else \
            (mod, getattr(mod, kernel or direction_kernel["W"]))
    tiles = _tiles(args.tiles or (W_TILES if args.direction == "W" else TILES))
    gemms = _gemm_kernel()
    import triton

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    table = W_LAYERS if args.direction == "W" else LAYERS
    picked = [table[int(i)] for i in args.layers.split(",") if i] or list(table)
    rows: list[dict[str, Any]] = []
    result["rows"] = rows
    for spec in picked:
        t0 = time.perf_counter()
        row = (_layer_w if args.direction == "W" else _layer)(args, spec, modules, tiles, gemms)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        torch.cuda.empty_cache()
        timed = [(v, kk) for kk, v in row.items() if kk.endswith("_us") and kk != "cudnn_us"]
        best = min(timed)
        print(f"{spec[0]}: cuDNN {row['cudnn_us']:.0f} us "
              f"({row['gflop'] / row['cudnn_us'] * 1e3:.0f} TF/s), fastest other {best[1]} "
              f"{best[0]:.0f} us, {row['seconds']:.0f} s", flush=True)
        result["summary"] = summarise(rows)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per timed column: the geomean over the rows of its time over cuDNN's, and its TFLOP/s
    geomean."""
    cols = sorted({k for r in rows for k in r if k.endswith("_us") and k != "cudnn_us"})
    out = {}
    for col in cols:
        have = [r for r in rows if col in r]
        ratios = [r[col] / r["cudnn_us"] for r in have]
        tflops = [r["gflop"] / r[col] * 1e3 for r in have]
        out[col[:-3]] = {"vs_cudnn": math.exp(sum(map(math.log, ratios)) / len(ratios)),
                         "tflops": math.exp(sum(map(math.log, tflops)) / len(tflops)),
                         "layers": len(have)}
    tf = [r["gflop"] / r["cudnn_us"] * 1e3 for r in rows]
    out["cudnn"] = {"vs_cudnn": 1.0, "tflops": math.exp(sum(map(math.log, tf)) / len(tf)),
                    "layers": len(rows)}
    return out


def best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kernel (a column's name before its first `_`: `shipped`, `cublas`, `gemm-w`...): the
    geomean over the layers of its fastest tile's time over cuDNN's, and the range of that
    over the kernel named first in the run; per pair of kernels timed at the same tiles: the
    geomean, least and most of the second's time over the first's, over (layer, tile)."""
    def geo(values: list[float]) -> float:
        return math.exp(sum(map(math.log, values)) / len(values))

    cols = [k for r in rows for k in r if k.endswith("_us") and k != "cudnn_us"]
    kernels = list(dict.fromkeys(c.split("_", 1)[0] for c in cols))
    fastest = {kern: {i: min((v, k[len(kern) + 1:-3]) for k, v in r.items()
                             if k.endswith("_us") and k.split("_", 1)[0] == kern
                             and k != "cudnn_us")
                      for i, r in enumerate(rows)
                      if any(k.split("_", 1)[0] == kern for k in r if k.endswith("_us"))}
               for kern in kernels}
    out: dict[str, Any] = {"kernels": {}, "pairs": {}}
    for kern, per_row in fastest.items():
        wins: dict[str, int] = {}
        for _, tile in per_row.values():
            wins[tile] = wins.get(tile, 0) + 1
        out["kernels"][kern] = {"vs_cudnn": geo([t / rows[i]["cudnn_us"]
                                                 for i, (t, _) in per_row.items()]),
                                "layers": len(per_row), "fastest_tiles": wins}
    for a_i, a in enumerate(kernels):
        for b in kernels[a_i + 1:]:
            ratios = [r[f"{b}_{k.split('_', 1)[1]}"] / r[k] for r in rows for k in r
                      if k.startswith(a + "_") and k.endswith("_us")
                      and f"{b}_{k.split('_', 1)[1]}" in r]
            if ratios:
                both = fastest[a].keys() & fastest[b].keys()
                out["pairs"][f"{b}/{a}"] = {
                    "geomean": geo(ratios), "min": min(ratios), "max": max(ratios),
                    "pairs": len(ratios),
                    "layers_faster": sum(fastest[b][i][0] < fastest[a][i][0] for i in both)}
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.from_json:
        try:
            rows = json.loads(args.from_json.read_text())["rows"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"error: {args.from_json} is not a saved bench/conv_ceiling.py run ({exc}); "
                  "give the .json it wrote", file=sys.stderr)
            return 2
        result: dict[str, Any] = {"summary": summarise(rows), "rows": rows}
    else:
        import torch
        import triton

        result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                  "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                  "triton": triton.__version__, "batch": args.batch,
                  "direction": args.direction, "kernels": args.kernels, "tiles": args.tiles,
                  "repeats": args.repeats}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        measure(args, result)
    if args.best:
        found = best(result["rows"])
        if args.json:
            print(json.dumps(found, indent=1))
            return 0
        for kern, v in found["kernels"].items():
            tiles = ", ".join(f"{t} {n}" for t, n in sorted(v["fastest_tiles"].items(),
                                                             key=lambda tn: -tn[1]))
            print(f"{kern}: each layer's best / cuDNN, geomean {v['vs_cudnn']:.2f} "
                  f"({v['layers']} layers; fastest: {tiles})")
        for pair, v in found["pairs"].items():
            print(f"{pair} at the same tile: geomean {v['geomean']:.3f}, {v['min']:.3f}-"
                  f"{v['max']:.3f} ({v['pairs']} pairs); best tile faster on "
                  f"{v['layers_faster']} layers")
        return 0
    if args.json:
        print(json.dumps(result["summary"], indent=1))
        return 0
    print("| column | time / cuDNN (geomean) | TFLOP/s (geomean) | layers |")
    print("|---|---|---|---|")
    for col, v in sorted(result["summary"].items(), key=lambda kv: kv[1]["vs_cudnn"]):
        print(f"| {col} | {v['vs_cudnn']:.2f} | {v['tflops']:.0f} | {v['layers']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
