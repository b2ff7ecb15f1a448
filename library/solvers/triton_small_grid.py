"""The small-grid forward rule of the Triton implicit GEMM.

At batch 1 most layers of a classification network are small GEMMs: the case's usual tile
(128x128, fitted at batch 32) launches a few programs on a GPU of 132 SMs, and each runs the
whole reduction alone. There the forward takes the tuned table's `small_grid` rule for its case
instead: a narrow tile (64x32) with its reduction split where that saves more serial steps
than the reduce launch costs (`spec.small_grid_split`: the rule's `reduce_steps`, and its
`programs_per_sm`, the programs an SM runs at once, which set a split's waves). Fitted by
bench/small_grid_fit.py on ResNet-50 and MobileNet-v2 at batch 1: the tile on layers timed
alone (bench/serial_split.py, H100), the split's costs on the same layers inside the
graph-replayed models, whose weights come from memory once per forward
(bench/split_in_model.py); scored on other networks it was not fitted on: the numbers are in
bench/results/small_grid_fit.json.

Where the rule applies, the implicit GEMM claims first place and its defaults rank alone, and
the 1x1 GEMM and the Via solvers, which were measured at batch 32, step aside.
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from .triton_common import MATH_TYPE, problem_view, spec_module, spec_sizes, target_kind

__all__ = ["small_grid_config", "small_grid_configs"]

#: Fewer channels or filters than this go to the few-channel kernels or were not measured.
MIN_CHANNELS = 16
#: The largest batch the rule is for: fitted at batch 1, checked at 8 (bench/serial_split.py
#: --batch 8); at batch 32 the tables of the Via and 1x1 GEMM solvers were measured instead.
MAX_BATCH = 8


@lru_cache(maxsize=4096)
def small_grid_config(problem: ConvProblem, target: Target, math: str
                      ) -> dict[str, int] | None:
    """The small-grid tile with its split for a forward problem of the implicit GEMM in `math`
    ('ieee' for FP16/BF16, 'tf32' for FP32 under TF32), or None where the rule does not
    apply: not forward, grouped, few channels, over MAX_BATCH, no rule for the case on the
    target's kind, or the case's usual tile launches at least half as many programs as the
    target has CUs."""
    p = problem
    if p.key_direction != "F" or p.groups != 1 or min(p.c, p.k) < MIN_CHANNELS or \
            p.n > MAX_BATCH or \
            len(p.in_spatial) != 2 or p.in_type != p.wei_type or p.in_type != p.out_type:
        return None
    if not ((math == "ieee" and p.in_type != "FP32") or (math == "tf32" and p.in_type == "FP32")):
        return None
    kind = target_kind(target.arch)
    spec = spec_module()
    if kind is None or not hasattr(spec, "small_grid_rule"):
        return None
    view, _, kernel, cl = problem_view(p)
    if kernel != "conv2d_fwd":
        return None
    case = f"{MATH_TYPE.get(math, p.in_type)}-F-{'NHWC' if cl else 'NCHW'}"
    rule = spec.small_grid_rule(kind, case)
    usual = spec.usual_config(kind, case, kernel)
    if rule is None or usual is None:
        return None
    sizes = spec_sizes(view)
    gx, gy, gz = spec.grid(kernel, sizes, {**usual, "SPLIT_K": 1})
    if gx * gy * gz >= target.cu // 2:
        return None
    config, reduce_steps, per_sm = rule
    gx, gy, gz = spec.grid(kernel, sizes, {**config, "SPLIT_K": 1})
    split = spec.small_grid_split(gx * gy * gz, spec.reduction_steps(kernel, sizes, config),
                                  target.cu, reduce_steps, spec.MAX_SPLIT.get(kernel, 16),
                                  per_sm)
    config = {**config, "SPLIT_K": int(split)}
    return config if spec.is_legal(config, p.in_type, kind, kernel) else None


def small_grid_configs(kind: str, data_type: str, math: str, channels_last: bool
                       ) -> list[dict[str, int]]:
    """Every configuration the rule of a case may choose on a kind (its tile at each legal
    split up to the forward's MAX_SPLIT): the objects a package ships for it."""
    spec = spec_module()
    case = f"{MATH_TYPE.get(math, data_type)}-F-{'NHWC' if channels_last else 'NCHW'}"
    rule = spec.small_grid_rule(kind, case) if hasattr(spec, "small_grid_rule") else None
    if rule is None:
        return []
    most = spec.MAX_SPLIT.get("conv2d_fwd", 16)
    configs = ({**rule[0], "SPLIT_K": k} for k in spec.TARGET_KINDS[kind]["SPLIT_K"]
               if k <= most)
    return [c for c in configs if spec.is_legal(c, data_type, kind, "conv2d_fwd")]
