"""The 23 distinct forward convolutions of ResNet-50 (batch 32, NCHW), FP32 and FP16.

Taken from the shipped resnet50 manifest (its forward NCHW FP32 problems), with batch 32.
`python bench/_layers.py` writes them as a manifest of MIOpenDriver lines for tune and build.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from miopenkernels.problem import ConvProblem

BATCH = 32
MANIFEST = Path(__file__).with_name("resnet50_b32.txt")


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


if __name__ == "__main__":
    out = write_manifest(Path(sys.argv[1]) if len(sys.argv) > 1 else MANIFEST)
    print(out)
