"""The 2-D few-channel forward kernel (`conv2d_fwd_smallc`, kernels/conv_triton.py) on
channels-last and channel-planar tensors, on the device machine (FP16, GPU time queued behind
a sleep kernel).

On the zoo's image stems in NHWC the shipped objects took 1.5-2.7x cuDNN while the same kernel
on NCHW took 0.6x: cuDNN's NHWC stems take half its NCHW time, ours 1.5x ours. This times, on
each stem and tile, the kernel compiled as the runtime's objects are (no argument specialised
on its value or alignment) in these variants:

  nchw        NCHW x, w and y, the generic object (CHANNELS_LAST 0): what NCHW runs
  nhwc_cl1    NHWC x, w and y, the channels-last object (CHANNELS_LAST 1): what NHWC runs
  nhwc_cl0    NHWC x, w and y, the generic object
  xnchw_cl0   x relaid to NCHW (its time apart, `relayout`), w KCRS, y written NHWC, generic
  nhwc_t      NHWC, the GEMM transposed (filters x pixels: the accumulator's rows along y's
              contiguous channels); nchw_t the same on NCHW
  nhwc4       x and w padded to 4 channels (packed NHWC4 and KRSC4; the copy's time apart,
              `pad4`), read along a filter row in 8-byte vectors, y channels-last
  nhwc_row    NHWC, a variant that reads a filter row's (s, c) run as one contiguous span
              (x's offset j for flattened index j, where x is packed and dilation 1)
  nhwc_tma    NHWC, y stored by the tensor memory accelerator (the tile one box of y as
              [N*P*Q, K], written in whole lines from shared memory)
  nhwc_fma    NHWC, a direct convolution on the FP32 units (a rank-1 update of the tile per
              filter tap and channel, no matrix cores); nchw_fma the same on NCHW
  *_a         the same with divisibility by 16 of sizes, strides and pointers known (an
              aligned object)

and cuDNN on both layouts (benchmark on; with `--dtype fp32`, TF32 off: the IEEE peer).

    python bench/fewc_fwd_2d.py --out bench/results/fewc_fwd_2d_h200 [--dtype fp32]

Prints a table and writes <out>.json (device, versions, rows); every output is checked
against cuDNN's (relative error).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton import _output_tile
from miopenkernels.kernels.conv_triton_common import channel_strides, mma, tile_ids

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, N, C, H, W, K, filter, stride, pad): the zoo's few-channel forward stems.
LAYERS = (
    ("resnet50 conv1", 32, 3, 224, 224, 64, 7, 2, 3),
    ("mobilenet_v2 features.0", 32, 3, 224, 224, 32, 3, 2, 1),
    ("mobilenet_v3 features.0", 32, 3, 224, 224, 16, 3, 2, 1),
    ("inception_v3 Conv2d_1a", 32, 3, 299, 299, 32, 3, 2, 0),
    ("vgg16 features.0", 32, 3, 224, 224, 64, 3, 1, 1),
    ("sd15_vae decoder.conv_in", 32, 4, 64, 64, 512, 3, 1, 1),
    ("yolov5s model.0", 32, 3, 640, 640, 32, 6, 2, 2),
    ("deeplabv3 conv1", 32, 3, 520, 520, 64, 7, 2, 3),
)
#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): the shipped tiles and neighbours.
TILES = ((128, 64, 32, 4, 3), (256, 64, 32, 8, 3), (128, 64, 16, 4, 3), (128, 32, 16, 4, 3),
         (256, 32, 16, 8, 3), (64, 64, 32, 4, 3), (128, 64, 32, 4, 2), (256, 64, 16, 8, 2),
         (128, 128, 32, 8, 3), (64, 32, 32, 4, 4), (128, 16, 16, 4, 3), (256, 64, 16, 4, 3),
         (256, 32, 16, 4, 3), (64, 64, 16, 4, 3))
ARGS = ("x_ptr", "w_ptr", "y_ptr", "ws_ptr", "dims", "conv", "strides")
VARIANTS = ("nchw", "nhwc_cl1", "nhwc_cl0", "xnchw_cl0", "nhwc_row", "nhwc_t", "nchw_t", "nhwc4",
            "nhwc_tma", "nhwc_fma", "nchw_fma")


@triton.jit
def fwd_smallc_row(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   SPLIT_K: tl.constexpr, CHANNELS_LAST: tl.constexpr,
                   PRECISION: tl.constexpr):
    """conv2d_fwd_smallc for packed NHWC x at dilation 1: a filter row's (s, c) run is one
    span of x, so the flattened index j is x's offset from the row's first tap."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(strides, 1)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    x_row = img * sxn + iw0 * sxw
    w_col = offs_n * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    SC = S * C
    for k0 in range(0, SC, BLOCK_K):
        j = k0 + offs_k
        j_ok = j < SC
        s = j // C
        iw = iw0[:, None] + s[None, :]
        w_ok = (m_ok[:, None] & j_ok[None, :]) & (iw >= 0) & (iw < W)
        w_tap = s * sws + (j - s * C)
        for r in range(0, R):
            ih = ih0 + r
            h_ok = (ih >= 0) & (ih < H)
            a = tl.load(x_ptr + (x_row + ih * sxh)[:, None] + j[None, :],
                        mask=w_ok & h_ok[:, None], other=0.0)
            b = tl.load(w_ptr + w_col[None, :] + (r * swr + w_tap)[:, None],
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0)
            acc = mma(a, b, acc, PRECISION)
    y_off = (img * syn + op * syh + oq * syw)[:, None] + (offs_n * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def fwd_smallc_t(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                 SPLIT_K: tl.constexpr, CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr):
    """conv2d_fwd_smallc's GEMM transposed: y^T (filters x pixels) = w (filters x (s, c)) @
    x^T, so that the accumulator's rows, along which its layout stores, are the filters,
    y's contiguous dimension in NHWC."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    x_row = img * sxn + iw0 * sxw
    w_row = offs_n * swk
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    SC = S * C
    for k0 in range(0, SC, BLOCK_K):
        j = k0 + offs_k
        j_ok = j < SC
        s = j // C
        c = j - s * C
        col = s * dil_w * sxw + c * sxc
        iw = iw0[None, :] + (s * dil_w)[:, None]
        w_ok = (m_ok[None, :] & j_ok[:, None]) & (iw >= 0) & (iw < W)
        w_tap = s * sws + c * swc
        for r in range(0, R):
            ih = ih0 + r * dil_h
            h_ok = (ih >= 0) & (ih < H)
            a = tl.load(x_ptr + (x_row + ih * sxh)[None, :] + col[:, None],
                        mask=w_ok & h_ok[None, :], other=0.0)
            b = tl.load(w_ptr + w_row[:, None] + (r * swr + w_tap)[None, :],
                        mask=j_ok[None, :] & n_ok[:, None], other=0.0)
            acc = mma(b, a, acc, PRECISION)
    y_off = (img * syn + op * syh + oq * syw)[None, :] + (offs_n * syk)[:, None]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[None, :] & n_ok[:, None])


@triton.jit
def fwd_c4_row(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
               SPLIT_K: tl.constexpr, CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr):
    """Packed NHWC x and KRSC w of four channels (three padded with a zero), dilation 1: a
    filter row's (s, c) run is one span of x whose offsets are multiples of 4, so loads along
    it are 8-byte vectors; y channels-last."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(strides, 1)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    SC = S * 4
    w_col = offs_n * (R * SC)
    for k0 in range(0, SC, BLOCK_K):
        j = k0 + offs_k
        j_ok = j < SC
        iw = iw0[:, None] + (j // 4)[None, :]
        w_ok = (m_ok[:, None] & j_ok[None, :]) & (iw >= 0) & (iw < W)
        for r in range(0, R):
            ih = ih0 + r
            h_ok = (ih >= 0) & (ih < H)
            a = tl.load(x_ptr + (((img * H + ih) * W + iw0) * 4)[:, None] + j[None, :],
                        mask=w_ok & h_ok[:, None], other=0.0)
            b = tl.load(w_ptr + w_col[None, :] + (r * SC + j)[:, None],
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0)
            acc = mma(a, b, acc, PRECISION)
    y_off = (img * syn + op * syh + oq * syw)[:, None] + (offs_n * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def fwd_smallc_tma(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   SPLIT_K: tl.constexpr, CHANNELS_LAST: tl.constexpr,
                   PRECISION: tl.constexpr):
    """conv2d_fwd_smallc with y stored by the tensor memory accelerator: packed NHWC y as the
    2-D [N*P*Q, K] matrix and the tile one box of it (rows past the end and filters past K
    clipped by the copy engine), written from shared memory in whole lines whatever the
    accumulator's layout. K multiple of 8 (16-byte rows)."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(N * P * Q, BLOCK_M),
                            tl.cdiv(K, BLOCK_N), GROUP_M)
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[N * P * Q, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    x_row = img * sxn + iw0 * sxw
    w_col = offs_n * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    SC = S * C
    for k0 in range(0, SC, BLOCK_K):
        j = k0 + offs_k
        j_ok = j < SC
        s = j // C
        c = j - s * C
        col = s * dil_w * sxw + c * sxc
        iw = iw0[:, None] + (s * dil_w)[None, :]
        w_ok = (m_ok[:, None] & j_ok[None, :]) & (iw >= 0) & (iw < W)
        w_tap = s * sws + c * swc
        for r in range(0, R):
            ih = ih0 + r * dil_h
            h_ok = (ih >= 0) & (ih < H)
            a = tl.load(x_ptr + (x_row + ih * sxh)[:, None] + col[None, :],
                        mask=w_ok & h_ok[:, None], other=0.0)
            b = tl.load(w_ptr + w_col[None, :] + (r * swr + w_tap)[:, None],
                        mask=j_ok[:, None] & n_ok[None, :], other=0.0)
            acc = mma(a, b, acc, PRECISION)
    y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(y_ptr.dtype.element_ty))


@triton.jit
def fwd_smallc_fma(x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   SPLIT_K: tl.constexpr, CHANNELS_LAST: tl.constexpr,
                   PRECISION: tl.constexpr):
    """Few-channel forward as a direct convolution on the FP32 units, no matrix cores: per
    (r, s, c) of the filter, one column of x's values (a position each row) times one row of
    the filters, added to the BLOCK_M x BLOCK_N accumulator (BLOCK_M * BLOCK_N fused
    multiply-adds, exact in FP32). BLOCK_K is unused. The stems' whole reduction is 27-147
    such steps of 3 or 4 channels, which a matrix-core tile pads to 16 or 32 columns and
    FP32's three-product emulation triples."""
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    offs_n, offs_k, m_ok, n_ok, img, pq, op, oq, ih0, iw0 = _output_tile(
        N, K, P, Q, stride_h, stride_w, pad_h, pad_w, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    x_row = img * sxn + ih0 * sxh + iw0 * sxw
    w_col = offs_n * swk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(0, R):
        ih = ih0 + r * dil_h
        h_ok = m_ok & (ih >= 0) & (ih < H)
        for s in range(0, S):
            iw = iw0 + s * dil_w
            ok = h_ok & (iw >= 0) & (iw < W)
            base = x_row + r * dil_h * sxh + s * dil_w * sxw
            for c in range(0, C):
                a = tl.load(x_ptr + base + c * sxc, mask=ok, other=0.0).to(tl.float32)
                b = tl.load(w_ptr + w_col + r * swr + s * sws + c * swc, mask=n_ok,
                            other=0.0).to(tl.float32)
                acc += a[:, None] * b[None, :]
    y_off = (img * syn + op * syh + oq * syw)[:, None] + (offs_n * syk)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("fewc_fwd_2d"), help="output stem")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", default="", help="comma-separated indices into LAYERS")
    ap.add_argument("--tiles", default="", help="comma-separated indices into TILES")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--aligned", action="store_true", help="also each variant's aligned object")
    ap.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16",
                    help="the tensors' type (fp32: cuDNN with TF32 off, the kernels' FP32 "
                         "products IEEE)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def _kernel(fn: Any, aligned: bool) -> Any:
    return triton.jit(fn.fn, do_not_specialize=list(ARGS),
                      do_not_specialize_on_alignment=[] if aligned else list(ARGS))


def _strides(t: Any) -> tuple[int, ...]:
    """A 4-D tensor's strides in (n, c, h, w) order whatever its memory format."""
    return tuple(int(v) for v in t.stride())


def _layer(spec_row: tuple, kernels: dict, tiles: list, time: Any,
           dtype_name: str = "fp16") -> dict[str, Any]:
    """One stem's row: cuDNN both ways, the relayout of x, every variant's best tile."""
    import torch
    import torch.nn.functional as F

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    name, n, c, h, w_, k, f, st, pad = spec_row
    p = (h + 2 * pad - f) // st + 1
    q = (w_ + 2 * pad - f) // st + 1
    x = torch.randn(n, c, h, w_, device="cuda", dtype=dtype)
    wt = torch.randn(k, c, f, f, device="cuda", dtype=dtype) / (c * f * f) ** 0.5
    xl, wl = x.to(memory_format=torch.channels_last), wt.to(memory_format=torch.channels_last)
    ref = F.conv2d(x, wt, stride=st, padding=pad)
    row: dict[str, Any] = {"layer": name, "sizes": [n, c, h, w_, k, f, st, pad]}
    row["cudnn_nchw_ms"] = time(lambda: F.conv2d(x, wt, stride=st, padding=pad))
    row["cudnn_nhwc_ms"] = time(lambda: F.conv2d(xl, wl, stride=st, padding=pad))
    row["relayout_ms"] = time(lambda: xl.contiguous())
    x4 = torch.zeros(n, h, w_, 4, device="cuda", dtype=dtype)
    x4[..., :c] = xl.permute(0, 2, 3, 1)
    w4 = torch.zeros(k, f, f, 4, device="cuda", dtype=dtype)
    w4[..., :c] = wl.permute(0, 2, 3, 1)
    row["pad4_ms"] = time(lambda: x4[..., :c].copy_(xl.permute(0, 2, 3, 1)))
    y_nchw = torch.empty(n, k, p, q, device="cuda", dtype=dtype)
    y_nhwc = torch.empty_like(y_nchw, memory_format=torch.channels_last)
    ws = torch.empty(1, device="cuda", dtype=torch.float32)
    dims, conv = (n, c, h, w_, k, p, q, f, f, 1), (st, st, pad, pad, 1, 1)
    setups = {"nchw": (x, wt, y_nchw, 0), "nhwc_cl1": (xl, wl, y_nhwc, 1),
              "nhwc_cl0": (xl, wl, y_nhwc, 0), "xnchw_cl0": (x, wt, y_nhwc, 0),
              "nhwc_row": (xl, wl, y_nhwc, 1), "nhwc_t": (xl, wl, y_nhwc, 1),
              "nchw_t": (x, wt, y_nchw, 0), "nhwc4": (x4, w4, y_nhwc, 1),
              "nhwc_tma": (xl, wl, y_nhwc, 1), "nhwc_fma": (xl, wl, y_nhwc, 1),
              "nchw_fma": (x, wt, y_nchw, 0)}
    for (variant, aligned), kern in kernels.items():
        xt, wtt, yt, last = setups[variant]
        strides = (0,) * 8 + _strides(yt) if xt is x4 else \
            _strides(xt) + _strides(wtt) + _strides(yt)
        key = f"{variant}{'_a' if aligned else ''}"
        best = None
        for bm, bn, bk, warps, stages in tiles:
            grid = (triton.cdiv(n * p * q, bm) * triton.cdiv(k, bn), 1, 1)

            def run(kern=kern, xt=xt, wtt=wtt, yt=yt, strides=strides, grid=grid, bm=bm,
                    bn=bn, bk=bk, warps=warps, stages=stages, last=last):
                kern[grid](xt, wtt, yt, ws, dims, conv, strides, BLOCK_M=bm, BLOCK_N=bn,
                           BLOCK_K=bk, GROUP_M=8, SPLIT_K=1, CHANNELS_LAST=last,
                           PRECISION="ieee", num_warps=warps, num_stages=stages)
            tile = f"{bm}x{bn}x{bk}w{warps}s{stages}"
            try:
                yt.fill_(float("nan"))
                run()
                err = float((yt.float() - ref.float()).norm() / ref.float().norm())
                ms = time(run)
            except Exception as e:  # a tile that does not compile (shared memory)
                print(f"  {name} {key} {tile}: {type(e).__name__}", flush=True)
                continue
            row.setdefault(f"{key}_tiles", {})[tile] = ms
            if not err < 1e-2:
                row.setdefault("wrong", []).append([key, tile, err])
            if best is None or ms < best[0]:
                best = (ms, tile)
        if best is not None:
            row[f"{key}_ms"], row[f"{key}_best"] = best
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton as ker

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # FP32: the IEEE peer; no effect on 16-bit types
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(),
                              "triton": triton.__version__, "dtype": args.dtype,
                              "tiles": TILES, "rows": []}
    source = {"nhwc_row": fwd_smallc_row, "nhwc_t": fwd_smallc_t, "nchw_t": fwd_smallc_t,
              "nhwc4": fwd_c4_row, "nhwc_tma": fwd_smallc_tma, "nhwc_fma": fwd_smallc_fma,
              "nchw_fma": fwd_smallc_fma}
    kernels = {(v, a): _kernel(source.get(v, ker.conv2d_fwd_smallc), a)
               for v in args.variants.split(",")
               for a in ((False, True) if args.aligned else (False,))}
    tiles = [TILES[int(i)] for i in args.tiles.split(",") if i] or list(TILES)
    layers = [LAYERS[int(i)] for i in args.layers.split(",") if i] or list(LAYERS)
    for spec_row in layers:
        row = _layer(spec_row, kernels, tiles,
                     lambda fn: queued_gpu_ms(fn, args.repeats, args.warmup), args.dtype)
        result["rows"].append(row)
        print(f"{row['layer']}: cudnn {row['cudnn_nchw_ms']:.4f}/{row['cudnn_nhwc_ms']:.4f} "
              f"relayout {row['relayout_ms']:.4f}  " + "  ".join(
                  f"{kk[:-3]} {v:.4f} ({row[kk[:-3] + '_best']})" for kk, v in row.items()
                  if kk.endswith("_ms") and not kk.startswith(("cudnn", "relayout", "pad4"))),
              flush=True)
        if row.get("wrong"):
            print(f"  wrong: {row['wrong']}", flush=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
        torch.cuda.empty_cache()
    if args.json:
        print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
