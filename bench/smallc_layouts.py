"""The few-channel 3-D kernels (kernels/conv_triton_3d_smallc.py) on channels-last tensors,
through their channels-last objects and their generic ones, against the same kernels on
channel-planar tensors and cuDNN, on the device machine (FP16).

The solvers run NDHWC problems on the objects that know the channel stride is 1
(CHANNELS_LAST=1); on 3D U-Net's first layer those took 1.4-2x the time the same kernels
took on NCDHW. This times each direction's kernels (backward weights: its split launch
without the reduce; backward data: both launches) at the solvers' tiles on one layer three
ways: NCDHW tensors, NDHWC tensors on the CHANNELS_LAST=1 object, NDHWC tensors on the
CHANNELS_LAST=0 object (any strides), GPU time queued behind a sleep kernel.

    python bench/smallc_layouts.py --out bench/results/smallc_layouts_h200

Prints a table and writes <out>.json (device, versions, rows); each output is checked
against cuDNN's (relative error).
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

#: (name, N, C, K, D=H=W, filter, stride, pad): few-channel 3-D layers.
LAYERS = (
    ("unet3d analysis1.conv_a", 8, 1, 32, 128, (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    ("r3d_18 stem", 32, 3, 64, (16, 112, 112), (3, 7, 7), (1, 2, 2), (1, 3, 3)),
    ("r2plus1d_18 stem", 32, 3, 45, (16, 112, 112), (1, 7, 7), (1, 2, 2), (0, 3, 3)),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("smallc_layouts"), help="output stem")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--batch", type=int, default=0, help="every layer at this batch")
    ap.add_argument("--layers", default="", help="comma-separated indices into LAYERS")
    ap.add_argument("--runtime", action="store_true",
                    help="also the solver's plan through the runtime (`Handle.compile_solution`"
                         " and its invoker, as bench/zoo.py times it) on the same tensors")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


def layer(spec_row: tuple, direction: str, batch: int = 0, dtype: str = "FP16"
          ) -> dict[str, Any]:
    """A LAYERS row at `batch` (0: its own) for `direction`: its sizes, the solvers' usual
    tile on sm90 for `dtype` (backward weights split as they split it), random tensors of
    that type (x, w, dy), the kernels' `dims` and `conv` tuple arguments and aten's backward
    geometry."""
    import torch
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    name, n, c, k, size, filt, stride, pad = spec_row
    n = batch or n
    d, h, w = (size,) * 3 if isinstance(size, int) else size
    outs = [(s + 2 * p - f) // st + 1 for s, p, f, st in zip((d, h, w), pad, filt, stride,
                                                               strict=True)]
    sizes = {"N": n, "C": c, "K": k, "G": 1, "D": d, "H": h, "W": w, "Z": outs[0],
             "P": outs[1], "Q": outs[2], "T": filt[0], "R": filt[1], "S": filt[2]}
    for i, axis in enumerate("dhw"):
        sizes.update({f"stride_{axis}": stride[i], f"pad_{axis}": pad[i], f"dil_{axis}": 1})
    tile = spec.narrow_tile(direction, spec.usual_tile(dtype, direction, dtype, "sm90"), sizes,
                            dtype, "sm90")
    if direction == "W":
        tile["SPLIT_K"] = spec.split_for(sizes, tile, 132)
    g = torch.Generator(device="cuda").manual_seed(0)
    torch_type = {"FP16": torch.float16, "BF16": torch.bfloat16, "FP32": torch.float32}[dtype]
    x = torch.randn(n, c, d, h, w, device="cuda", generator=g).to(torch_type)
    wt = (torch.randn(k, c, *filt, device="cuda", generator=g) / math.sqrt(c * math.prod(filt))
          ).to(torch_type)
    dy = (torch.randn(n, k, *outs, device="cuda", generator=g) / 8).to(torch_type)
    return {"name": name, "direction": direction, "sizes": sizes, "tile": tile, "x": x,
            "w": wt, "dy": dy, "filter": filt, "stride": stride, "pad": pad,
            "geo": (list(stride), list(pad), [1, 1, 1], False, [0, 0, 0], 1),
            "conf": (*stride, *pad, 1, 1, 1),
            "dims": tuple(sizes[s] for s in ("N", "C", "D", "H", "W", "K", "Z", "P", "Q",
                                             "T", "R", "S", "G"))}


def layout_tensors(lay: dict[str, Any], layout: str) -> tuple[tuple, Any, Any, Any]:
    """The kernels' (x, w, y) in `layout` (backward data: dx as x; backward weights: dw as w),
    the output (in the layout's memory format), cuDNN's result and a call of cuDNN."""
    import torch
    import torch.nn.functional as F

    fmt = torch.channels_last_3d if layout == "NDHWC" else torch.contiguous_format
    xl, wl, dyl = (lay[t].contiguous(memory_format=fmt) for t in ("x", "w", "dy"))
    stride, pad, geo, direction = lay["stride"], lay["pad"], lay["geo"], lay["direction"]
    if direction == "F":
        def cudnn() -> Any:
            return F.conv3d(xl, wl, stride=stride, padding=pad)
    else:
        mask = (True, False, False) if direction == "B" else (False, True, False)

        def cudnn() -> Any:
            return torch.ops.aten.convolution_backward(dyl, xl, wl, None, *geo, mask)
    ref = cudnn()
    if direction != "F":
        ref = ref[0 if direction == "B" else 1]
    out = torch.empty(ref.shape, device="cuda", dtype=ref.dtype).contiguous(memory_format=fmt)
    tensors = {"F": (xl, wl, out), "B": (out, wl, dyl), "W": (xl, out, dyl)}[direction]
    return tensors, out, ref, cudnn


def run_kernels(lay: dict[str, Any], tensors: tuple, ws: Any, main: Any, gather: Any,
                last: int, gather_last: int, **constexprs: Any) -> None:
    """One launch of the direction's kernel `main` at the layer's tile (CHANNELS_LAST `last`)
    on `tensors`, in backward data then the gather's (CHANNELS_LAST `gather_last`)."""
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    tile, sizes, direction = lay["tile"], lay["sizes"], lay["direction"]
    strides = tuple(s for t in tensors for s in t.stride())
    args = (*tensors, ws, lay["dims"], lay["conf"], strides)
    main[spec.grid(direction, sizes, tile)](
        *args, BLOCK_M=tile["BLOCK_M"], BLOCK_N=tile["BLOCK_N"], BLOCK_K=tile["BLOCK_K"],
        GROUP_M=tile["GROUP_M"], CHANNELS_LAST=last, PRECISION="ieee",
        num_warps=tile["num_warps"], num_stages=tile["num_stages"], **constexprs)
    if direction == "B":
        gc = spec.GATHER_CONFIG
        gather[spec.gather_grid(sizes)](
            *args, BLOCK_M=gc["BLOCK_M"], BLOCK_N=gc["BLOCK_N"], BLOCK_K=gc["BLOCK_K"],
            GROUP_M=gc["GROUP_M"], CHANNELS_LAST=gather_last, PRECISION="ieee",
            num_warps=gc["num_warps"], num_stages=gc["num_stages"], **constexprs)


def measure(row: dict[str, Any], key: str, lay: dict[str, Any], out: Any, ref: Any,
            run: Any, time_ms: Any) -> None:
    """`run` once into `out` poisoned with NaN, its relative error against cuDNN's `ref`
    (not of a split backward weights, whose reduce is not run) and its GPU time into `row`."""
    out.fill_(float("nan"))
    run()
    if lay["direction"] != "W" or lay["tile"]["SPLIT_K"] == 1:
        row[f"{key}_err"] = float((out.float() - ref.float()).norm() / ref.float().norm())
    row[f"{key}_ms"] = time_ms(run)


def workspace(lay: dict[str, Any]) -> Any:
    """The launch's FP32 workspace (backward data's products, backward weights' partials)."""
    import torch
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    nbytes = spec.workspace_bytes(lay["direction"], lay["sizes"], lay["tile"])
    return torch.empty(max(nbytes // 4, 1), device="cuda", dtype=torch.float32)


def _layer(args: argparse.Namespace, spec_row: tuple, direction: str) -> dict[str, Any]:
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.kernels import conv_triton_3d_smallc as ker
    from miopenkernels.kernels import conv_triton_3d_smallc_spec as spec

    lay = layer(spec_row, direction, args.batch)
    row: dict[str, Any] = {"layer": lay["name"], "direction": direction, "tile": lay["tile"]}

    def time_ms(fn: Any) -> float:
        return queued_gpu_ms(fn, args.repeats, args.warmup)

    kernel = getattr(ker, spec.KERNEL[direction])
    for layout in ("NCDHW", "NDHWC"):
        tensors, out, ref, cudnn = layout_tensors(lay, layout)
        row[f"cudnn_{layout}_ms"] = time_ms(cudnn)
        ws = workspace(lay)
        for last in ((0,) if layout == "NCDHW" else (1, 0)):
            measure(row, f"{layout}_last{last}", lay, out, ref,
                    lambda last=last, tensors=tensors, ws=ws: run_kernels(
                        lay, tensors, ws, kernel, ker.conv3d_bwd_data_smallc_gather, last, 0),
                    time_ms)
        if args.runtime:
            row[f"{layout}_runtime_ms"], row[f"{layout}_runtime_err"], row[
                f"{layout}_runtime_solver"] = _runtime(
                    direction, layout, lay, tensors, out, ref, time_ms)
        del ws
    return row


def _runtime(direction: str, layout: str, lay: dict[str, Any], tensors: tuple, out: Any,
             ref: Any, time_ms: Any) -> tuple[float, float, str]:
    """The few-channel solver's plan (or its chunk solver's) through the runtime on the same
    tensors: (GPU ms, relative error, solver)."""
    from miopenkernels.handle import Handle
    from miopenkernels.plan import workspace_ptr
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target
    from miopenkernels.tensor import DeviceTensor

    z = lay["sizes"]
    p = ConvProblem(n=z["N"], c=z["C"], k=z["K"], in_spatial=(z["D"], z["H"], z["W"]),
                    filter=lay["filter"], pad=lay["pad"], stride=lay["stride"],
                    direction=direction, in_type="FP16",
                    wei_type="FP16", out_type="FP16", in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    name = next((n for n in (f"ConvTriton3dSmallC{suffix}", f"ConvTriton3dSmallCChunks{suffix}")
                 if get_solver(n).is_applicable(p, Target("sm90", 132))), None)
    if name is None:
        return float("nan"), float("nan"), ""
    order = (0, 2, 3, 4, 1) if layout == "NDHWC" else (0, 1, 2, 3, 4)
    roles = dict(zip(("x", "w", "y"), tensors, strict=True))
    handle = Handle()
    inv = handle.compile_solution(p, name)
    ptrs = {role: DeviceTensor(t.data_ptr(), t.numel() * 2, "FP16",
                               tuple(t.shape[i] for i in order)).ptr
            for role, t in roles.items()}
    ptrs["workspace"] = workspace_ptr(handle.backend, inv)
    out.fill_(float("nan"))
    inv(ptrs)
    import torch

    torch.cuda.synchronize()
    err = float((out.float() - ref.float()).norm() / ref.float().norm())
    ms = time_ms(lambda: inv(ptrs))
    if inv.workspace is not None:
        inv.workspace.free()
    return ms, err, name


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import triton

    torch.backends.cudnn.benchmark = True
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(),
                              "triton": triton.__version__, "rows": []}
    for spec_row in [LAYERS[int(i)] for i in args.layers.split(",") if i] or LAYERS:
        for direction in args.directions.split(","):
            row = _layer(args, spec_row, direction)
            result["rows"].append(row)
            print(f"{row['layer']} {direction}: " + "  ".join(
                f"{k[:-3]} {v:.3f}" for k, v in row.items() if k.endswith("_ms")), flush=True)
            args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
            torch.cuda.empty_cache()
    if args.json:
        print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
