"""The depthwise objects that assume pairs of channels or multiples of 4 (FP32), against the
unaligned objects they replaced, on the zoo's layers that take them (device machine).

The layers are the depthwise ones (groups = channels, 2-D and 3-D) of the zoo and its
held-out networks (bench/zoo.py) whose channels are even but not a multiple of 8
(ShuffleNet-v2's 58 and 116, X3D's 54 and 108), or a multiple of 4 but not of 16 (MobileNet's
72, 120, 184, 200, ...). Channels-last, they take an object of
`conv_triton_depthwise_spec.alignment`: FP32 assuming multiples of 4 (16-byte vectors), a
3x3 one assuming pairs (`PAIR_FILTERS`); before, every such layer took the unaligned
object, which loads channels one at a time. `run` times one arm with bench/zoo.py's method
(find's pick against cuDNN, GPU time queued behind a sleep kernel, wall time per call,
results checked): `--arm aligned` as the package ships, `--arm unaligned` with the FP32
objects assuming 16 and no pair objects, as before (objects the package lacks compile on
first use, outside the timing; the JSON's `compiles` counts them). `compare` pairs the two
arms' rows (same layer, case and batch): per case, the geomean of aligned's GPU time over
unaligned's and each arm against cuDNN.

    python bench/depthwise_align_ab.py run --arm aligned --out OUT/dwa_aligned [zoo options]
    python bench/depthwise_align_ab.py run --arm unaligned --out OUT/dwa_unaligned [zoo options]
    python bench/depthwise_align_ab.py compare OUT/dwa_aligned.json OUT/dwa_unaligned.json \\
        --out bench/results/depthwise_align_h200
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from align8_backward_ab import ab_main  # noqa: E402

#: Channels-last: NHWC, which bench/zoo.py runs as NDHWC on the 3-D layers.
ZOO_DEFAULTS = ["--types", "FP16,BF16,FP32", "--directions", "F,B,W", "--layouts", "NHWC",
                "--batches", "32", "--held-out"]


def newly_aligned(layer: Any) -> bool:
    """A depthwise layer whose channels are even and not a multiple of 8, or a multiple of 4
    and not of 16: an object assuming pairs or fours now serves it in some type."""
    p = layer.problem
    depthwise = p.groups > 1 and p.groups == p.c == p.k
    return depthwise and ((p.c % 2 == 0 and p.c % 8) or (p.c % 4 == 0 and p.c % 16 != 0))


def unalign() -> None:
    """The objects as before: FP32 aligned ones assume multiples of 16, no pair objects."""
    from miopenkernels.kernels import conv_triton_depthwise3d_spec as spec3
    from miopenkernels.kernels import conv_triton_depthwise_spec as spec
    from miopenkernels.kernels.conv_triton_spec import ELEMENT_BYTES

    def sixteen_for_fp32(dtype: str | None) -> int:
        return 8 if dtype is not None and ELEMENT_BYTES.get(dtype) == 2 else 16

    for module in (spec, spec3):
        module.PAIR_FILTERS = ()
        module.align_divisor = sixteen_for_fp32


def run(arm: str, zoo_args: list[str]) -> int:
    import zoo

    loader = zoo.load_layers
    zoo.load_layers = lambda *a, **k: [la for la in loader(*a, **k) if newly_aligned(la)]
    if arm == "unaligned":
        unalign()
    return int(zoo.main(ZOO_DEFAULTS + zoo_args))


def main(argv: list[str] | None = None) -> int:
    return ab_main(argv, __doc__, ("aligned", "unaligned"), run, "depthwise_align_ab",
                   "pair- and four-aligned against unaligned depthwise objects")


if __name__ == "__main__":
    sys.exit(main())
