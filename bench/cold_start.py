"""Cold start: a fresh process computes the 23 distinct forward convolutions of ResNet-50.

Per case, the phases of one fresh process, each timed apart (seconds):
- interpreter: from the parent's spawn to the child's first line;
- import: the library (`miopenkernels.handle`) or torch;
- context: the GPU context (the backend's device set-up, or torch's CUDA initialisation);
- setup: the Handle (target, databases) after the context; nothing for torch;
- layers: the first call of each layer in turn (find and run, or conv2d), to the last result
  synchronised; `per_layer_ms` holds each first call;
- steady: a second pass over the layers (every kernel loaded, every choice made).
Inputs are made on the device outside every timed region, the same way for every case (one
buffer set to a constant byte pattern: finite in FP32 and FP16). `total` is interpreter +
import + context + setup + layers: the process to the last result, inputs left out.
Cases:
- installed: the sm90 kernel package's system kdb, FindDb and PerfDb (MIOPEN_SYSTEM_DB_PATH),
  empty user databases and kernel cache;
- nothing: no system databases, empty user side: what is missing is JIT-compiled;
- warm_user: no system databases, the user FindDb and kernel cache that `nothing` left;
- torch_cudnn_off / torch_cudnn_on: the same layers through PyTorch (cuDNN) with
  torch.backends.cudnn.benchmark off / on (FP32 without TF32).
Batch 32, NCHW, FP32 and FP16 (one process per case and type). Prints a table, writes JSON and a
markdown table.

    python bench/cold_start.py --system-db DIR --out bench/results/cold_start_h100
"""

from __future__ import annotations

import time

T_START = time.time()  # noqa: E402 - before any import, for the child's own timeline

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = ("installed", "nothing", "warm_user", "torch_cudnn_off", "torch_cudnn_on")
PHASES = ("interpreter_s", "import_s", "context_s", "setup_s", "layers_s", "steady_s")


# ----------------------------------------------------------------------------- children
PATTERN = 0x3C  # FP32 0x3C3C3C3C = 0.0115, FP16 0x3C3C = 1.06: finite sums in every layer


def child_miopenkernels(dtype: str) -> dict:
    sys.path.insert(0, str(HERE))
    t_first = time.time()
    from miopenkernels.backends import open_backend
    from miopenkernels.handle import Handle
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    t_import = time.time()
    be = open_backend()
    t_context = time.time()
    handle = Handle(backend=be)
    t_setup = time.time()
    # Inputs (untimed): one device buffer for x and w, one output per layer.
    from _layers import resnet50_layers

    layers = resnet50_layers(dtype)
    size = TYPE_BYTES[dtype]
    xmax = max(math.prod(p.in_shape) for p in layers) * size
    wmax = max(math.prod(p.wei_shape) for p in layers) * size
    pool = be.alloc(xmax + wmax)
    be.memset(pool, PATTERN)
    outs = []
    for p in layers:
        ybuf = be.alloc(math.prod(p.out_shape) * size)
        be.memset(ybuf, 0xFF)  # NaN: every element must be written
        outs.append((p, ybuf))
    be.synchronize()
    t_inputs = time.time()
    args = []
    for p, ybuf in outs:
        x = DeviceTensor(pool.ptr, math.prod(p.in_shape) * size, dtype, p.in_shape)
        w = DeviceTensor(pool.ptr + xmax, math.prod(p.wei_shape) * size, dtype, p.wei_shape)
        y = DeviceTensor(ybuf.ptr, ybuf.nbytes, dtype, p.out_shape, buffer=ybuf)
        args.append((p, x, w, y))
    per_layer = []
    solvers = []
    for p, x, w, y in args:
        t0 = time.perf_counter()
        sols = handle.find(p, x, w, y)
        if sols[0].source != "find":
            handle.run(p, sols[0], x, w, y)
        per_layer.append((time.perf_counter() - t0) * 1e3)
        solvers.append(f"{sols[0].solver}({sols[0].source})")
    be.synchronize()
    t_layers = time.time()
    for p, x, w, y in args:
        handle.run(p, handle.find(p, x, w, y)[0], x, w, y)
    be.synchronize()
    t_steady = time.time()
    import numpy as np

    nan_layers = 0
    for p, ybuf in outs:
        host_y = np.empty(p.out_shape, np.float16 if dtype == "FP16" else np.float32)
        be.copy_out(host_y, ybuf)
        nan_layers += int(not np.isfinite(host_y).all())
    return {"t_start": T_START, "t_first": t_first, "import_s": t_import - t_first,
            "context_s": t_context - t_import, "setup_s": t_setup - t_context,
            "inputs_s": t_inputs - t_setup, "layers_s": t_layers - t_inputs,
            "steady_s": t_steady - t_layers, "per_layer_ms": per_layer,
            "kernels": handle.stats.to_dict(), "compilations": handle.compilations,
            "solvers": solvers, "layers_with_nan": nan_layers, "device": be.device_name}


def child_torch(dtype: str, benchmark: bool) -> dict:
    sys.path.insert(0, str(HERE))
    t_first = time.time()
    import torch

    t_import = time.time()
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t_context = time.time()
    torch.backends.cudnn.benchmark = benchmark
    torch.backends.cudnn.allow_tf32 = False
    from _layers import resnet50_layers

    layers = resnet50_layers(dtype)
    tdt = torch.float16 if dtype == "FP16" else torch.float32
    xmax = max(math.prod(p.in_shape) for p in layers)
    wmax = max(math.prod(p.wei_shape) for p in layers)
    pool = torch.empty((xmax + wmax) * (2 if dtype == "FP16" else 4), dtype=torch.uint8,
                       device="cuda").fill_(PATTERN).view(tdt)
    args = [(p, pool[: math.prod(p.in_shape)].view(p.in_shape),
             pool[xmax: xmax + math.prod(p.wei_shape)].view(p.wei_shape)) for p in layers]
    torch.cuda.synchronize()
    t_inputs = time.time()
    outs = []
    per_layer = []
    for p, x, w in args:
        t0 = time.perf_counter()
        outs.append(torch.nn.functional.conv2d(x, w, None, p.stride, p.pad, p.dilation,
                                               p.groups))
        per_layer.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    t_layers = time.time()
    for p, x, w in args:
        torch.nn.functional.conv2d(x, w, None, p.stride, p.pad, p.dilation, p.groups)
    torch.cuda.synchronize()
    t_steady = time.time()
    nan_layers = sum(int(not torch.isfinite(y).all()) for y in outs)
    return {"t_start": T_START, "t_first": t_first, "import_s": t_import - t_first,
            "context_s": t_context - t_import, "setup_s": 0.0,
            "inputs_s": t_inputs - t_context, "layers_s": t_layers - t_inputs,
            "steady_s": t_steady - t_layers, "per_layer_ms": per_layer,
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
    data["interpreter_s"] = data["t_first"] - t0
    data["seconds"] = sum(data[k] for k in PHASES[:-1])
    data.update(case=case, dtype=dtype)
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
                    f"{r['seconds']:.3f} s ("
                    + ", ".join(f"{k[:-2]} {r[k]:.3f}" for k in PHASES) + ")"
                    + (f", jit {r['compilations']}" if "compilations" in r else "")
                    + (f", NaN layers {r['layers_with_nan']}" if r["layers_with_nan"] else ""))
                print(f"{dtype} {case:16s} {status}", flush=True)
    write(args.out, results)


def write(out: Path, results: list[dict]) -> None:
    import miopenkernels

    out.parent.mkdir(parents=True, exist_ok=True)
    first = next((r for r in results if "device" in r), {})
    torch_r = next((r for r in results if "torch" in r), {})
    meta = {"device": first.get("device", ""), "torch": torch_r.get("torch"),
            "cudnn": torch_r.get("cudnn"), "miopenkernels": miopenkernels.__version__,
            "python": sys.version.split()[0], "phases": PHASES}
    Path(str(out) + ".json").write_text(json.dumps({**meta, "results": results}, indent=1)
                                        + "\n")
    lines = [f"Cold start, ResNet-50 forward (23 layers, batch 32, NCHW), {meta['device']}. "
             "Seconds per phase (median over repeats); total = process start to the last "
             "result, inputs (made on the device, untimed) left out; JIT = kernels compiled.",
             "", "| case | type | total | interpreter | import | context | setup | layers | "
             "steady | JIT |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case in CASES:
        for dtype in ("FP32", "FP16"):
            rs = [r for r in results if r["case"] == case and r["dtype"] == dtype]
            ok = [r for r in rs if "seconds" in r]
            if not rs:
                continue
            if not ok:
                lines.append(f"| {case} | {dtype} | error | | | | | | | |")
                continue
            med = {k: statistics.median(r[k] for r in ok) for k in ("seconds", *PHASES)}
            jit = max((r.get("compilations", 0) for r in ok), default=0)
            lines.append(f"| {case} | {dtype} | {med['seconds']:.3f} | "
                         + " | ".join(f"{med[k]:.3f}" for k in PHASES)
                         + f" | {jit if 'compilations' in ok[0] else '-'} |")
    Path(str(out) + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
