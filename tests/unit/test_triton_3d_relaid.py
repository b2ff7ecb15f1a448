"""The 3-D relaid solvers (solvers/triton_3d_relaid.py): which problems they take and claim,
the copies, the workspace and the launches they build, the objects a package ships for them,
and the rule's evidence recomputed from the committed H200 runs."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS, get_solver, launch_jobs, ranks_first
from miopenkernels.solvers._conv import macs
from miopenkernels.solvers.triton_3d_relaid import _copies, relaid_problem
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

ROOT = Path(__file__).resolve().parents[2]
SM90 = Target("sm90", 132)
SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def _p(direction: str = "F", layout: str = "NCDHW", **kw: object) -> ConvProblem:
    """(2+1)-D's 45-filter temporal layer at batch 8."""
    p = ConvProblem(n=8, c=64, k=45, in_spatial=(8, 28, 28), filter=(3, 1, 1),
                    pad=(1, 0, 0), direction=direction, in_type="FP16", wei_type="FP16",
                    out_type="FP16", in_layout=layout, wei_layout=layout, out_layout=layout)
    return replace(p, **kw) if kw else p


def test_relaid_problem_is_ndhwc_with_channels_rounded_to_the_multiple() -> None:
    q = relaid_problem(_p(), "NCDHW")
    assert q is not None and (q.in_layout, q.c, q.k) == ("NDHWC", 64, 48)
    assert relaid_problem(_p(k=64), "NCDHW") == replace(
        _p(k=64), in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    padded = relaid_problem(_p(layout="NDHWC", c=3), "NDHWC")
    assert padded is not None and (padded.c, padded.k) == (16, 48)
    # An NDHWC problem that needs no padding is the plain solver's; NCDHW ones are not the
    # padded solver's; padding neither grouped nor transposed problems.
    assert relaid_problem(_p(layout="NDHWC", k=64), "NDHWC") is None
    assert relaid_problem(_p(), "NDHWC") is None
    assert relaid_problem(_p(groups=2, c=64, k=46), "NCDHW") is None
    assert relaid_problem(_p(k=64, groups=2), "NCDHW") is not None
    assert relaid_problem(_p(mode="trans"), "NCDHW") is None


def test_copies_are_the_tensors_that_change() -> None:
    n, dhw = 8, 8 * 28 * 28
    assert _copies(_p(), "NCDHW") == {"x": (n, 64, dhw, n, 64), "w": (45, 64, 3, 48, 64),
                                      "y": (n, 45, dhw, n, 48)}
    # NDHWC: only the tensors whose channels are padded (45 filters: w and y).
    assert set(_copies(_p(layout="NDHWC"), "NDHWC")) == {"w", "y"}
    # 1x1x1 weights are the same bytes in both layouts: the kernel reads the caller's.
    one = _p(k=64, filter=(1, 1, 1), pad=(0, 0, 0))
    assert set(_copies(one, "NCDHW")) == {"x", "y"}


def test_applicability_types_and_layouts() -> None:
    for d in "FBW":
        via = get_solver("ConvTriton3dViaNdhwc" + SUFFIX[d])
        padded = get_solver("ConvTriton3dPadded" + SUFFIX[d])
        assert via.is_applicable(_p(d), SM90) and not via.is_applicable(_p(d, "NDHWC"), SM90)
        assert padded.is_applicable(_p(d, "NDHWC"), SM90)
        assert not padded.is_applicable(_p(d), SM90)
        assert not padded.is_applicable(_p(d, "NDHWC", k=64), SM90)
        fp32 = _p(d, in_type="FP32", wei_type="FP32", out_type="FP32")
        assert not via.is_applicable(fp32, SM90)
        assert via.ranking_name == padded.ranking_name == "ConvTriton3d" + SUFFIX[d]
        # Not 2-D problems, nor the other direction's.
        other = "B" if d == "F" else "F"
        assert not via.is_applicable(_p(other), SM90)


def test_launches_move_the_tensors_into_the_workspace() -> None:
    for d in "FBW":
        solver = get_solver("ConvTriton3dViaNdhwc" + SUFFIX[d])
        p = _p(d)
        params = solver.default_params(p, SM90)
        slots = solver.workspace_slots(p, params)
        main = solver.launch(p, params)
        pointers = {a.name: a.kind for a in main.args if a.kind.startswith("ptr")}
        assert {pointers[n] for n in ("x_ptr", "w_ptr", "y_ptr")} == \
            {"ptr:ws_x", "ptr:ws_w", "ptr:ws_y"}
        assert main.workspace_bytes == solver.workspace_for(p, params) >= \
            max(slots.values()) and all(v % 256 == 0 for v in slots.values())
        reads = {"F": ("x", "w"), "B": ("y", "w"), "W": ("x", "y")}[d]
        ins = solver.lead_ins(p, params, SM90)
        assert [step.args[1].kind for _, step in ins] == [f"ptr:ws_{t}" for t in reads]
        outs = solver.follow_ups(p, params, SM90)
        assert outs[-1][1].kernel_name == "transpose_021"
        assert outs[-1][1].args[0].kind == "ptr:ws_" + {"F": "y", "B": "x", "W": "w"}[d]
        if d == "W" and params[4] > 1:
            job, reduce = outs[0]
            kinds = {a.name: a.kind for a in reduce.args}
            assert (kinds["ws_ptr"], kinds["w_ptr"]) == ("ptr:ws_part", "ptr:ws_w")
        # The conv object is the 3-D solver's aligned one on the relaid problem.
        job = solver.compile_job(p, params, SM90)
        q = relaid_problem(p, "NCDHW")
        assert job == solver.inner.compile_job(q, params, SM90)
        assert any(o.startswith("--assume=") for o in job.options)


def test_padded_copies_widen_rows_and_copy_the_real_channels_back() -> None:
    solver = get_solver("ConvTriton3dPaddedFwd")
    p = _p(layout="NDHWC")
    params = solver.default_params(p, SM90)
    (job, w_copy), = solver.lead_ins(p, params, SM90)  # x has 64 channels: not copied
    values = w_copy.scalars()
    assert (values["ROWS"], values["COLS"], values["DST_ROWS"], values["DST_COLS"]) == \
        (45 * 3, 64, 48 * 3, 64)
    (_, back), = solver.follow_ups(p, params, SM90)
    values = back.scalars()
    assert (values["COLS"], values["SRC_STRIDE"], values["DST_STRIDE"]) == (45, 48, 45)
    pointers = {a.name: a.kind for a in solver.launch(p, params).args}
    assert (pointers["x_ptr"], pointers["w_ptr"], pointers["y_ptr"]) == \
        ("ptr:x", "ptr:ws_w", "ptr:ws_y")


def test_package_ships_every_object_their_defaults_launch() -> None:
    shipped = {j for s in SOLVERS for j in s.dynamic_jobs(SM90)}
    for d in "FBW":
        for name, layout, kw in (("ViaNdhwc", "NCDHW", {}), ("ViaNdhwc", "NCDHW", {"c": 3}),
                                 ("Padded", "NDHWC", {}), ("Padded", "NDHWC", {"c": 3})):
            solver = get_solver("ConvTriton3d" + name + SUFFIX[d])
            p = _p(d, layout, **kw)
            needed = set(launch_jobs(solver, p, solver.default_params(p, SM90), SM90))
            assert needed <= shipped, (solver.name, p.key(), needed - shipped)


def test_the_3d_solver_gives_way_where_they_claim() -> None:
    for d in "FBW":
        plain = get_solver("ConvTriton3d" + SUFFIX[d])
        for layout in ("NCDHW", "NDHWC"):
            p = _p(d, layout, n=32, filter=(3, 3, 3), pad=(1, 1, 1))
            # (Backward weights of a 3x3x3 filter: the relaid several-taps solver.)
            relaid = get_solver("ConvTriton3d" + ("ViaNdhwc" if layout == "NCDHW" else "Padded")
                                + ("Taps" if d == "W" else "") + SUFFIX[d])
            assert ranks_first(relaid, p, SM90) and not ranks_first(plain, p, SM90)
        # Not on kinds it was not measured on, and not in NDHWC without padding (backward
        # weights of a filter with a tap group: ConvTriton3dTapsWrw there).
        aligned = _p(d, "NDHWC", n=32, k=64)
        taps = get_solver("ConvTriton3dTapsWrw")
        assert ranks_first(taps if taps.is_applicable(aligned, SM90) else plain, aligned, SM90)
        # A 1x1x1 layer at stride 2 does too little for the transposes (13 multiply-adds an
        # element copied).
        down = _p(d, n=32, k=128, filter=(1, 1, 1), pad=(0, 0, 0), stride=(2, 2, 2))
        assert ranks_first(plain, down, SM90)
        gfx = Target("gfx942", 304)
        assert not get_solver("ConvTriton3dViaNdhwc" + SUFFIX[d]).claims_first(_p(d), gfx)


def _zoo() -> object:
    sys.path.insert(0, str(ROOT / "bench"))
    import zoo

    return zoo


def test_via_rule_picks_the_faster_path_on_the_h200_runs() -> None:
    """The spec's VIA_MIN_MACS, from the committed runs: on every zoo 3-D layer where one path
    took 15% less time than the other, the rule picks that one; and the padded solvers beat
    the generic object on every odd-channel layer."""
    zoo = _zoo()
    layers = {(layer.network, layer.name): layer for layer in zoo.load_layers(  # type: ignore[attr-defined]
        ["r2plus1d_18", "r3d_18", "unet3d"])}
    for d in "FBW":
        run = json.loads((ROOT / "bench" / "results" /
                          f"alternatives_3d_via_{d}_h200.json").read_text())
        assert run["device"].startswith("NVIDIA H") and len(run["rows"]) >= 45
        via, plain = "ConvTriton3dViaNdhwc" + SUFFIX[d], "ConvTriton3d" + SUFFIX[d]
        least = spec.VIA_MIN_MACS[d]
        for row in run["rows"]:
            p = zoo.layer_problem(layers[(row["network"], row["layer"])], "FP16", d,  # type: ignore[attr-defined]
                                  "NCHW", 32)
            moved = sum(pb * pr * s for _, _, s, pb, pr in _copies(p, "NCDHW").values())
            share = row["solvers"][via]["gpu_ms"] / row["solvers"][plain]["gpu_ms"]
            if share < 0.85 or share > 1 / 0.85:
                assert (macs(p) >= least * moved) == (share < 1), (row["key"], share)
            # The spec's figures: every row above the threshold faster through NDHWC (at most
            # 0.92 of the time), every row below it slower.
            assert (share <= 0.92) if macs(p) >= least * moved else (share > 1), row["key"]
        padded = json.loads((ROOT / "bench" / "results" /
                             f"alternatives_3d_padded_{d}_h200.json").read_text())
        rows = padded["rows"]
        assert len(rows) == 15 and all(
            r["solvers"]["ConvTriton3dPadded" + SUFFIX[d]]["gpu_ms"] < r["solvers"][plain]["gpu_ms"]
            for r in rows)
