"""The miss ranking: the committed model, its fit, and candidates limited to kernels at hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from miopenkernels.builder.ranking import Sample, fit, load_hardware
from miopenkernels.errors import DbError
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import (
    FEATURES,
    RankingModel,
    load_model,
    model_path,
    rank_candidates,
)
from miopenkernels.solvers import SOLVERS, applicable_solvers, get_solver, ranks_first
from miopenkernels.target import Target, default_targets

SM90 = Target("sm90", 132)
# ResNet-50's 3x3 layer of stage 2 at a batch no database holds.
LAYER = ConvProblem(n=3, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1))


def test_committed_model_covers_every_solver_and_default_target() -> None:
    model = load_model()
    measured = {"ConvWinograd3x3Fwd", "ConvImplicitGemmFwd", "Conv1x1GemmFwd", "ConvDirectWrw",
                "ConvTritonImplicitGemmFwd", "ConvTritonImplicitGemmBwd",
                "ConvTritonImplicitGemmWrw", "ConvTritonImplicitGemmTf32Fwd"}
    assert measured <= set(model.weights)
    # Solvers without enough timings are ranked by the pooled fit.
    for s in SOLVERS:
        assert model.weights_for(s.name) == model.weights.get(s.name, model.weights["*"])
    for target in default_targets():
        hw = model.hardware_for(target)
        assert hw.cus == target.cu and hw.fp32_tflops > 0 and hw.bandwidth_gbs > 0


def test_ranking_picks_only_kernels_at_hand() -> None:
    solvers = applicable_solvers(LAYER, SM90)
    ranked = rank_candidates(LAYER, SM90, solvers, lambda s, p: True)
    assert len(ranked) == len(solvers)
    # Fastest predicted first, after the solvers that rank first (TF32 ones ahead of those),
    # then those ahead of the portable ones (FP32 forward and backward data on sm90).
    tiers = [0 if ranks_first(c.solver, LAYER, SM90) and c.solver.math == "tf32" else
             1 if ranks_first(c.solver, LAYER, SM90) else
             2 if getattr(c.solver, "ahead_of_portable", lambda p, t: False)(LAYER, SM90) else 3
             for c in ranked]
    assert tiers == sorted(tiers)
    for tier in set(tiers):
        times = [c.time for c, t in zip(ranked, tiers, strict=True) if t == tier]
        assert times == sorted(times)
    assert all(c.time > 0 and math.isfinite(c.time) for c in ranked)
    # Only the defaults' kernels at hand: every candidate uses its solver's defaults.
    only_defaults = rank_candidates(
        LAYER, SM90, solvers, lambda s, p: p == tuple(s.default_params(LAYER, SM90)))
    assert all(c.params == tuple(c.solver.default_params(LAYER, SM90)) for c in only_defaults)
    # Nothing at hand: no candidate.
    assert rank_candidates(LAYER, SM90, solvers, lambda s, p: False) == []


@pytest.mark.parametrize("problem", [
    LAYER,
    ConvProblem(n=1, c=1024, k=2048, in_spatial=(14, 14), filter=(1, 1), stride=(2, 2),
                in_type="FP16"),
    ConvProblem(n=8, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3), stride=2,
                in_layout="NHWC"),
    ConvProblem(n=4, c=144, k=144, in_spatial=(56, 56), filter=(3, 3), pad=1, groups=144),
])
def test_ranked_times_are_the_models_predictions(problem: ConvProblem) -> None:
    """rank_candidates splits w . features into the problem's and the launch's parts: each
    candidate's time is still what `predict` (the full feature vector) says."""
    model = load_model()
    hw = model.hardware_for(SM90)
    ranked = rank_candidates(problem, SM90, applicable_solvers(problem, SM90),
                             lambda s, p: True, model=model)
    assert ranked
    for c in ranked:
        assert c.time == pytest.approx(model.predict(problem, c.solver, c.params, hw), rel=1e-9)


@pytest.mark.parametrize("problem", [
    LAYER,
    ConvProblem(n=8, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3), stride=2,
                in_layout="NHWC", in_type="FP16"),
    ConvProblem(n=2, c=256, k=512, in_spatial=(28, 28), filter=(1, 1), stride=2,
                direction="B"),
    ConvProblem(n=16, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=1, direction="W"),
])
def test_a_solvers_ranking_geometry_is_its_launch_and_efficiency(problem: ConvProblem) -> None:
    """`ranking_geometry` (the ranking's one-call path) answers what `launch_geometry` and
    `efficiency` say, for every parameter set of the solver's space."""
    from miopenkernels.solvers._conv import conv_view

    solvers = [s for s in applicable_solvers(problem, SM90) if hasattr(s, "ranking_geometry")]
    assert solvers
    for s in solvers:
        space = s.param_space(problem, SM90)
        assert space
        for params in space[:: max(1, len(space) // 40)]:
            grid, block = s.launch_geometry(problem, params)
            assert s.ranking_geometry(problem, params) == (
                grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2],
                s.efficiency(conv_view(problem), params))


def test_a_candidate_of_mostly_padded_tiles_ranks_after_the_others() -> None:
    """A depthwise layer (one channel per group): the tensor-core tiles waste over 96% of
    their work, so that solver ranks last whatever its prediction."""
    from miopenkernels.ranking import MIN_TILE_EFFICIENCY
    from miopenkernels.solvers._conv import conv_view

    dw = ConvProblem(n=64, c=576, k=576, in_spatial=(14, 14), filter=(3, 3), pad=1, groups=576,
                     in_type="FP16", in_layout="NHWC")
    ranked = rank_candidates(dw, SM90, applicable_solvers(dw, SM90), lambda s, p: True)
    names = [c.solver.name for c in ranked]
    assert "ConvTritonImplicitGemmFwd" in names and len(names) > 1
    triton = ranked[names.index("ConvTritonImplicitGemmFwd")]
    assert triton.solver.efficiency(conv_view(dw), triton.params) < MIN_TILE_EFFICIENCY
    assert names[-1] == "ConvTritonImplicitGemmFwd"
    # Alone, it is still a candidate: nothing else would run the problem.
    alone = rank_candidates(dw, SM90, [triton.solver], lambda s, p: True)
    assert [c.solver.name for c in alone] == ["ConvTritonImplicitGemmFwd"]


def test_a_few_channel_layer_keeps_the_tensor_cores_ahead_of_the_portable_solvers() -> None:
    """An image stem's backward data (dx of 3 channels): the few-channel kernels rank first
    (their reduction flattened over taps and filters), and the implicit GEMM, whose every
    tile is mostly padding there, stays ahead of the portable solvers (measured 1.7x cuDNN's
    GPU time against the direct solver's 3.1x); the same layer grouped keeps the old order."""
    from miopenkernels.ranking import MIN_TILE_EFFICIENCY
    from miopenkernels.solvers._conv import conv_view

    stem = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(3, 3), pad=(1, 1),
                       direction="B", in_type="FP16")
    # A package holds the tensor-core solvers' default tiles (256x128 here), not every tile.
    def shipped(s, p) -> bool:  # noqa: ANN001
        return not s.name.startswith("ConvTriton") or p == tuple(s.default_params(stem, SM90))

    ranked = rank_candidates(stem, SM90, applicable_solvers(stem, SM90), shipped)
    names = [c.solver.name for c in ranked]
    assert names[0] == "ConvTritonSmallCBwd", names
    assert ranked[0].solver.efficiency(conv_view(stem), ranked[0].params) > 0.8  # 27 of 32
    gemm = ranked[names.index("ConvTritonImplicitGemmBwd")]
    assert gemm.solver.efficiency(conv_view(stem), gemm.params) < MIN_TILE_EFFICIENCY
    portable = [n for n in names if not n.startswith("ConvTriton")]
    at = names.index("ConvTritonImplicitGemmBwd")
    assert portable and all(names.index(n) > at for n in portable)
    # The portable solvers' predictions are below the implicit GEMM's: the order is the
    # tiers', not the model's.
    times = {c.solver.name: c.time for c in ranked}
    assert min(times[n] for n in portable) < times["ConvTritonImplicitGemmBwd"]
    grouped = replace(stem, c=6, k=128, groups=2)
    ranked = rank_candidates(grouped, SM90, applicable_solvers(grouped, SM90), shipped)
    wasteful = [c for c in ranked
                if c.solver.efficiency(conv_view(grouped), c.params) < MIN_TILE_EFFICIENCY]
    assert not wasteful or ranked[-len(wasteful):] == wasteful


def test_winograd_wins_a_large_3x3_layer_direct_never_wins_a_1x1() -> None:
    big = ConvProblem(n=32, c=256, k=256, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1))
    one = ConvProblem(n=32, c=256, k=1024, in_spatial=(14, 14), filter=(1, 1))
    for p in (big, one):
        ranked = rank_candidates(p, SM90, applicable_solvers(p, SM90), lambda s, q: True)
        assert not ranked[0].solver.name.startswith("ConvDirect")


def test_a_solver_without_timings_is_ranked_by_the_pooled_fit(tmp_path) -> None:  # noqa: ANN001
    data = json.loads(model_path().read_text())
    data["weights"] = {"*": data["weights"]["*"]}
    path = tmp_path / "ranking.json"
    path.write_text(json.dumps(data))
    model = load_model(str(path))
    ranked = rank_candidates(LAYER, SM90, applicable_solvers(LAYER, SM90), lambda s, p: True,
                             model=model)
    assert ranked and all(c.time > 0 for c in ranked)


def test_malformed_model_is_a_db_error(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "ranking.json"
    path.write_text(json.dumps({"features": ["one"], "weights": {}, "hardware": {}}))
    with pytest.raises(DbError, match="features"):
        load_model(str(path))
    path.write_text("{")
    with pytest.raises(DbError, match="unreadable"):
        load_model(str(path))
    with pytest.raises(DbError, match="not found"):
        load_model(str(tmp_path / "none.json"))


def test_fit_recovers_a_known_cost_law() -> None:
    # Times that follow the flop count exactly: the fit must rank by it.
    solver = get_solver("ConvImplicitGemmFwd")
    samples = []
    for n in (1, 2, 4, 8, 16, 32, 64):
        for c in (16, 32, 64, 128, 256, 512):
            p = ConvProblem(n=n, c=c, k=64, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1))
            params = solver.default_params(p, SM90)
            samples.append(Sample(p, solver, params, SM90, 1e-6 * n * c + 0.01))
    data = fit(samples, load_hardware())
    model = RankingModel(data, "test")
    assert list(data["features"]) == list(FEATURES) and solver.name in data["weights"]
    hw = model.hardware_for(SM90)
    small, large = samples[0], samples[-1]
    assert model.predict(small.problem, solver, small.params, hw) < \
        model.predict(large.problem, solver, large.params, hw)


def test_tensor_core_benchmark_rows_become_samples_of_the_triton_solvers(tmp_path) -> None:
    from pathlib import Path

    from miopenkernels.builder.ranking import REPO_BENCH, bench_samples

    root = Path(__file__).resolve().parents[2]
    files = sorted(root.glob(REPO_BENCH))
    assert files, "the committed tensor-core benchmark results are the Triton solvers' timings"
    samples = bench_samples(files)
    names = {s for _, _, s, _ in samples}
    assert {"ConvTritonImplicitGemmFwd", "ConvTritonImplicitGemmBwd",
            "ConvTritonImplicitGemmWrw", "ConvTritonImplicitGemmTf32Fwd"} <= names
    for (target, key, name, params), times in list(samples.items())[::50]:
        problem = ConvProblem.from_key(key)
        solver = get_solver(name)
        assert target == "sm90-132" and times and min(times) > 0
        assert solver.is_applicable(problem, SM90), key
        assert solver.params_valid(problem, SM90, solver.params_from_string(params)), params
    # Wrong results, split-K configurations and malformed rows are no samples.
    row = {"problem": "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", "type": "FP16",
           "direction": "F", "layout": "NHWC",
           "tried": [["128x64x32 w4 s3 g8 k1", 0.5, 1e-4, True],
                     ["128x64x32 w4 s3 g8 k4", 0.1, 1e-4, True],
                     ["128x128x32 w8 s3 g8 k1", 0.2, 0.3, False], ["nonsense", 0.1, 0, True]]}
    bad = {"problem": "not-a-key", "type": "FP16", "direction": "F", "layout": "NHWC",
           "tried": [["128x64x32 w4 s3 g8 k1", 0.5, 1e-4, True]]}
    path = tmp_path / "triton_kernels_x.json"
    path.write_text(json.dumps({"target": ["cuda", 90, 32], "sms": 132, "rows": [row, bad]}))
    got = bench_samples([path])
    assert list(got.values()) == [[0.5]]
    ((_, key, name, params),) = got
    assert name == "ConvTritonImplicitGemmFwd" and params == "128,64,32,8,1,4,3"
    assert ConvProblem.from_key(key).in_layout == "NHWC"



def test_a_parameter_sets_bias_has_a_slope_over_gemm_size() -> None:
    """A tile that gains on large problems: its residual grows with log_gemm_mn, and the bias
    follows it (shrunk); a plain number in a model file is an offset alone."""
    from miopenkernels.builder.ranking import SLOPE_SHRINK, _bias
    from miopenkernels.ranking import _bias_entry

    pairs = [(float(x), 0.5 * (x - 10.0)) for x in range(5, 16)]
    offset, slope, center = _bias(pairs)
    sxx = sum((x - 10.0) ** 2 for x, _ in pairs)
    assert center == pytest.approx(10.0)
    assert offset == pytest.approx(0.0, abs=1e-9)
    assert slope == pytest.approx(0.5 * sxx / (sxx + SLOPE_SHRINK), rel=1e-4)
    assert _bias_entry(0.25) == (0.25, 0.0, 0.0)
    assert _bias_entry([0.1, -0.2, 9.0]) == (0.1, -0.2, 9.0)


def test_skipping_far_behind_solvers_keeps_the_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A solver whose defaults are PRUNE_FACTOR behind the leader has its other tiles skipped:
    on ResNet-50's layers at other batch sizes, the first choice is the full ranking's."""
    import miopenkernels.ranking as ranking
    from miopenkernels.problem import ConvProblem as P

    layers = [P(n=n, c=c, k=k, in_spatial=(s, s), filter=(f, f), pad=f // 2, in_type=t)
              for n in (1, 4, 48) for t in ("FP32", "FP16")
              for c, k, s, f in ((64, 64, 56, 3), (256, 64, 56, 1), (512, 2048, 7, 1),
                                 (256, 256, 14, 3), (3, 64, 224, 7))]
    calls = [0]
    launch_terms = ranking._launch_terms

    def counted(*args: object) -> tuple[float, ...]:
        calls[0] += 1
        return launch_terms(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "_launch_terms", counted)
    pruned = [rank_candidates(p, SM90, applicable_solvers(p, SM90), lambda s, q: True)[0]
              for p in layers]
    pruned_calls, calls[0] = calls[0], 0
    monkeypatch.setattr(ranking, "PRUNE_FACTOR", math.inf)
    full = [rank_candidates(p, SM90, applicable_solvers(p, SM90), lambda s, q: True)[0]
            for p in layers]
    assert pruned_calls < calls[0]  # some solvers' other tiles were skipped
    assert [(c.solver.name, c.params) for c in pruned] == \
        [(c.solver.name, c.params) for c in full]


def test_a_neighbours_correction_fades_with_the_batch_ratio() -> None:
    """A record at batch 32 corrects batch 32 fully, batch 16 and 64 by 4/5, and batch 1 (five
    octaves away) not at all."""
    from miopenkernels.ranking import NEAR_FADE_OCTAVES, _near_weight

    near = LAYER.with_batch(32)
    assert _near_weight(near, near) == 1.0
    assert _near_weight(LAYER.with_batch(64), near) == pytest.approx(1 - 1 / NEAR_FADE_OCTAVES)
    assert _near_weight(LAYER.with_batch(16), near) == pytest.approx(1 - 1 / NEAR_FADE_OCTAVES)
    assert _near_weight(LAYER.with_batch(1), near) == 0.0
    solvers = applicable_solvers(LAYER.with_batch(1), SM90)
    solver = solvers[0]
    params = tuple(solver.default_params(near, SM90))
    far = rank_candidates(LAYER.with_batch(1), SM90, [solver], lambda s, p: True,
                          measured={solver.name: (near, params, 1e3)})
    plain = rank_candidates(LAYER.with_batch(1), SM90, [solver], lambda s, p: True)
    assert far[0].time == pytest.approx(plain[0].time)  # a 32x-away record changes nothing


def test_a_neighbours_gain_goes_to_its_tuned_set_a_loss_to_every_set() -> None:
    """The neighbour (same layer, batch 32) ran its tuned set faster than predicted: that set
    alone gains here; had it run slower, every set of the solver would lose alike."""
    from miopenkernels.ranking import _near_weight

    model = load_model()
    hw = model.hardware_for(SM90)
    here, near = LAYER.with_batch(48), LAYER.with_batch(32)
    solver = get_solver("ConvTritonImplicitGemmFwd")
    sets = [p for p in model.candidate_params(solver, here, SM90)
            if solver.params_valid(here, SM90, p)]
    tuned, other = sets[0], sets[1]
    predicted = model.predict(near, solver, tuned, hw)
    weight = _near_weight(here, near)

    def times(ms: float) -> dict[tuple[int, ...], float]:
        out = {}
        for p in (tuned, other):
            [c] = rank_candidates(here, SM90, [solver], lambda s, q, p=p: q == p, model=model,
                                  measured={solver.name: (near, tuned, ms)})
            out[p] = c.time
        return out

    plain = {p: model.predict(here, solver, p, hw) for p in (tuned, other)}
    fast = times(predicted / 2)
    assert fast[tuned] == pytest.approx(plain[tuned] * 0.5 ** weight)
    assert fast[other] == pytest.approx(plain[other])
    slow = times(predicted * 2)
    assert slow[tuned] == pytest.approx(plain[tuned] * 2 ** weight)
    assert slow[other] == pytest.approx(plain[other] * 2 ** weight)


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("data_type", ["FP16", "BF16"])
def test_few_channel_16_bit_problems_rank_the_implicit_gemm_ahead_of_the_portable(
        direction: str, data_type: str) -> None:
    """VGG-16's first layer (3 channels) in NCHW: the tensor-core implicit GEMM ranks ahead of
    the direct and portable implicit GEMM solvers whatever the model predicts (it put the
    direct solver first in backward weights, at 37x cuDNN's GPU time on the H200); the
    few-channel kernels go first in backward data and weights (`first_2d`)."""
    stem = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(3, 3), pad=(1, 1),
                       direction=direction, in_type=data_type, wei_type=data_type,
                       out_type=data_type)
    ranked = rank_candidates(stem, SM90, applicable_solvers(stem, SM90), lambda s, p: True)
    names = [c.solver.name for c in ranked]
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    first = "ConvTritonImplicitGemm" if direction == "F" else "ConvTritonSmallC"
    assert names[0] == f"{first}{suffix}", names
    assert names.index(f"ConvTritonImplicitGemm{suffix}") < names.index(f"ConvDirect{suffix}")
    # FP32 keeps the model's order there: the rule is the 16-bit types'.
    fp32 = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(3, 3), pad=(1, 1),
                       direction=direction)
    assert not get_solver(f"ConvTritonImplicitGemm{suffix}").ahead_of_portable(fp32, SM90)
