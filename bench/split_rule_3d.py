"""The 3-D implicit GEMM's small-grid split rule read off timings (no GPU): runs of
bench/solver_alternatives.py whose entries are 3-D solvers at their defaults and at
`@split=1`, `@split*2`, `@split/2` (bench/gpu_conv3d.sh's split_f and split_b steps).

Per solver, the geometric mean over the rows both ran of each variant's GPU time over the
defaults' (`variants`); and where the defaults split, twice their split over them grouped by
what the doubling would do to the rule's two limits (`doubled`): whether the doubled launch
stays within SMALL_WAVES waves of the target's CUs, and how many BLOCK_K steps each part
keeps (2-3, 4-7, 8 or more), so that the rule's limits can be set from them. The relaid
solvers are left out of `doubled` (their copies dominate their time).

    python bench/split_rule_3d.py RUN.json [RUN.json ...] [--json]

Exit codes: 0; 2 a file unreadable or not such a run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

_MAX_BYTES = 64 << 20
VARIANTS = ("@split=1", "@split*2", "@split/2")


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _steps_class(steps: int) -> str:
    return "under 2" if steps < 2 else "2-3" if steps < 4 else "4-7" if steps < 8 else "8+"


def _doubling(name: str, key: str, params: list[int], target: Any) -> tuple[bool, str] | None:
    """(within SMALL_WAVES waves, steps a part) of twice the split the run's defaults had
    (`params`, as the run recorded them), or None where they did not split."""
    from miopenkernels.kernels import conv_triton_3d_spec as spec
    from miopenkernels.kernels import conv_triton_3d_split_spec as split_spec
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.solvers.triton_3d import _view

    split = int(params[4])
    if split <= 1:
        return None
    config = get_solver(name)._config(tuple(params))
    view, sizes, _, _ = _view(ConvProblem.from_key(key))
    gx, gy, gz = spec.grid(view.direction, sizes, {**config, "SPLIT_K": 1})
    taps = sizes["T"] * sizes["R"] * sizes["S"]
    if view.direction == "B":
        taps = max(1, taps // (sizes["stride_d"] * sizes["stride_h"] * sizes["stride_w"]))
    steps = taps * spec.cdiv(spec.gemm_dims(view.direction, sizes)[2], config["BLOCK_K"])
    within = gx * gy * gz * split * 2 <= split_spec.SMALL_WAVES * target.cu
    return within, _steps_class(steps // (split * 2))


def summarise(paths: list[Path]) -> dict[str, Any]:
    from miopenkernels.target import Target

    target = Target("sm90", 132)
    variants: dict[str, dict[str, list[float]]] = {}
    doubled: dict[str, list[float]] = {}
    for path in paths:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"{path}: larger than {_MAX_BYTES >> 20} MB")
        data = json.loads(path.read_text())
        for row in data["rows"]:
            timed = {n: float(e["gpu_ms"]) for n, e in row["solvers"].items() if e.get("gpu_ms")}
            params = {n: e.get("params") for n, e in row["solvers"].items()}
            for name, ms in timed.items():
                if "@" in name:
                    continue
                for v in VARIANTS:
                    if name + v in timed:
                        variants.setdefault(name, {}).setdefault(v, []).append(
                            timed[name + v] / ms)
                if name + "@split*2" in timed and "Via" not in name and "Padded" not in name:
                    how = _doubling(name, str(row["key"]), list(params[name]), target)
                    if how is not None:
                        label = f"{'within' if how[0] else 'past'} the waves, {how[1]}"
                        doubled.setdefault(label, []).append(timed[name + "@split*2"] / ms)
    return {"variants": {n: {v: {"rows": len(r), "over_defaults": round(_geomean(r), 3)}
                             for v, r in sorted(vs.items())}
                         for n, vs in sorted(variants.items())},
            "doubled": {k: {"rows": len(r), "over_defaults": round(_geomean(r), 3)}
                        for k, r in sorted(doubled.items())}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    try:
        out = summarise(args.runs)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"error: not a bench/solver_alternatives.py run of the split variants "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    for name, vs in out["variants"].items():
        print(name + ": " + ", ".join(f"{v} {r['over_defaults']:.2f} ({r['rows']})"
                                      for v, r in vs.items()))
    for label, r in out["doubled"].items():
        print(f"twice the split, {label} steps a part: {r['over_defaults']:.3f} of the "
              f"defaults' time over {r['rows']} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
