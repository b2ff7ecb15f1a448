"""Cold start: a fresh process computes the 23 distinct forward convolutions of ResNet-50.

Time from process start to the last result (all outputs computed and synchronised), per case:
- installed: the sm90 kernel package's system kdb and FindDb (MIOPEN_SYSTEM_DB_PATH), empty user
  databases and kernel cache;
- nothing: no system databases, empty user side: JIT compiles and a DYNAMIC_HYBRID find;
- warm_user: no system databases, the user FindDb and kernel cache that `nothing` left;
- torch_cudnn_off / torch_cudnn_on: the same layers through PyTorch (cuDNN) with
  torch.backends.cudnn.benchmark off / on.
Batch 32, NCHW, FP32 and FP16 (one process per case and type). Prints a table, writes JSON and a
markdown table.

    python bench/cold_start.py --system-db DIR --out bench/results/cold_start_h100
"""

from __future__ import annotations

import time

T_START = time.time()  # noqa: E402 - before any import, for the child's own timeline

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = ("installed", "nothing", "warm_user", "torch_cudnn_off", "torch_cudnn_on")


# ----------------------------------------------------------------------------- children
def child_miopenkernels(dtype: str) -> dict:
    import numpy as np

    sys.path.insert(0, str(HERE))
    from _layers import resnet50_layers
    from miopenkernels.handle import Handle
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    t_import = time.time()
    handle = Handle()
    t_handle = time.time()
    layers = resnet50_layers(dtype)
    be = handle.backend
    size = TYPE_BYTES[dtype]
    xmax = max(int(np.prod(p.in_shape)) for p in layers) * size
    wmax = max(int(np.prod(p.wei_shape)) for p in layers) * size
    rng = np.random.default_rng()
    host = (rng.random((xmax + wmax) // 2, dtype=np.float32) - 0.5).astype(
        np.float16 if dtype == "FP16" else np.float32)[: (xmax + wmax) // size]
    pool = be.alloc(host.nbytes)
    be.copy_in(pool, host)
    outs = []
    solvers = []
    for p in layers:
        x = DeviceTensor(pool.ptr, int(np.prod(p.in_shape)) * size, dtype, p.in_shape)
        w = DeviceTensor(pool.ptr + xmax, int(np.prod(p.wei_shape)) * size, dtype, p.wei_shape)
        ybuf = be.alloc(int(np.prod(p.out_shape)) * size)
        be.memset(ybuf, 0xFF)  # NaN: every element must be written
        y = DeviceTensor(ybuf.ptr, ybuf.nbytes, dtype, p.out_shape, buffer=ybuf)
        sols = handle.find(p, x, w, y)
        if sols[0].source != "find":
            handle.run(p, sols[0], x, w, y)
        solvers.append(f"{sols[0].solver}({sols[0].source})")
        outs.append((p, ybuf))
    be.synchronize()
    t_end = time.time()
    nan_layers = 0
    for p, ybuf in outs:
        host_y = np.empty(p.out_shape, np.float16 if dtype == "FP16" else np.float32)
        be.copy_out(host_y, ybuf)
        nan_layers += int(not np.isfinite(host_y).all())
    return {"t_start": T_START, "t_import": t_import, "t_handle": t_handle, "t_end": t_end,
            "kernels": handle.stats.to_dict(), "compilations": handle.compilations,
            "solvers": solvers, "layers_with_nan": nan_layers,
            "device": be.device_name}


def child_torch(dtype: str, benchmark: bool) -> dict:
    import torch

    sys.path.insert(0, str(HERE))
    from _layers import resnet50_layers

    t_import = time.time()
    torch.backends.cudnn.benchmark = benchmark
    tdt = torch.float16 if dtype == "FP16" else torch.float32
    outs = []
    for p in resnet50_layers(dtype):
        x = torch.randn(p.in_shape, device="cuda", dtype=tdt)
        w = torch.randn(p.wei_shape, device="cuda", dtype=tdt)
        outs.append(torch.nn.functional.conv2d(x, w, None, p.stride, p.pad, p.dilation,
                                               p.groups))
    torch.cuda.synchronize()
    t_end = time.time()
    nan_layers = sum(int(not torch.isfinite(y).all()) for y in outs)
    return {"t_start": T_START, "t_import": t_import, "t_end": t_end,
            "layers_with_nan": nan_layers, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}


# ----------------------------------------------------------------------------- parent
def run_case(case: str, dtype: str, env: dict[str, str]) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case, "--dtype", dtype]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"case": case, "dtype": dtype, "error": proc.stderr.strip()[-2000:]}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data.update(case=case, dtype=dtype, seconds=data["t_end"] - t0,
                import_s=data["t_import"] - t0)
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", choices=CASES)
    ap.add_argument("--dtype", default="FP32")
    ap.add_argument("--system-db", type=Path, help="folder holding sm9084.kdb and FindDb")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cold_start")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    if args.child:
        if args.child.startswith("torch"):
            out = child_torch(args.dtype, args.child == "torch_cudnn_on")
        else:
            out = child_miopenkernels(args.dtype)
        print(json.dumps(out))
        return
    results = []
    empty = Path(tempfile.mkdtemp(prefix="nosys"))
    for dtype in args.dtypes.split(","):
        for rep in range(args.repeats):
            user = Path(tempfile.mkdtemp(prefix="user"))
            base = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
            envs = {
                "installed": {**base, "MIOPEN_SYSTEM_DB_PATH": str(args.system_db or empty),
                              "MIOPEN_USER_DB_PATH": str(Path(tempfile.mkdtemp())),
                              "MIOPEN_CUSTOM_CACHE_DIR": str(Path(tempfile.mkdtemp()))},
                "nothing": {**base, "MIOPEN_SYSTEM_DB_PATH": str(empty),
                            "MIOPEN_USER_DB_PATH": str(user / "db"),
                            "MIOPEN_CUSTOM_CACHE_DIR": str(user / "cache")},
            }
            envs["warm_user"] = envs["nothing"]
            envs["torch_cudnn_off"] = envs["torch_cudnn_on"] = base
            for case in args.cases.split(","):
                r = run_case(case, dtype, envs[case])
                r["repeat"] = rep
                results.append(r)
                status = r.get("error", "")[:200] or (
                    f"{r['seconds']:.2f} s (import {r['import_s']:.2f} s)"
                    + (f", jit {r['compilations']}" if "compilations" in r else "")
                    + (f", NaN layers {r['layers_with_nan']}" if r["layers_with_nan"] else ""))
                print(f"{dtype} {case:16s} {status}", flush=True)
    write(args.out, results)


def write(out: Path, results: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    device = next((r["device"] for r in results if "device" in r), "")
    Path(str(out) + ".json").write_text(json.dumps({"device": device, "results": results},
                                                   indent=1) + "\n")
    lines = [f"Cold start, ResNet-50 forward (23 layers, batch 32, NCHW), {device}. Seconds from "
             "process start to the last result (median over repeats); JIT = kernels compiled.",
             "", "| case | FP32 s | FP16 s | JIT FP32 | JIT FP16 |",
             "| --- | --- | --- | --- | --- |"]
    for case in CASES:
        row = [case]
        jits = []
        for dtype in ("FP32", "FP16"):
            rs = [r for r in results if r["case"] == case and r["dtype"] == dtype]
            ok = [r["seconds"] for r in rs if "seconds" in r]
            row.append(f"{statistics.median(ok):.2f}" if ok else ("error" if rs else "-"))
            js = [r["compilations"] for r in rs if "compilations" in r]
            jits.append(str(max(js)) if js else "-")
        if any(r["case"] == case for r in results):
            lines.append("| " + " | ".join(row + jits) + " |")
    Path(str(out) + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
