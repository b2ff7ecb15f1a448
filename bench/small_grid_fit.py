"""The small-grid forward rule: which tile and split a forward problem takes where the case's
usual tile would leave most of the GPU idle, fitted on bench/serial_split.py's timings.

A forward problem is on a small grid where the case's usual tile (the tuned table's `defaults`)
launches fewer programs than half the target's CUs: batch 1 of most layers of a classification
network. There, one tile per case with the reduction split by `conv_triton_spec.small_grid_split`
(the split whose steps per part times waves, plus `reduce_steps` for a split's reduce launch,
cost least) is fitted: the tile and `reduce_steps` that give the lowest geomean of time / the
best time tried over the rows of the fit results (`--fit`), among rules whose every pick was
timed. Each `--check` file (other networks, another batch; layers the fit saw are left out) is
then scored with the chosen rule, against cuDNN and against the best tried.

Layers timed alone keep their weights in L2; inside a model they come from memory once per
forward, and a split pays off sooner. `--in-model` takes bench/split_in_model.py's results (each
small-grid layer of whole graph-replayed models, at each split) and refits, for each case it
holds, `reduce_steps` and `programs_per_sm` (how many of the tile's programs an SM runs at once,
which sets the waves of a split) on the models of `--fit-models`: the pair whose picks sum to
the least time. The other models in those results are scored apart, never fitted on.

    python bench/small_grid_fit.py --fit bench/results/serial_split_h100.json \\
        bench/results/serial_split_tf32nhwc_h100.json \\
        --check bench/results/serial_split_check_h100.json.gz \\
        --in-model bench/results/split_in_model_h100-ab81144.json \\
        --write kernels/conv_triton_tuned_sm90.json --out bench/results/small_grid_fit.json

`--write` puts the rules into the tuned table's `small_grid` (keyed `<type>-F-<layout>`; BF16
takes FP16's, whose arithmetic it shares), which `conv_triton_spec.small_grid_rule` reads.
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

from _results import read_json  # noqa: E402 - bench/_results.py, beside this file

REDUCE_STEPS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)
PER_SM = (1, 2, 3, 4)
FIT_MODELS = ("resnet50", "mobilenet_v2")
KIND = "sm90"


def geo(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _sizes(problem_key: str) -> dict[str, int]:
    from miopenkernels.problem import ConvProblem
    from triton_conv import layer_sizes

    return layer_sizes(ConvProblem.from_key(problem_key))


def small_grid_rows(rows: list[dict], cus: int) -> list[dict]:
    """The rows whose case's usual tile launches fewer than cus // 2 programs."""
    from miopenkernels.kernels import conv_triton_spec as spec

    out = []
    for r in rows:
        case = _case(r["case"])
        usual = spec.usual_config(KIND, case)
        sz = _sizes(r["problem"])
        gx, gy, gz = spec.grid("conv2d_fwd", sz, {**usual, "SPLIT_K": 1})
        if usual and gx * gy * gz < cus // 2:
            out.append({**r, "sizes": sz})
    return out


def _case(case: str) -> str:
    t, layout = case.split("-")
    return f"{t}-F-{layout}"


def _times(row: dict) -> dict[str, float]:
    return {name: us for variant, name, us, _err, ok in row["tried"]
            if ok and variant in ("plain", "reduce")}


def _tile(tile: str) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) of a name like `64x32x64 w4 s3`."""
    bm, bn, bk, warps, stages = (int(v) for v in tile.replace("w", "").replace("s", "")
                                 .replace("x", " ").split())
    return bm, bn, bk, warps, stages


def rule_time(row: dict, tile: str, reduce_steps: float, cus: int) -> float | None:
    """The time of the rule's pick on a row (None where that tile and split were not timed)."""
    from miopenkernels.kernels import conv_triton_spec as spec

    bm, bn, bk, warps, stages = _tile(tile)
    cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": 1}
    sz = row["sizes"]
    gx, gy, gz = spec.grid("conv2d_fwd", sz, cfg)
    split = spec.small_grid_split(gx * gy * gz, spec.reduction_steps("conv2d_fwd", sz, cfg),
                                  cus, reduce_steps, 16)
    return _times(row).get(f"{bm}x{bn}x{bk} w{warps} s{stages} g8 k{split}")


def fit_case(rows: list[dict], cus: int) -> dict[str, Any]:
    tiles = sorted({" ".join(n.split()[:3]) for r in rows for n in _times(r)})
    best = None
    for tile in tiles:
        for reduce_steps in REDUCE_STEPS:
            picks = [rule_time(r, tile, reduce_steps, cus) for r in rows]
            if any(p is None for p in picks):
                continue
            regret = geo([p / min(_times(r).values())
                          for p, r in zip(picks, rows, strict=True) if p is not None])
            if best is None or regret < best[0] - 1e-9:
                best = (regret, tile, reduce_steps)
    assert best is not None
    return {"tile": best[1], "reduce_steps": best[2]}


def score(rows: list[dict], rule: dict[str, Any], cus: int) -> dict[str, float]:
    picks = [rule_time(r, rule["tile"], rule["reduce_steps"], cus) for r in rows]
    pairs = [(p, r) for p, r in zip(picks, rows, strict=True) if p is not None]
    return {"layers": len(pairs), "untimed": len(rows) - len(pairs),
            "rule_vs_cudnn": round(geo([p / r["cudnn_us"] for p, r in pairs]), 3),
            "best_vs_cudnn": round(geo([min(_times(r).values()) / r["cudnn_us"]
                                        for _, r in pairs]), 3),
            "rule_vs_best": round(geo([p / min(_times(r).values()) for p, r in pairs]), 3),
            "rule_max_vs_cudnn": round(max(p / r["cudnn_us"] for p, r in pairs), 2)}


def config_of(rule: dict[str, Any]) -> dict[str, Any]:
    bm, bn, bk, warps, stages = _tile(rule["tile"])
    out = {"config": {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SPLIT_K": 1,
                      "num_warps": warps, "num_stages": stages},
           "reduce_steps": rule["reduce_steps"]}
    if rule.get("programs_per_sm", 1) != 1:
        out["programs_per_sm"] = rule["programs_per_sm"]
    return out


# ----------------------------------------------------------------------------- in the models
def in_model_rows(paths: list[str]) -> list[dict[str, Any]]:
    """Each small-grid layer of bench/split_in_model.py's results (per model and case): its
    programs and steps, its tile, its microseconds at each split it ran (the forced variants),
    as the package ran it (`package_us`) and torch's."""
    rows = []
    for path in paths:
        for c in read_json(path)["cases"]:
            variants = c["variants"]
            torch_layers = c.get("torch_layers") or []
            for i, layer in enumerate(variants["rule"]["layers"]):
                if layer.get("small_grid_split") is None:
                    continue
                times: dict[int, float] = {}
                for name, variant in variants.items():
                    other = variant["layers"][i] if name != "rule" else None
                    if other is not None and other.get("small_grid_split") is not None:
                        split = int(other["small_grid_split"])
                        times[split] = min(times.get(split, math.inf), float(other["us"]))
                rows.append({"model": c["model"], "case": c["case"], "layer": layer["layer"],
                             "programs": int(layer["programs"]), "steps": int(layer["steps"]),
                             "tile": layer["tile"], "times": times,
                             "package_us": float(layer["us"]),
                             "torch_us": float(torch_layers[i]["us"]) if torch_layers else None})
    return rows


def in_model_pick(row: dict[str, Any], reduce_steps: float, per_sm: int, cus: int
                  ) -> float | None:
    """The in-model time of the split a rule picks on a row (None: not timed)."""
    from miopenkernels.kernels import conv_triton_spec as spec

    split = spec.small_grid_split(row["programs"], row["steps"], cus, reduce_steps, 16, per_sm)
    return row["times"].get(split)


def fit_in_model(rows: list[dict[str, Any]], cus: int) -> dict[str, Any]:
    """The (reduce_steps, programs_per_sm) whose picks over `rows` sum to the least time."""
    best = None
    for per_sm in PER_SM:
        for reduce_steps in REDUCE_STEPS:
            picks = [in_model_pick(r, reduce_steps, per_sm, cus) for r in rows]
            if any(p is None for p in picks):
                continue
            total = sum(p for p in picks if p is not None)
            if best is None or total < best[0] - 1e-6:
                best = (total, reduce_steps, per_sm)
    assert best is not None
    return {"reduce_steps": best[1], "programs_per_sm": best[2]}


def score_in_model(rows: list[dict[str, Any]], rule: dict[str, Any], cus: int
                   ) -> dict[str, Any]:
    """Per model: the layers' summed microseconds under the rule, at each layer's best split,
    as the package ran them and torch's."""
    out = {}
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        picks = [in_model_pick(r, rule["reduce_steps"], rule["programs_per_sm"], cus)
                 for r in mine]
        timed = [(p, r) for p, r in zip(picks, mine, strict=True) if p is not None]
        torch_us = [r["torch_us"] for _, r in timed if r["torch_us"] is not None]
        out[model] = {"layers": len(timed), "untimed": len(mine) - len(timed),
                      "rule_us": round(sum(p for p, _ in timed), 1),
                      "best_us": round(sum(min(r["times"].values()) for _, r in timed), 1),
                      "package_us": round(sum(r["package_us"] for _, r in timed), 1),
                      "torch_us": round(sum(torch_us), 1) if len(torch_us) == len(timed)
                      else None}
    return out


def refit_in_model(result: dict[str, Any], paths: list[str], fit_models: list[str],
                   cus: int) -> None:
    """Each case of the in-model results takes the refit reduce_steps and programs_per_sm
    (its tile stays the one fitted alone, which the models ran); scores under `in_model`."""
    rows = in_model_rows(paths)
    for case in sorted({r["case"] for r in rows}):
        entry = result["cases"].get(case)
        mine = [r for r in rows if r["case"] == case]
        if entry is None or any(r["tile"] != entry["tile"] for r in mine):
            raise SystemExit(f"{case}: the in-model results ran another tile than the fitted "
                             f"{entry and entry['tile']}; time the models with this rule's tile")
        fitted = [r for r in mine if r["model"] in fit_models]
        if not fitted:
            raise SystemExit(f"{case}: none of --fit-models {', '.join(fit_models)} in the "
                             "in-model results")
        rule = fit_in_model(fitted, cus)
        before = {"reduce_steps": entry["reduce_steps"], "programs_per_sm": 1}
        entry.update(rule)
        scores = score_in_model(mine, rule, cus)
        entry["in_model"] = {"fit_models": fit_models, "before": before, "models": scores}
        print(f"{case:12} in the models: reduce_steps {rule['reduce_steps']:4}  programs/SM "
              f"{rule['programs_per_sm']}")
        for model, sc in scores.items():
            tag = "fit" if model in fit_models else "held out"
            print(f"    {model:20} {tag:8} {sc['layers']:3} layers: rule {sc['rule_us']:7.1f} us"
                  f"  best {sc['best_us']:7.1f}  as shipped {sc['package_us']:7.1f}"
                  f"  torch {sc['torch_us']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", nargs="+", required=True, help="serial_split.py results to fit on")
    ap.add_argument("--check", nargs="*", default=[], help="results of other networks to score")
    ap.add_argument("--in-model", nargs="*", default=[],
                    help="bench/split_in_model.py results to refit the split's costs on")
    ap.add_argument("--fit-models", default=",".join(FIT_MODELS),
                    help="the models of --in-model to fit on (the others are scored apart)")
    ap.add_argument("--write", default="", help="the tuned table to put the rules into")
    ap.add_argument("--out", default="", help="write the fit and its scores as JSON")
    ap.add_argument("--json", action="store_true", help="print the JSON result")
    args = ap.parse_args(argv)
    fit_rows, cus, sources = [], 0, []
    for path in args.fit:
        data = read_json(path)
        cus = cus or int(data["sms"])
        fit_rows += data["rows"]
        sources.append(Path(path).name)
    seen = {r["problem"] for r in fit_rows}
    checks = {Path(path).name: small_grid_rows(
        [r for r in read_json(path)["rows"] if r["problem"] not in seen], cus)
        for path in args.check}
    fit_rows = small_grid_rows(fit_rows, cus)
    result: dict[str, Any] = {"cus": cus, "sources": sources, "check": list(checks),
                              "cases": {}}
    for case in sorted({r["case"] for r in fit_rows}):
        rows = [r for r in fit_rows if r["case"] == case]
        rule = fit_case(rows, cus)
        entry = {**rule, "fit": score(rows, rule, cus), "check": {}}
        print(f"{_case(case):12} {rule['tile']:16} reduce_steps {rule['reduce_steps']:4}")
        parts = [("fit", entry["fit"])]
        for name, check_rows in checks.items():
            others = [r for r in check_rows if r["case"] == case]
            if others:
                entry["check"][name] = score(others, rule, cus)
                parts.append((name, entry["check"][name]))
        for name, s in parts:
            print(f"    {name:36} {s['layers']:3} layers: rule/cuDNN {s['rule_vs_cudnn']:.3f}"
                  f"  best/cuDNN {s['best_vs_cudnn']:.3f}  rule/best {s['rule_vs_best']:.3f}"
                  f"  max {s['rule_max_vs_cudnn']:.2f}  untimed {s['untimed']}")
        result["cases"][_case(case)] = entry
    if args.in_model:
        refit_in_model(result, args.in_model, [m for m in args.fit_models.split(",") if m], cus)
        result["in_model_sources"] = [Path(p).name for p in args.in_model]
    if args.write:
        path = Path(args.write)
        table = json.loads(path.read_text())
        rules = {case: config_of(e) for case, e in result["cases"].items()}
        for layout in ("NCHW", "NHWC"):
            if f"FP16-F-{layout}" in rules:
                rules[f"BF16-F-{layout}"] = rules[f"FP16-F-{layout}"]
        table["small_grid"] = {"sources": sources + result.get("in_model_sources", []),
                               "rules": dict(sorted(rules.items()))}
        path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
