"""Converted models against PyTorch/cuDNN: forward latency, eager and CUDA-graph replayed.

ResNet-50 (He et al. 2015, torchvision's v1.5 layer list: stride on the 3x3 of a bottleneck)
and MobileNet-v2 (Sandler et al. 2018: inverted residuals with depthwise 3x3 convolutions),
defined here from their public layer lists (no weights downloaded: random initialisation
serves a latency and an agreement check). `--models` also takes Wide ResNet-50-2 and
MobileNet-v2 at width 1.4 (`wide_resnet50_2`, `mobilenet_v2_1.4`): networks the small-grid
rule was not fitted on (bench/split_in_model.py scores it on them). Each case (model, batch,
type, layout) runs in its own child process under a timeout, so a hang or a crash is recorded
and the run goes on:

- torch: the model as torch builds it (cuDNN; `cudnn.benchmark` off, TF32 as torch's default);
- miopenkernels: a copy with `miopenkernels.torch.convert`, after one warm-up forward (the
  solutions are found and their kernels loaded then, outside the timings);
- eager: median of `--repeats` forwards timed with CUDA events after 3 warm-up forwards, the
  two engines' forwards taken in turn (torch, ours, torch, ...) so that both see the same host:
  a host-bound forward moves with the machine's load, and timed one engine after the other a
  busy moment fell on one of them alone;
- graph: the forward captured once with `torch.cuda.graph`, median of `--repeats` replays;
- agreement: the largest difference between the two engines' outputs, relative to torch's
  largest output;
- host cost: microseconds per call of `F.conv2d` and of `miopenkernels.torch.conv2d` on the
  same tensors (2,000 calls synchronised at the end), recorded beside the models.

    python bench/torch_models.py --out bench/results/torch_op_h100.json

The results go under the JSON's `models` key (other keys of an existing file are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODELS = ("resnet50", "mobilenet_v2")
BATCHES = (1, 32)
TYPES = ("FP16", "FP32")
LAYOUTS = ("channels_last", "contiguous")
WARMUP = 3


def _torch() -> Any:
    import torch

    return torch


# ----------------------------------------------------------------------------- models
def resnet(blocks: tuple[int, ...] = (3, 4, 6, 3), width: int = 64, classes: int = 1000,
           expansion: int = 4, inner: int = 1) -> Any:
    """ResNet with bottleneck blocks; the defaults are ResNet-50's layer list (`inner` 2:
    Wide ResNet-50-2, whose bottlenecks are twice as wide inside)."""
    torch = _torch()
    nn = torch.nn

    class Bottleneck(nn.Module):  # type: ignore[misc]
        def __init__(self, inplanes: int, planes: int, stride: int) -> None:
            super().__init__()
            out, mid = planes * expansion, planes * inner
            self.conv1 = nn.Conv2d(inplanes, mid, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(mid)
            self.conv2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(mid)
            self.conv3 = nn.Conv2d(mid, out, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(out)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or inplanes != out:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False),
                                                nn.BatchNorm2d(out))

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            return self.relu(self.bn3(self.conv3(y)) + identity)

    layers: list[Any] = [nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                         nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    inplanes = width
    for stage, count in enumerate(blocks):
        planes = width * 2 ** stage
        for i in range(count):
            layers.append(Bottleneck(inplanes, planes, 2 if i == 0 and stage > 0 else 1))
            inplanes = planes * expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, classes)]
    return nn.Sequential(*layers)


def _divisible(v: float, divisor: int = 8) -> int:
    """MobileNet's channel rounding: a multiple of `divisor`, never 10% below `v`."""
    out = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


# (expansion t, channels c, repeats n, first stride s) of MobileNet-v2's bottlenecks.
MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(width_mult: float = 1.0, last_channel: int = 1280, classes: int = 1000,
                 settings: tuple[tuple[int, int, int, int], ...] = MOBILENET_V2) -> Any:
    """MobileNet-v2; the defaults are its published layer list."""
    torch = _torch()
    nn = torch.nn

    def conv_bn(cin: int, cout: int, kernel: int, stride: int, groups: int = 1,
                act: bool = True) -> list[Any]:
        out = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups,
                         bias=False), nn.BatchNorm2d(cout)]
        return out + [nn.ReLU6(inplace=True)] if act else out

    class InvertedResidual(nn.Module):  # type: ignore[misc]
        def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
            super().__init__()
            hidden = cin * t
            layers = conv_bn(cin, hidden, 1, 1) if t != 1 else []
            layers += conv_bn(hidden, hidden, 3, stride, groups=hidden)
            layers += conv_bn(hidden, cout, 1, 1, act=False)
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.conv(x) if self.residual else self.conv(x)

    cin = _divisible(32 * width_mult)
    layers = conv_bn(3, cin, 3, 2)
    for t, c, n, s in settings:
        cout = _divisible(c * width_mult)
        for i in range(n):
            layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
            cin = cout
    layers += conv_bn(cin, last_channel, 1, 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
               nn.Linear(last_channel, classes)]
    return nn.Sequential(*layers)


BUILDERS = {"resnet50": resnet, "mobilenet_v2": mobilenet_v2,
            # Further networks, not among the defaults: checks of rules fitted on the two above.
            "wide_resnet50_2": lambda: resnet(inner=2),
            "mobilenet_v2_1.4": lambda: mobilenet_v2(width_mult=1.4, last_channel=1792)}


# ----------------------------------------------------------------------------- timing
def _event_ms(fn: Any, repeats: int) -> float:
    """Median CUDA-event milliseconds of `fn` after WARMUP untimed calls: bench/kernels.py's
    timing, so both benches time a call the same way."""
    sys.path.insert(0, str(HERE))
    from kernels import _median_ms

    return float(_median_ms(fn, repeats, WARMUP))


def _interleaved_ms(fns: list[Any], repeats: int) -> list[float]:
    """Median CUDA-event milliseconds of each of `fns` after WARMUP untimed calls of each, the
    calls taken in turn (fns[0], fns[1], fns[0], ...)."""
    import torch

    for fn in fns:
        for _ in range(WARMUP):
            fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, samples in zip(fns, times, strict=True):
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    return [float(statistics.median(samples)) for samples in times]


def _graph(torch: Any, fn: Any) -> tuple[Any, Any]:
    """(graph, its output) of `fn`, captured after warm-ups on a side stream (torch's recipe)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def model_pair(model: str, batch: int, type_name: str, layout: str
               ) -> tuple[Any, Any, Any, Any]:
    """(torch's model, a converted copy, an input, the convert report) of one case, on the
    GPU in the case's type and memory format, seeded."""
    import copy

    torch = _torch()
    import miopenkernels.torch as mkt

    dtype = {"FP16": torch.float16, "FP32": torch.float32}[type_name]
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    torch.manual_seed(0)
    base = BUILDERS[model]().eval().to("cuda", dtype).to(memory_format=fmt)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype).contiguous(
        memory_format=fmt)
    ours = copy.deepcopy(base)
    return base, ours, x, mkt.convert(ours)


def one_case(model: str, batch: int, type_name: str, layout: str, repeats: int) -> dict[str, Any]:
    """Both engines on one (model, batch, type, layout); errors recorded per engine."""
    torch = _torch()
    base, ours, x, report = model_pair(model, batch, type_name, layout)
    out: dict[str, Any] = {"model": model, "batch": batch, "type": type_name, "layout": layout,
                           "converted": len(report.converted),
                           "left": [list(item) for item in report.left]}
    outputs = {}
    engines = (("torch", base), ("miopenkernels", ours))
    recs: dict[str, dict[str, Any]] = {engine: {} for engine, _ in engines}
    for engine, net in engines:
        try:
            with torch.inference_mode():
                t0 = time.perf_counter()
                outputs[engine] = net(x).float()
                torch.cuda.synchronize()
                recs[engine]["first_forward_s"] = round(time.perf_counter() - t0, 4)
        except Exception as exc:  # recorded: the run goes on with the next case
            recs[engine]["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    running = [(engine, net) for engine, net in engines if "error" not in recs[engine]]
    try:
        with torch.inference_mode():
            eager = _interleaved_ms([lambda net=net: net(x) for _, net in running], repeats)
        for (engine, _), ms in zip(running, eager, strict=True):
            recs[engine]["eager_ms"] = round(ms, 4)
    except Exception as exc:  # recorded against both: the forwards ran in turn
        for engine, _ in running:
            recs[engine]["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    for engine, net in engines:
        if "error" in recs[engine]:
            continue
        try:
            with torch.no_grad():
                graph, _ = _graph(torch, lambda net=net: net(x))
                recs[engine]["graph_ms"] = round(_event_ms(graph.replay, repeats), 4)
        except Exception as exc:  # recorded: the run goes on with the next case
            recs[engine]["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    out.update(recs)
    if len(outputs) == 2:
        ref = outputs["torch"]
        scale = float(ref.abs().max()) or 1.0
        out["max_rel_diff"] = float((outputs["miopenkernels"] - ref).abs().max()) / scale
    return out


def host_cost(calls: int = 2000) -> dict[str, Any]:
    """Host microseconds per call of F.conv2d and of miopenkernels.torch.conv2d on the same
    tensors (a 7x7 1x1 FP16 layer at batch 1, NCHW): `calls` calls, synchronised at the end,
    best of 5 rounds, after a warm-up that finds the solution."""
    torch = _torch()
    import miopenkernels.torch as mkt
    import torch.nn.functional as F

    x = torch.randn(1, 512, 7, 7, device="cuda", dtype=torch.float16)
    w = torch.randn(2048, 512, 1, 1, device="cuda", dtype=torch.float16)
    out: dict[str, Any] = {"layer": "n1 c512 k2048 7x7 1x1 FP16 NCHW", "calls": calls}
    with torch.inference_mode():
        for name, fn in (("torch_conv2d_us", F.conv2d), ("torch_op_us", mkt.conv2d)):
            for _ in range(20):
                fn(x, w)
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn(x, w)
                torch.cuda.synchronize()
                best = min(best, (time.perf_counter() - t0) / calls * 1e6)
            out[name] = round(best, 2)
    out["torch_op_over_torch"] = round(out["torch_op_us"] / out["torch_conv2d_us"], 3)
    return out


# ----------------------------------------------------------------------------- run
def environment() -> dict[str, Any]:
    """Device, driver and versions of this run."""
    sys.path.insert(0, str(HERE))
    from _machine import cpu_model, nvidia_driver

    torch = _torch()
    import miopenkernels

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "miopenkernels": miopenkernels.__version__, "cpu": cpu_model(),
                           "driver": nvidia_driver(), "date": time.strftime("%Y-%m-%d")}
    if torch.cuda.is_available():
        env.update(device=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version(),
                   allow_tf32=torch.backends.cudnn.allow_tf32)
    with contextlib.suppress(OSError):
        env["tree"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                                     capture_output=True, text=True, check=False).stdout.strip()
    return env


def _child(case: tuple[str, int, str, str] | str, repeats: int, timeout: float
           ) -> dict[str, Any]:
    """One case in a child process, under `timeout`; a failure is recorded, not raised."""
    if isinstance(case, str):
        cmd = [sys.executable, __file__, "--case", case]
        base: dict[str, Any] = {"case": case}
    else:
        model, batch, type_name, layout = case
        cmd = [sys.executable, __file__, "--case", f"{model},{batch},{type_name},{layout}",
               "--repeats", str(repeats)]
        base = {"model": model, "batch": batch, "type": type_name, "layout": layout}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {**base, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {**base, "error": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _cell(d: dict[str, Any], k: str) -> str:
    return f"{d[k]:.3f}" if k in d else "-"


def _ratio(ours: dict[str, Any], theirs: dict[str, Any], k: str) -> str:
    return f"{ours[k] / theirs[k]:.2f}" if k in ours and theirs.get(k) else "-"


def table(rows: list[dict[str, Any]]) -> str:
    """The run as a text table: ms per forward and our time over torch's."""
    head = (f"{'model':13} {'b':>3} {'type':5} {'layout':13} {'torch eager':>11} "
            f"{'ours eager':>10} {'x':>5} {'torch graph':>11} {'ours graph':>10} {'x':>5}")
    lines = [head]
    for r in rows:
        t, o = r.get("torch", {}), r.get("miopenkernels", {})
        lines.append(f"{r['model']:13} {r['batch']:>3} {r['type']:5} {r['layout']:13} "
                     f"{_cell(t, 'eager_ms'):>11} {_cell(o, 'eager_ms'):>10} "
                     f"{_ratio(o, t, 'eager_ms'):>5} {_cell(t, 'graph_ms'):>11} "
                     f"{_cell(o, 'graph_ms'):>10} {_ratio(o, t, 'graph_ms'):>5}")
        errors = [("case", r["error"])] if "error" in r else [
            (engine, r[engine]["error"]) for engine in ("torch", "miopenkernels")
            if "error" in r.get(engine, {})]
        lines += [f"    {who}: {err.splitlines()[-1][:100]}" for who, err in errors]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "torch_op_h100.json")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    ap.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a child process
    args = ap.parse_args()
    if args.case == "host":
        print(json.dumps(host_cost()))
        return 0
    if args.case:
        model, batch, type_name, layout = args.case.split(",")
        print(json.dumps(one_case(model, int(batch), type_name, layout, args.repeats)))
        return 0
    if not _torch().cuda.is_available():
        print("error: torch sees no CUDA GPU (a CPU build, or no device): the benchmark "
              "times GPU forwards; run it on the GPU machine", file=sys.stderr)
        return 6
    for name in args.models.split(","):
        if name not in BUILDERS:
            ap.error(f"unknown model {name!r}; known: {', '.join(BUILDERS)}")
    cases = [(m, int(b), t, lay) for m in args.models.split(",")
             for b in args.batches.split(",") for t in args.types.split(",")
             for lay in args.layouts.split(",")]
    host = _child("host", args.repeats, args.timeout)
    print(json.dumps(host), flush=True)
    rows = []
    for case in cases:
        rows.append(_child(case, args.repeats, args.timeout))
        print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    result: dict[str, Any] = {}
    if args.out.exists():
        result = json.loads(args.out.read_text())
    result["models"] = {"environment": environment(), "repeats": args.repeats,
                        "host_cost": host, "cases": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
