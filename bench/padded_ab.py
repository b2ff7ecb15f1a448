"""The padded implicit GEMM solvers against what served odd channel counts before them, on the
zoo's layers that have such counts (device machine).

The layers are those of the zoo and its held-out networks (bench/zoo.py) with one group, 2-D,
and an input channel or filter count that is not a multiple of 8 (RetinaNet's heads of 819 and
36 filters, YOLO's 255, RegNet's and EfficientNet's odd squeeze layers, the 3-channel stems and
outputs). `run` times one arm with bench/zoo.py's method (find's pick against cuDNN, GPU time
queued behind a sleep kernel, wall time per call, results checked): `--arm padded` as the
package ships (ConvTritonImplicitGemmPadded{Fwd,Bwd,Wrw} where they claim a problem),
`--arm unpadded` with those solvers withdrawn, which leaves each problem to what served it
before (the generic implicit GEMM objects, the Via or portable solvers). `compare` pairs the two
arms' rows (same layer, case and batch) and writes, per case, the geomean of padded's GPU time
over unpadded's and each arm against cuDNN.

    python bench/padded_ab.py run --arm padded --out OUT/padded [zoo options]
    python bench/padded_ab.py run --arm unpadded --out OUT/unpadded [zoo options]
    python bench/padded_ab.py compare OUT/padded.json OUT/unpadded.json \\
        --out bench/results/padded_h200
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ZOO_DEFAULTS = ["--types", "FP16", "--layouts", "NHWC", "--batches", "32", "--held-out"]


def odd(layer: Any) -> bool:
    """A 2-D layer of one group with a channel or filter count that is not a multiple of 8."""
    p = layer.problem
    return len(p.in_spatial) == 2 and p.groups == 1 and bool(p.c % 8 or p.k % 8)


def run(arm: str, zoo_args: list[str]) -> int:
    import zoo

    loader = zoo.load_layers
    zoo.load_layers = lambda *a, **k: [la for la in loader(*a, **k) if odd(la)]
    if arm == "unpadded":
        from miopenkernels.solvers import triton_padded

        for solver in triton_padded.PADDED_SOLVERS:
            solver.is_applicable = lambda problem, target: False  # type: ignore[method-assign]
    return int(zoo.main(ZOO_DEFAULTS + zoo_args))


def main(argv: list[str] | None = None) -> int:
    from align8_backward_ab import ab_main

    return ab_main(argv, __doc__, ("padded", "unpadded"), run, "padded_ab",
                   "padded against unpadded odd-channel layers")


if __name__ == "__main__":
    sys.exit(main())
