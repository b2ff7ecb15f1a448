"""The 23 distinct forward convolutions of ResNet-50 (batch 32, NCHW), FP32 and FP16.

Taken from the shipped resnet50 manifest (its forward NCHW FP32 problems), with batch 32.
`python bench/_layers.py` writes them as a manifest of MIOpenDriver lines for tune and build
(bench/resnet50_b32.txt); `python bench/_layers.py --all [--cases=FP32-B-NCHW,..] [FILE]`
writes every case (or those named) bench/kernels.py
measures at batch 32 (FP32, FP16 and BF16; forward, backward data and backward weights; NCHW
and NHWC: 414 problems, bench/resnet50_b32_all.txt), which `miopenkernels tune --fp32-math both`
also tunes under TF32.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from miopenkernels.problem import ConvProblem

BATCH = 32
MANIFEST = Path(__file__).with_name("resnet50_b32.txt")
MANIFEST_ALL = Path(__file__).with_name("resnet50_b32_all.txt")


def resnet50_layers(dtype: str = "FP32", batch: int = BATCH) -> list[ConvProblem]:
    from miopenkernels.builder.manifest import load_manifest

    seen: dict[ConvProblem, None] = {}
    for p in load_manifest("resnet50"):
        if p.direction == "F" and p.in_layout == "NCHW" and p.in_type == "FP32":
            seen.setdefault(replace(p, n=batch, in_type=dtype, wei_type=dtype, out_type=dtype))
    return list(seen)


def write_manifest(path: Path = MANIFEST) -> Path:
    from miopenkernels.driver import to_driver_line

    lines = ["# ResNet-50 forward convolutions, batch 32, NCHW, FP32 and FP16 (bench/_layers.py)"]
    for dtype in ("FP32", "FP16"):
        lines += [to_driver_line(p) for p in resnet50_layers(dtype)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_all_manifest(path: Path = MANIFEST_ALL, cases: set[str] | None = None) -> Path:
    """Every case at batch 32, or those of `cases` (`FP32-B-NCHW`; a TF32 case is its FP32
    problems, tuned under TF32 by `--fp32-math`)."""
    from miopenkernels.driver import to_driver_line

    lines = ["# ResNet-50 convolutions, batch 32: FP32, FP16 and BF16; forward, backward data and",
             "# backward weights; NCHW and NHWC (bench/_layers.py --all)"]
    storage = {c.replace("TF32-", "FP32-") for c in cases} if cases else None
    for dtype in ("FP32", "FP16", "BF16"):
        for layout in ("NCHW", "NHWC"):
            for direction in ("F", "B", "W"):
                if storage is not None and f"{dtype}-{direction}-{layout}" not in storage:
                    continue
                lines += [to_driver_line(replace(p, direction=direction, in_layout=layout,
                                                 wei_layout=layout, out_layout=layout))
                          for p in resnet50_layers(dtype)]
    path.write_text("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    cases = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--cases=")), "")
    args = [a for a in sys.argv[1:] if a != "--all" and not a.startswith("--cases=")]
    if "--all" in sys.argv[1:]:
        out = write_all_manifest(Path(args[0]) if args else MANIFEST_ALL,
                                 set(cases.split(",")) if cases else None)
    else:
        out = write_manifest(Path(args[0]) if args else MANIFEST)
    print(out)
