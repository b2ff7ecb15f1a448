"""The ranking of solutions for a FindDb miss: costs fitted on measured timings, no benchmark.

A candidate is one (solver, parameters) whose kernel is at hand. Its predicted time comes from a
log-linear cost model: `log(ms) = w . features`, with one weight vector per solver name, fitted by
`builder/ranking.py` on every timing the tuning runs recorded. The features are the same for every
solver and come from the solver protocol alone (the problem's work and bytes, the launch geometry
of `Solver.launch`) and from the target's published hardware figures (dbs/hardware.toml); a
parameter set's residual in the fit per element type, an offset and a slope over the problem's
GEMM size (both shrunk towards zero), is added as its own bias. A new solver joins the ranking
by refitting the data file, with no change here. A solver the model has no timings of is ranked
by the pooled fit (`"*"`).

The model is a small JSON file (`miopenkernels.dbs/ranking.json`, the fit's output) read once per
process; only the standard library is used here.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._record import dataclass
from .errors import DbError

if TYPE_CHECKING:
    from .problem import ConvProblem
    from .solvers.base import Params, Solver
    from .target import Target

__all__ = ["FEATURES", "Hardware", "RankingModel", "Candidate", "features", "load_model",
           "rank_candidates", "model_path"]

FEATURES = ("one", "fp16", "channel_last", "log_flop_us", "log_bytes_us", "log_waves",
            "log_block", "log_work_per_thread", "log_tail", "log_groups", "log_tile_efficiency",
            "log_reduction", "log_gemm_mn", "log_flop_us_sq", "log_waves_sq", "log_serial")
"""Feature names, in the order of every weight vector of the model file."""

POOLED = "*"
# The model's most frequent parameter sets tried per solver (each adds to every miss's first call).
# Fewer would suit the serving benchmark's network (bench/serving_replay.py: 4 chose as well or
# better there) but not the others: leave-one-network-out (bench/ranking_eval.py) regret p95
# 34.9% with 6, 35.7% with 5, 55.4% with 4 (MobileNet-v2, U-Net and VGG-16 lose their tiles).
KNOWN_CANDIDATES = 6
NEAR_LIMIT = 4.0  # a nearby measurement scales a solver's predictions by at most this
NEAR_FADE_OCTAVES = 5.0  # ... and counts for nothing at a size ratio of 2**this
# A candidate whose tiles are mostly padding (a 64-wide tile over one channel per group) is
# beyond what the log-linear model extrapolates to (bench/ranking_eval.py: depthwise layers
# chose such tiles at 10x the best); it counts only where no other candidate is at hand.
MIN_TILE_EFFICIENCY = 0.04
# A solver whose defaults are predicted this many times slower than the best candidate so far
# has its other parameter sets skipped (they are tiles of the same kernel: within this factor of
# its defaults on the problems the model was fitted on); tuned sets of the same layer are
# always tried.
PRUNE_FACTOR = 4.0
_LOG_MIN_EFFICIENCY = math.log(MIN_TILE_EFFICIENCY)
_TYPE_BYTES = {"FP32": 4, "FP16": 2, "BF16": 2}


@dataclass(frozen=True)
class Hardware:
    """One target's published figures, scaled to its CU/SM count."""

    cus: int
    fp32_tflops: float
    fp16_tflops: float
    bandwidth_gbs: float
    lds_kib: float

    @classmethod
    def from_entry(cls, entry: dict[str, Any], cus: int) -> Hardware:
        ref = int(entry["cus"])
        scale = cus / ref if ref > 0 else 1.0
        return cls(cus, float(entry["fp32_tflops"]) * scale, float(entry["fp16_tflops"]) * scale,
                   float(entry["bandwidth_gbs"]), float(entry.get("lds_kib", 64)))

    def peak_tflops(self, type_name: str) -> float:
        return self.fp32_tflops if type_name == "FP32" else self.fp16_tflops


def _prod(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@lru_cache(maxsize=256)
def _problem_terms(problem: ConvProblem, hw: Hardware) -> tuple[Any, float, float, float, float,
                                                                 float, float, float, float]:
    """(view, work, fp16, channel_last, log flop us, log bytes us, log groups, log R, log MN)."""
    from .solvers._conv import conv_view, gemm_sizes, macs

    view = conv_view(problem)
    type_name = problem.in_type
    size = _TYPE_BYTES.get(type_name, 4)
    work = float(max(macs(problem), 1))
    nbytes = size * (_prod(problem.in_shape) + _prod(problem.wei_shape) + _prod(problem.out_shape))
    m, n, r = gemm_sizes(view)
    return (view, work, 1.0 if type_name != "FP32" else 0.0,
            1.0 if problem.in_layout in ("NHWC", "NDHWC") else 0.0,
            math.log(max(2.0 * work / (hw.peak_tflops(type_name) * 1e6), 1e-6)),
            math.log(max(nbytes / (hw.bandwidth_gbs * 1e3), 1e-6)),
            math.log(problem.groups), math.log(max(r, 1)), math.log(max(m * n, 1)))


def features(problem: ConvProblem, solver: Solver, params: Params, hw: Hardware
             ) -> tuple[float, ...]:
    """The FEATURES of one candidate: work, bytes, launch geometry and tile use, on `hw`.

    `log_serial` is how far the launch falls short of one wave (max(0, -log waves)) times the
    log of the reduction length: a launch that leaves SMs idle runs about as long as each of
    its blocks' serial loop over the reduction, whatever the batch.

    Launch geometry comes from `Solver.launch_geometry`; the tile efficiency from the solver's
    optional `efficiency(view, params)` (the fraction of launched work that is real; 1 without
    one); a solver may answer both at once with `ranking_geometry(problem, params)` ->
    (blocks, threads per block, efficiency).
    """
    terms = _problem_terms(problem, hw)
    _, _, fp16, channel_last, log_flop, log_bytes, log_groups, log_r, log_mn = terms
    log_waves, log_block, log_wpt, log_tail, log_eff, log_waves_sq, log_serial = \
        _launch_terms(problem, solver, params, hw, terms)
    return (1.0, fp16, channel_last, log_flop, log_bytes, log_waves, log_block, log_wpt,
            log_tail, log_groups, log_eff, log_r, log_mn, log_flop * log_flop, log_waves_sq,
            log_serial)


# FEATURES that depend on the problem alone, and those of the launch (a candidate's own).
_PROBLEM_FEATURES = ("one", "fp16", "channel_last", "log_flop_us", "log_bytes_us", "log_groups",
                     "log_reduction", "log_gemm_mn", "log_flop_us_sq")
_LAUNCH_FEATURES = ("log_waves", "log_block", "log_work_per_thread", "log_tail",
                    "log_tile_efficiency", "log_waves_sq", "log_serial")


def _launch_terms(problem: ConvProblem, solver: Solver, params: Params, hw: Hardware,
                  terms: tuple[Any, ...]) -> tuple[float, float, float, float, float, float,
                                                   float]:
    """The _LAUNCH_FEATURES of one candidate, given the problem's `_problem_terms`."""
    view, work = terms[0], terms[1]
    geometry = getattr(solver, "ranking_geometry", None)
    if geometry is not None:  # (blocks, threads per block, efficiency) in one call
        blocks, block, eff = geometry(problem, params)
        blocks, block = max(blocks, 1), max(block, 1)
    else:
        grid, block_dims = solver.launch_geometry(problem, params)
        blocks = max(grid[0] * grid[1] * grid[2], 1)
        block = max(_prod(block_dims), 1)
        efficiency = getattr(solver, "efficiency", None)
        eff = float(efficiency(view, params)) if callable(efficiency) else 1.0
    waves = blocks / hw.cus
    log_waves = math.log(waves)
    return (log_waves, math.log(block), math.log(work / (blocks * block)),
            math.log(math.ceil(waves) / waves), math.log(max(eff, 1e-6)),
            log_waves * log_waves, max(0.0, -log_waves) * terms[7])


def _problem_values(terms: tuple[Any, ...]) -> tuple[float, ...]:
    """The _PROBLEM_FEATURES values from `_problem_terms`."""
    _, _, fp16, channel_last, log_flop, log_bytes, log_groups, log_r, log_mn = terms
    return (1.0, fp16, channel_last, log_flop, log_bytes, log_groups, log_r, log_mn,
            log_flop * log_flop)


_PROBLEM_INDEX = tuple(FEATURES.index(f) for f in _PROBLEM_FEATURES)
_LAUNCH_INDEX = tuple(FEATURES.index(f) for f in _LAUNCH_FEATURES)
_EFFICIENCY_INDEX = _LAUNCH_FEATURES.index("log_tile_efficiency")


_MN_INDEX = FEATURES.index("log_gemm_mn")
_NO_BIAS = (0.0, 0.0, 0.0)


def _bias_log(entry: tuple[float, float, float], log_mn: float) -> float:
    """A parameter set's log-time correction on a problem of log GEMM size `log_mn`."""
    offset, slope, center = entry
    return offset + slope * (log_mn - center)


def _bias_entry(value: Any) -> tuple[float, float, float]:
    """A parameter set's bias as (offset, slope, centre): the log-time correction is
    offset + slope * (log_gemm_mn - centre); a plain number is an offset alone."""
    if isinstance(value, (int, float)):
        return float(value), 0.0, 0.0
    b0, b1, center = value
    return float(b0), float(b1), float(center)


def bias_key(problem: ConvProblem, params_text: str) -> str:
    """The key of a parameter set's bias in the model: per element type (a tile that suits
    16-bit data may not suit FP32), e.g. `FP32:128,64,32,8,1,4,2`."""
    return f"{problem.in_type}:{params_text}" if params_text else ""


@lru_cache(maxsize=4096)
def params_text(solver: Solver, params: Params) -> str:
    """`solver.params_to_string(params)`, kept (the ranking asks per candidate)."""
    return solver.params_to_string(params)


@dataclass(frozen=True)
class Candidate:
    """One ranked way to compute a problem: solver, parameters and predicted time (ms)."""

    solver: Solver
    params: Params
    time: float


class RankingModel:
    """The fitted weights, the parameter sets seen per solver, and the hardware table."""

    def __init__(self, data: dict[str, Any], source: str = "") -> None:
        try:
            if tuple(data["features"]) != FEATURES:
                raise DbError(f"ranking model {source}: features {data['features']} are not "
                              f"{list(FEATURES)}; refit it with this version")
            self.weights: dict[str, tuple[float, ...]] = {
                str(k): tuple(float(x) for x in v) for k, v in data["weights"].items()}
            self.params: dict[str, list[str]] = {
                str(k): [str(p) for p in v] for k, v in data.get("params", {}).items()}
            self.bias: dict[str, dict[str, tuple[float, float, float]]] = {
                str(k): {str(p): _bias_entry(b) for p, b in v.items()}
                for k, v in data.get("bias", {}).items()}
            self.hardware: dict[str, dict[str, Any]] = dict(data["hardware"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DbError(f"ranking model {source} is malformed ({exc!r}); refit it with "
                          "`python -m miopenkernels.builder.ranking`") from None
        if any(len(w) != len(FEATURES) for w in self.weights.values()):
            raise DbError(f"ranking model {source}: a weight vector is not {len(FEATURES)} long")
        self.source = source
        self._parsed: dict[tuple[str, str], list[Params]] = {}
        self._near: dict[tuple[str, tuple[ConvProblem, Params, float], Hardware], float] = {}
        self._hardware: dict[Target, Hardware] = {}

    def hardware_for(self, target: Target) -> Hardware:
        """The figures of `target.arch`, scaled to its CU count (nearest known arch if none);
        kept per target (the ranking asks on every miss)."""
        hw = self._hardware.get(target)
        if hw is None:
            hw = self._hardware[target] = self._hardware_for(target)
        return hw

    def _hardware_for(self, target: Target) -> Hardware:
        entry = self.hardware.get(target.arch)
        if entry is None:
            vendor_prefix = target.arch[:3]
            same = sorted(a for a in self.hardware if a.startswith(vendor_prefix))
            entry = self.hardware[same[-1] if same else sorted(self.hardware)[-1]]
        return Hardware.from_entry(entry, target.cu)

    def weights_for(self, solver_name: str) -> tuple[float, ...]:
        return self.weights.get(solver_name) or self.weights[POOLED]

    def predict_ms(self, solver_name: str, feats: tuple[float, ...], params_text: str = ""
                   ) -> float:
        w = self.weights_for(solver_name)
        entry = self.bias.get(solver_name, {}).get(params_text, _NO_BIAS)
        return math.exp(_bias_log(entry, feats[_MN_INDEX])
                        + sum(a * b for a, b in zip(w, feats, strict=True)))

    def predict(self, problem: ConvProblem, solver: Solver, params: Params, hw: Hardware
                ) -> float:
        """Predicted milliseconds of one candidate."""
        bias = self.bias.get(solver.ranking_name)
        text = bias_key(problem, params_text(solver, params)) if bias else ""
        return self.predict_ms(solver.ranking_name, features(problem, solver, params, hw), text)

    def near_scale(self, solver: Solver, near: tuple[ConvProblem, Params, float], hw: Hardware
                   ) -> float:
        """How far the model is from a measurement of a nearby problem, `near` = (problem,
        params, ms): measured / predicted within NEAR_LIMIT either way (1 where the record
        cannot be predicted). Kept: every batch size of a layer asks about the same record."""
        key = (solver.name, near, hw)
        scale = self._near.get(key)
        if scale is None:
            try:
                predicted = self.predict(near[0], solver, near[1], hw)
                scale = min(NEAR_LIMIT, max(1.0 / NEAR_LIMIT, near[2] / predicted))
            except Exception:  # noqa: BLE001 - a foreign record is no correction
                scale = 1.0
            self._near[key] = scale
        return scale

    def candidate_params(self, solver: Solver, problem: ConvProblem, target: Target
                         ) -> list[Params]:
        """Defaults first, then the sets every package ships (`Solver.usual_params`), then
        the KNOWN_CANDIDATES parameter sets the model saw most often for the solver, those
        timed in the problem's element type (a bias of that type in the model) ahead of the
        others (the tuned sets of the nearest measured record come on top, see
        `rank_candidates`).

        Typed first: among the most frequent sets of a solver that runs every type are
        16-bit tiles (BLOCK_K 64) no FP32 problem was timed with (3 of the tensor-core
        backward-weights solver's first 6 in dbs/ranking.json, 5 of 6 in the fit without
        Inception-v3), which pushed the FP32 tiles measured fastest on other layers out of
        the first KNOWN_CANDIDATES (bench/ranking_eval.py over the FindDb records, leave one
        network out: top-1 85.1% -> 91.4%, regret geomean 22.4% -> 16.4%, p95 201% -> 101%;
        the small-batch part unchanged, 8.0% and 46.7%)."""
        default = tuple(solver.default_params(problem, target))
        shipped = [tuple(p) for p in solver.usual_params(problem, target)]
        key = (solver.ranking_name, problem.in_type)
        known = self._parsed.get(key)
        if known is None:
            texts = self.params.get(solver.ranking_name, ())
            bias = self.bias.get(solver.ranking_name, {})
            typed = {t: None for t in texts if bias_key(problem, t) in bias}
            known = []
            for text in (*typed, *(t for t in texts if t not in typed)):
                try:
                    known.append(tuple(solver.params_from_string(text)))
                except Exception:  # noqa: BLE001 - a foreign entry is skipped, never fatal
                    continue
            self._parsed[key] = known
        return [default, *shipped, *(p for p in known[:KNOWN_CANDIDATES]
                                     if p != default and p not in shipped)]


def model_path() -> Path:
    from .config import package_dir

    return package_dir("miopenkernels.dbs") / "ranking.json"


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> RankingModel:
    """The fitted model (`dbs/ranking.json` unless `path`), read once per process."""
    file = Path(path) if path else model_path()
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise DbError(f"ranking model {file} not found; fit it with "
                      "`python -m miopenkernels.builder.ranking`") from None
    except (OSError, ValueError) as exc:
        raise DbError(f"ranking model {file} is unreadable: {exc}") from None
    return RankingModel(data, str(file))


def rank_candidates(problem: ConvProblem, target: Target, solvers: Iterable[Solver],
                    at_hand: Callable[[Solver, Params], bool], *,
                    model: RankingModel | None = None,
                    extra_params: dict[str, list[Params]] | None = None,
                    measured: dict[str, tuple[ConvProblem, Params, float]] | None = None
                    ) -> list[Candidate]:
    """Each solver's best candidate whose kernel is `at_hand`, fastest predicted first; a
    solver whose every candidate falls below MIN_TILE_EFFICIENCY ranks after the others.

    `extra_params` adds parameter sets per solver name (e.g. those tuned for the same layer at
    another batch size). `measured` gives, per solver name, a measured (problem, params, ms) of
    a nearby problem: the model's error there scales that solver's predictions here (within
    NEAR_LIMIT either way). A solver with no candidate at hand is left out.
    """
    model = model or load_model()
    hw = model.hardware_for(target)
    terms = _problem_terms(problem, hw)  # once: the candidates share the problem's features
    problem_values = _problem_values(terms)
    log_mn = terms[8]
    out: list[Candidate] = []
    wasteful: list[Candidate] = []  # below MIN_TILE_EFFICIENCY: only if nothing else is
    leader: Candidate | None = None  # the fastest so far
    for solver in solvers:
        name = solver.name
        scale = 1.0
        tuned_scale, tuned = 1.0, None
        near = (measured or {}).get(name)
        if near is not None:
            tuned_scale = model.near_scale(solver, near, hw) ** _near_weight(problem, near[0])
            tuned = near[1]
            # Tuning found `tuned` the fastest of the solver's sets at the neighbour: a gain
            # measured there is its own; a loss holds for every set of the solver.
            scale = max(1.0, tuned_scale)
        params_list = model.candidate_params(solver, problem, target)
        if solver.tunable and solver.defaults_rule(problem, target) and \
                at_hand(solver, params_list[0]):
            params_list = params_list[:1]  # the defaults alone (Solver.defaults_rule)
        else:
            for p in (extra_params or {}).get(name, ()):
                if p not in params_list:
                    params_list.append(p)
        weights = model.weights_for(solver.ranking_name)
        # w . features = the problem's part (once per solver) + the launch's (per candidate).
        base = sum(weights[i] * v for i, v in zip(_PROBLEM_INDEX, problem_values, strict=True))
        launch_weights = tuple(weights[i] for i in _LAUNCH_INDEX)
        bias = model.bias.get(solver.ranking_name)
        tunable = solver.tunable
        best: Candidate | None = None
        worst_case: Candidate | None = None
        extra = bool((extra_params or {}).get(name))
        for index, params in enumerate(params_list):
            if index == 1 and not extra and best is not None and leader is not None and \
                    best.time > PRUNE_FACTOR * leader.time:
                break  # its defaults are far behind the leader: its other tiles are not tried
            if tunable and not solver.params_valid(problem, target, params):
                continue
            if not at_hand(solver, params):
                continue
            try:
                launch = _launch_terms(problem, solver, params, hw, terms)
            except Exception:  # noqa: BLE001 - a launch that cannot be described is no candidate
                continue
            log_ms = base + sum(map(operator.mul, launch_weights, launch))
            if bias:
                log_ms += _bias_log(bias.get(bias_key(problem, params_text(solver, params)),
                                             _NO_BIAS), log_mn)
            t = (tuned_scale if params == tuned else scale) * math.exp(log_ms)
            if launch[_EFFICIENCY_INDEX] < _LOG_MIN_EFFICIENCY:
                if worst_case is None or t < worst_case.time:
                    worst_case = Candidate(solver, params, t)
            elif best is None or t < best.time:
                best = Candidate(solver, params, t)
        if best is not None:
            out.append(best)
            if leader is None or best.time < leader.time:
                leader = best
        elif worst_case is not None:
            wasteful.append(worst_case)
    # A solver that ranks first (solvers.ranks_first) goes ahead of the others, TF32 ones
    # (there only under the TF32 math mode, which asks for them) ahead of IEEE ones; then
    # those a solver puts ahead of the portable ones (its optional `ahead_of_portable`); then
    # the rest. Wasteful candidates rank after the others whatever their predicted time,
    # except that on ungrouped problems a solver ahead of the portable ones stays so however
    # much of its tile is padding (a stem's 3-channel dx on a 128-wide tile took 1.7x cuDNN's
    # GPU time where the direct solver the model preferred took 3.1-4.5x,
    # bench/results/alternatives_few_c_b_h200.json); grouped ones have families of their own.
    from .solvers import ranks_first

    tier = {id(c.solver): _tier(c.solver, problem, target, ranks_first)
            for c in (*out, *wasteful)}
    ordered = (_ordered(out, problem, target), _ordered(wasteful, problem, target))
    tiers = ((0, 1, 2), (3,)) if problem.groups == 1 else ((0, 1, 2, 3),)
    return [c for levels in tiers for group in ordered for level in levels
            for c in group if tier[id(c.solver)] == level]


def _tier(solver: Solver, problem: ConvProblem, target: Target,
          ranks_first: Callable[[Solver, ConvProblem, Target], bool]) -> int:
    """0: first-ranked TF32, 1: first-ranked, 2: ahead of the portable solvers, 3: the rest."""
    if ranks_first(solver, problem, target):
        return 0 if solver.math == "tf32" else 1
    ahead = getattr(solver, "ahead_of_portable", None)
    return 2 if ahead is not None and ahead(problem, target) else 3


def _ordered(candidates: list[Candidate], problem: ConvProblem, target: Target
             ) -> list[Candidate]:
    """Fastest predicted first; equal predictions (solvers the model has no timings of share
    the pooled fit) by the solvers' own estimates, asked only where there is a tie."""
    times = [c.time for c in candidates]
    if len(set(times)) == len(times):
        return sorted(candidates, key=lambda c: c.time)
    return sorted(candidates, key=lambda c: (c.time, _own_rank(c.solver, problem, target)))


def _near_weight(problem: ConvProblem, near: ConvProblem) -> float:
    """How much a nearby record's correction counts: fully at the same size, fading linearly
    in log2 of the ratio of output positions (batch x output pixels; the batch ratio for the
    same image size) to nothing at NEAR_FADE_OCTAVES (a record at batch 32 says little about
    the launch shape of batch 1)."""
    here = problem.n * _prod(problem.out_spatial)
    there = near.n * _prod(near.out_spatial)
    octaves = abs(math.log2(max(here, 1) / max(there, 1)))
    return max(0.0, 1.0 - octaves / NEAR_FADE_OCTAVES)


def _own_rank(solver: Solver, problem: ConvProblem, target: Target) -> float:
    try:
        return float(solver.heuristic_rank(problem, target))
    except Exception:  # noqa: BLE001 - a solver without an estimate sorts last among equals
        return math.inf
