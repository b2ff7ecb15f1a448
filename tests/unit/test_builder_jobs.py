"""Manifests and compile jobs: what a build would compile, without compiling anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from miopenkernels.builder.jobs import TargetDbs, build_jobs, specialisations, target_jobs
from miopenkernels.builder.manifest import available_manifests, load_manifest, load_manifests
from miopenkernels.db.finddb import FindDbFile, FindDbRecord, Solution
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import ProblemError
from miopenkernels.solvers import applicable_solvers
from miopenkernels.target import Target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "builder"
sys.path.insert(0, str(FIXTURES))
from fixture_solvers import FIXTURE_SOLVERS, SCALE, SHIFT  # noqa: E402

GFX906 = Target("gfx906", 60)
SM90 = Target("sm90", 132)


@pytest.fixture()
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import miopenkernels.builder.jobs as jobs_mod
    import miopenkernels.solvers as solvers

    monkeypatch.setattr(solvers, "SOLVERS", list(FIXTURE_SOLVERS))
    monkeypatch.setattr(solvers, "LIBRARY_SOLVERS", [])
    monkeypatch.setattr(jobs_mod, "primitive_jobs", lambda target: [])


@pytest.fixture()
def problems() -> list:
    return load_manifest(FIXTURES / "manifest.txt")


# ---------------------------------------------------------------- manifests
def test_shipped_manifests_cover_the_networks_layouts_types_and_directions() -> None:
    names = available_manifests()
    assert {"resnet50", "vgg16", "inception_v3", "mobilenet_v2", "unet"} <= set(names)
    union = load_manifests()
    assert len(union) == len(set(union))
    assert 200 <= len(union) <= 800  # a few hundred: the default build must fit a small machine
    assert {p.in_layout for p in union} == {"NCHW", "NHWC"}
    assert {p.data_type for p in union} == {"FP32", "FP16"}
    assert {p.direction for p in union} == {"F", "B", "W"}
    mobilenet = load_manifest("mobilenet_v2")
    assert any(p.groups == p.c == p.k and p.groups > 1 for p in mobilenet)  # depthwise
    assert any(p.mode == "trans" for p in load_manifest("unet"))


def test_default_manifest_is_the_union_of_all() -> None:
    union = load_manifests()
    each = {p for name in available_manifests() for p in load_manifest(name)}
    assert set(union) == each


def test_unknown_manifest_names_the_known_ones() -> None:
    with pytest.raises(ProblemError, match="resnet50"):
        load_manifest("alexnet")


def test_manifest_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("conv -n 2 -c 3 -F 9\n")
    with pytest.raises(ProblemError, match="bad.txt"):
        load_manifest(bad)


# ---------------------------------------------------------------- jobs
def test_jobs_are_deterministic_sorted_and_unique(registry: None, problems: list) -> None:
    first = build_jobs([GFX906, SM90], problems)
    again = build_jobs([GFX906, SM90], list(reversed(problems)))
    assert first == again
    for jobs in first.values():
        rows = [(j.kdb_name, j.kdb_args) for j in jobs]
        assert rows == sorted(rows)
        assert len(set(jobs)) == len(jobs)


def test_jobs_hold_dynamic_ones_and_one_specialisation_per_shape(registry: None,
                                                                  problems: list) -> None:
    jobs = target_jobs(GFX906, problems)
    dynamic = [j for j in jobs if not any(o.startswith("-DFX_N=") for o in j.options)]
    assert {j.kernel_name for j in dynamic} == {"fx_scale", "fx_shift"}
    # Forward problems with n*k = 16 (twice: FP32 and FP16 share the fixture's options) and 64;
    # the heuristic picks FxScale (rank 1) and only it is specialised.
    special = sorted(o for j in jobs for o in j.options if o.startswith("-DFX_N="))
    assert special == ["-DFX_N=16", "-DFX_N=64"]
    assert all(j.kernel_name == "fx_scale" for j in jobs if "-DFX_N=16" in j.options)
    assert all(j.kdb_args.endswith(" -mcpu=gfx906") for j in jobs)


def test_the_finddb_winner_is_specialised_and_the_other_tuned_solutions_run_dynamic(
        registry: None, problems: list, tmp_path: Path) -> None:
    problem = problems[0]
    folder = tmp_path / GFX906.basename
    folder.mkdir()
    find = FindDbFile()
    find.put(FindDbRecord(problem.key(), (
        Solution("FxShift", 0.01, 0, "miopenConvolutionFwdAlgoDirect"),
        Solution("FxScale", 0.02, 0, "miopenConvolutionFwdAlgoDirect"))))
    find.write(folder / f"{GFX906.basename}.HIP.fdb.txt")
    perf = PerfDbFile()
    perf.put(problem, "FxShift", "4")
    perf.put(problem, "FxScale", "2")
    perf.write(folder / f"{GFX906.basename}.db.txt")

    dbs = TargetDbs(GFX906, tmp_path)
    chosen = specialisations(problem, GFX906, dbs)
    assert [(s.solver.name, s.params, s.tuned) for s in chosen] == [("FxShift", (4,), True)]
    # Without databases only the heuristic's pick is specialised.
    assert [s.solver for s in specialisations(problem, GFX906)] == [SCALE]
    jobs = target_jobs(GFX906, [problem], dbs)
    assert SHIFT.compile_job(problem, (4,), GFX906, specialised=True) in jobs
    # The second solution runs at its PerfDb parameters from a dynamic binary.
    assert SCALE.compile_job(problem, (2,), GFX906, specialised=False) in jobs
    assert SCALE.compile_job(problem, (2,), GFX906, specialised=True) not in jobs
    # Parameters a PerfDb holds that are not legal give the winner its defaults.
    perf.put(problem, "FxShift", "3")
    perf.write(folder / f"{GFX906.basename}.db.txt")
    chosen = specialisations(problem, GFX906, TargetDbs(GFX906, tmp_path))
    assert [(s.solver.name, s.params, s.tuned) for s in chosen] == [("FxShift", (1,), False)]


def test_a_tuned_set_is_compiled_for_its_records_layer_class_only(
        registry: None, problems: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PerfDb set serves the miss ranking of the same layer at other batch sizes and, in
    2D, image sizes (library/invoke.py `_neighbours`): another type, or another layer of the
    same type, direction and layout, does not get its dynamic binary; the record's layer at
    another batch and image size does."""
    from dataclasses import replace

    from miopenkernels.builder.jobs import _ranking_jobs, layer_class, ranking_params

    fp32, fp16 = problems[0], next(p for p in problems if p.data_type == "FP16"
                                   and p.direction == "F")
    other_layer = replace(fp32, k=fp32.k * 2)
    other_size = replace(fp32, n=fp32.n + 3, in_spatial=tuple(d + 5 for d in fp32.in_spatial))
    assert layer_class(other_size) == layer_class(fp32) != layer_class(other_layer)
    assert all(SHIFT.is_applicable(p, GFX906) for p in (fp16, other_layer, other_size))
    folder = tmp_path / GFX906.basename
    folder.mkdir()
    perf = PerfDbFile()
    perf.put(fp32, "FxShift", "4")
    perf.write(folder / f"{GFX906.basename}.db.txt")
    dbs = TargetDbs(GFX906, tmp_path)
    assert ranking_params([fp32, fp16], dbs)["FxShift"] == {"4": {layer_class(fp32)}}
    asked: list = []
    real = SHIFT.compile_job
    monkeypatch.setattr(SHIFT, "compile_job", lambda problem, params, target, specialised=False:
                        asked.append((problem, params)) or real(problem, params, target))
    list(_ranking_jobs(GFX906, [fp32, fp16, other_layer, other_size], dbs))
    assert (fp32, (4,)) in asked and (other_size, (4,)) in asked
    assert (fp16, (4,)) not in asked and (other_layer, (4,)) not in asked


def test_primitive_jobs_join_every_target(problems: list) -> None:
    """The real primitive registry's jobs are in every target's list, once each."""
    from miopenkernels.builder.jobs import primitive_jobs

    prims = primitive_jobs(GFX906)
    assert prims
    jobs = target_jobs(GFX906, [])
    assert set(prims) <= set(jobs) and len(jobs) == len(set(jobs))


def test_no_applicable_solver_gives_only_dynamic_jobs(registry: None, problems: list) -> None:
    backward = [p for p in problems if p.direction != "F"]
    assert backward
    jobs = target_jobs(SM90, backward)
    assert jobs == sorted(
        {j for s in FIXTURE_SOLVERS for j in s.dynamic_jobs(SM90)},
        key=lambda j: (j.kdb_name, j.kdb_args))


def test_without_a_record_the_specialisation_is_immediate_mode_s_first_choice() -> None:
    """On targets nobody measured, the build specialises what the runtime's miss ranking runs
    first (IEEE math, no package yet: every kernel a candidate), not the solvers' own
    estimates: stems, a latent input and a bottleneck layer in each direction and layout."""
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem

    layers = [dict(c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3), stride=(2, 2)),
              dict(c=4, k=320, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1)),
              dict(c=256, k=64, in_spatial=(56, 56), filter=(1, 1))]
    moved = 0
    for name in ("gfx900-56", "gfx942-304", "gfx1100-48", "sm80-108"):
        target = Target.parse(name)
        handle = Handle(target=name)
        for kw in layers:
            for direction in "FBW":
                for layout in ("NCHW", "NHWC"):
                    p = ConvProblem(n=32, in_type="FP32", wei_type="FP32", out_type="FP32",
                                    in_layout=layout, wei_layout=layout, out_layout=layout,
                                    direction=direction, **kw)
                    first = handle.solutions(p)[0]
                    (chosen,) = specialisations(p, target)
                    assert chosen.solver.name == first.solver, (name, p.key())
                    assert chosen.params == tuple(first.params or ()), (name, p.key())
                    assert chosen.solver.math != "tf32"
                    heuristic = min(applicable_solvers(p, target),
                                    key=lambda s, p=p, t=target: s.heuristic_rank(p, t))
                    moved += heuristic.name != first.solver
    assert moved > 0  # the solvers' own estimates pick otherwise somewhere
