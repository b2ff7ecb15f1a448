"""FP32 backward weights of few-channel layers as one GEMM-library product over an im2col of
the narrow side, against IEEE cuDNN, on the device machine (PyTorch, cuBLAS; no package).

The layers of three input channels (image stems) and of few filters (a latent output) took
2.2-2.9x IEEE cuDNN's GPU time on the three-product implicit GEMM
(bench/results/fewk_h100-4ee2d41/zoo_fp32_bw.json). Their backward weights is a product whose
reduction runs over every pixel of the batch and whose result is small:
- few channels: dw[K, C*R*S] = dy^T[K, N*P*Q] . col(x)[N*P*Q, C*R*S];
- few filters: dw[C, K*R*S] = x^T[C, N*H*W] . col(dy)[N*H*W, K*R*S] (dy's taps flipped).
Channels-last activations make it one call over the batch; channel planes a batch of
per-image products summed after. This times, per layer: cuDNN (benchmark on, TF32 off), the
library's product on a column matrix made beforehand (IEEE), PyTorch's own column matrix
(F.unfold and a copy: an upper bound of what an im2col kernel costs) and a copy of the column
matrix's bytes (what such a kernel costs at the copy engine's rate). Each product is checked
against cuDNN's result.

  python bench/wrw_im2col_probe.py --out bench/results/wrw_im2col_probe_h100
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# name, C, H, W, K, R, S, stride, pad (square)
LAYERS = (
    ("yolov5s model.0", 3, 640, 640, 32, 6, 6, 2, 2),
    ("esrgan conv_first", 3, 512, 512, 64, 3, 3, 1, 1),
    ("sd15_vae encoder.conv_in", 3, 512, 512, 128, 3, 3, 1, 1),
    ("vgg16 features.0", 3, 224, 224, 64, 3, 3, 1, 1),
    ("unet enc1.conv_a", 3, 256, 256, 64, 3, 3, 1, 1),
    ("convnext_tiny features.0", 3, 224, 224, 96, 4, 4, 4, 0),
    ("shufflenet_v2 conv1", 3, 224, 224, 24, 3, 3, 2, 1),
    ("sd15_unet conv_out", 320, 64, 64, 4, 3, 3, 1, 1),
)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="path stem of the .json written")
    ap.add_argument("--batches", default="32,8", help="batch sizes")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    return ap.parse_args(argv)


def _layer(spec: tuple, n: int, cl: bool, repeats: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from _gpu_timing import queued_gpu_ms

    name, c, h, w, k, r, s, st, pad = spec
    p, q = (h + 2 * pad - r) // st + 1, (w + 2 * pad - s) // st + 1
    fmt = torch.channels_last if cl else torch.contiguous_format
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, h, w, device="cuda", generator=g).contiguous(memory_format=fmt)
    dy = torch.randn(n, k, p, q, device="cuda", generator=g).contiguous(memory_format=fmt)
    wt = torch.empty(k, c, r, s, device="cuda").contiguous(memory_format=fmt)

    def time_ms(fn: Any) -> float:
        return queued_gpu_ms(fn, repeats, 2)

    def cudnn() -> Any:
        return torch.ops.aten.convolution_backward(
            dy, x, wt, None, [st, st], [pad, pad], [1, 1], False, [0, 0], 1,
            [False, True, False])[1]

    row: dict[str, Any] = {"layer": name, "n": n, "layout": "NHWC" if cl else "NCHW",
                           "C": c, "H": h, "K": k, "R": r, "stride": st}
    row["cudnn_ms"] = time_ms(cudnn)
    ref = cudnn().double()
    few_k = k < c
    if not few_k:  # col(x): [N, C*R*S, P*Q]
        narrow, wide, taps = x, dy, (r, s)
        kw = {"kernel_size": taps, "stride": st, "padding": pad}
    else:  # col(dy) over x's pixels, stride 1: dw[k, c, r, s] = sum x[c, h, w] dy[k, h-r+pad, ...]
        assert st == 1
        narrow, wide, taps = dy, x, (r, s)
        kw = {"kernel_size": taps, "padding": (r - 1 - pad, s - 1 - pad)}

    def make_col() -> Any:
        u = F.unfold(narrow.contiguous(), **kw)  # [N, narrow*R*S, pixels]
        return u.transpose(1, 2).contiguous() if cl else u

    col = make_col()
    row["col_torch_ms"] = time_ms(make_col)
    copy_src = torch.empty_like(col)
    copy_dst = torch.empty_like(col)
    row["col_copy_ms"] = time_ms(lambda: copy_dst.copy_(copy_src))
    row["col_mb"] = col.numel() * 4 / 1e6
    pixels = col.shape[2] if not cl else col.shape[1]
    wide3 = wide.reshape(n, wide.shape[1], pixels) if not cl else None
    wide2 = wide.permute(0, 2, 3, 1).reshape(n * pixels, wide.shape[1]) if cl else None
    col2 = col.reshape(n * pixels, col.shape[2]) if cl else None

    def product() -> Any:
        if cl:
            return torch.mm(wide2.t(), col2)  # [wide, narrow*R*S]
        return torch.bmm(wide3, col.transpose(1, 2)).sum(0)

    row["gemm_ms"] = time_ms(product)
    out = product().double()
    if not few_k:
        got = out.reshape(k, c, r, s)
    else:  # [C, (K, r', s')], r' = R-1-r
        got = out.reshape(c, k, r, s).permute(1, 0, 2, 3).flip(2, 3)
    row["rel_err"] = float((got - ref).abs().max() / ref.abs().max())
    row["gemm_ratio"] = row["gemm_ms"] / row["cudnn_ms"]
    row["total_copy_ratio"] = (row["gemm_ms"] + row["col_copy_ms"]) / row["cudnn_ms"]
    row["total_torch_ratio"] = (row["gemm_ms"] + row["col_torch_ms"]) / row["cudnn_ms"]
    return row


def main(argv: list[str] | None = None) -> int:
    import torch
    from _machine import nvidia_driver

    args = _parse(argv)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for n in (int(b) for b in args.batches.split(",")):
        for cl in (True, False):
            for spec in LAYERS:
                try:
                    row = _layer(spec, n, cl, args.repeats)
                except torch.OutOfMemoryError:
                    continue
                rows.append(row)
                print(f"{row['layer']:26s} n={n:2d} {row['layout']} cuDNN {row['cudnn_ms']:.3f} "
                      f"gemm {row['gemm_ratio']:.2f} +copy {row['total_copy_ratio']:.2f} "
                      f"+unfold {row['total_torch_ratio']:.2f} err {row['rel_err']:.1e}",
                      flush=True)
                torch.cuda.empty_cache()

    def geo(key: str, sel: list[dict[str, Any]]) -> float:
        return math.exp(sum(math.log(r[key]) for r in sel) / max(len(sel), 1))

    summary = {f"{lay}-b{n}": {k: geo(k, sel) for k in ("gemm_ratio", "total_copy_ratio",
                                                         "total_torch_ratio")}
               for lay in ("NHWC", "NCHW") for n in {r["n"] for r in rows}
               if (sel := [r for r in rows if r["layout"] == lay and r["n"] == n])}
    result = {"device": torch.cuda.get_device_name(), "driver": nvidia_driver(),
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(), "repeats": args.repeats,
              "rows": rows, "summary": summary}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(summary, indent=1) if args.json else
          "\n".join(f"{k}: {v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
