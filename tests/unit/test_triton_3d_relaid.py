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
from miopenkernels.solvers.triton_3d_relaid import _copies, relaid_first, relaid_problem
from miopenkernels.solvers.triton_slices import TEMPORAL_FIRST
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
        # Not on kinds it was not measured on, and not in NDHWC without padding (a temporal
        # 3x1x1 layer: the 3-D solver in forward; in backward data and weights the slices
        # solvers, triton_slices.TEMPORAL_FIRST).
        aligned = _p(d, "NDHWC", n=32, k=64)
        first = get_solver("ConvTritonImplicitGemmSlices" + SUFFIX[d]) \
            if d in TEMPORAL_FIRST else plain
        assert ranks_first(first, aligned, SM90)
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


RESULTS = ROOT / "bench" / "results"
#: The FP32 runs the 3-D FP32 routes' estimates read, and the FP16 ones their copies' cost.
FP32_RUNS = [str(RESULTS / r) for r in ("zoo_h200-fp32-every4-ef1efe1.json.gz",
                                        "zoo_h200-fp32-bw-every8-ef1efe1.json.gz")]
FP32_COPIES = [str(RESULTS / r) for r in ("zoo_h200-fb-9ec5af9.json",
                                          "zoo_h200-3d-c220f5b.json.gz")]


def _fp32(direction: str, **kw: object) -> ConvProblem:
    """(2+1)-D's 1x3x3 spatial layer of 128 -> 288 channels at 28x28, FP32, batch 32."""
    args: dict[str, object] = dict(n=32, c=128, k=288, filter=(1, 3, 3), pad=(0, 1, 1),
                                   in_type="FP32", wei_type="FP32", out_type="FP32")
    return _p(direction, **{**args, **kw})


def test_fp32_ncdhw_through_ndhwc_on_the_three_product_kernels() -> None:
    """ConvTriton3dViaNdhwcTf32x3{Fwd,Bwd}: FP32 NCDHW problems whose channels need no padding,
    on the three-TF32-product kernels' aligned NDHWC objects (which the package ships), ahead
    of the three-product kernel on NCDHW where the spec's VIA_MIN_MACS says, on RELAID_KINDS."""
    assert spec.RELAID_TF32X3 == ("F", "B")
    names = {s.name for s in SOLVERS}
    assert "ConvTriton3dViaNdhwcTf32x3Wrw" not in names
    shipped = {j for s in SOLVERS for j in s.dynamic_jobs(SM90)}
    for d in spec.RELAID_TF32X3:
        via = get_solver("ConvTriton3dViaNdhwcTf32x3" + SUFFIX[d])
        plain = get_solver("ConvTriton3dTf32x3" + SUFFIX[d])
        p = _fp32(d)
        assert (via.math, via.inner.name, via.ranking_name) == \
            ("tf32x3", plain.name, plain.ranking_name)
        assert via.is_applicable(p, SM90)
        # Padded channels: forward alone (the spec's RELAID_TF32X3_PADDED), never a stem's.
        assert via.is_applicable(_fp32(d, k=230), SM90) == (d == "F")
        assert not via.is_applicable(_fp32(d, c=3, filter=(3, 7, 7), pad=(1, 3, 3)), SM90)
        assert not via.is_applicable(replace(p, in_layout="NDHWC", wei_layout="NDHWC",
                                             out_layout="NDHWC"), SM90)
        assert not via.is_applicable(_p(d, k=64), SM90)  # 16-bit: the IEEE relaid solvers'
        params = via.default_params(p, SM90)
        assert params == plain.default_params(relaid_problem(p, "NCDHW"), SM90)
        job = via.compile_job(p, params, SM90)
        assert job.options[0].startswith("--assume=") and "-DPRECISION=tf32x3" in job.options
        assert "-DCHANNELS_LAST=1" in job.options  # the aligned NDHWC object
        needed = set(launch_jobs(via, p, params, SM90))
        assert needed <= shipped, needed - shipped
        assert ranks_first(via, p, SM90) and not ranks_first(plain, p, SM90)
        # A 1x1x1 stride-2 downsample does too little for the copies; another kind was not
        # measured; the IEEE relaid solvers do not claim FP32.
        down = _fp32(d, c=64, k=128, filter=(1, 1, 1), pad=(0, 0, 0), stride=(2, 2, 2))
        assert ranks_first(plain, down, SM90) and not ranks_first(via, down, SM90)
        assert not via.claims_first(p, Target("gfx942", 304))
        assert not get_solver("ConvTriton3dViaNdhwc" + SUFFIX[d]).is_applicable(p, SM90)


def test_fp32_route_estimates_behind_the_table() -> None:
    """The spec's RELAID_TF32X3 figures, from the committed runs (bench/via_estimate.py --dims
    3): on every aligned FP32 NCDHW layer timed in both layouts, the route through NDHWC is
    estimated at 0.29-0.68 of the NCDHW kernel's time, 0.70 at most at the copies' 90% point,
    and the rule claims each of those layers."""
    sys.path.insert(0, str(ROOT / "bench"))
    import via_estimate

    results, runs, copies = RESULTS, FP32_RUNS, FP32_COPIES
    zoo = _zoo()
    layers = {(layer.network, layer.name): layer for layer in zoo.load_layers(  # type: ignore[attr-defined]
        ["r2plus1d_18", "r3d_18", "unet3d"])}
    shares = {}
    for d, span in (("F", (0.29, 0.60)), ("B", (0.34, 0.68))):
        found = via_estimate.estimate(runs, f"FP32-{d}", "ConvTriton3dTf32x3Fwd,"
                                      "ConvTriton3dTf32x3Bwd", "aligned", 0.9, 3, "FP16-F",
                                      copies)
        committed = json.loads((results / f"via_estimate_3d_fp32_{d.lower()}_h200.json")
                               .read_text())
        assert committed["layers"] == found["layers"]
        shares[d] = [e["via_over_nchw"] for e in found["layers"]]
        assert span[0] <= min(shares[d]) and max(shares[d]) <= span[1], shares[d]
        assert max(e["pessimistic_over_nchw"] for e in found["layers"]) <= 0.70
        for e in found["layers"]:
            p = zoo.layer_problem(layers[(e["network"], e["layer"])], "FP32", d, "NCHW", 32)  # type: ignore[attr-defined]
            assert relaid_first(p, SM90, "tf32x3"), e["key"]
    assert (len(shares["F"]), len(shares["B"])) == (8, 6)


def test_fp32_padded_forward_estimates_behind_the_table() -> None:
    """RELAID_TF32X3_PADDED's figures, recomputed with bench/padded_estimate.py from the
    committed runs: forward 0.20-0.41 of the NCDHW kernel's time on R(2+1)D's four layers
    whose channels need padding (0.53 at most pessimistic), backward data 0.61-1.91 (not
    listed); the forward ones are the rule's."""
    sys.path.insert(0, str(ROOT / "bench"))
    import padded_estimate

    results, runs, copies = RESULTS, FP32_RUNS, FP32_COPIES
    shares = {}
    for d in "FB":
        found = padded_estimate.estimate(runs, f"FP32-{d}", "ConvTriton3dTf32x3" + SUFFIX[d],
                                         "FP16-F", copies, 0.9)
        committed = json.loads((results / f"padded_estimate_3d_fp32_{d.lower()}_h200.json")
                               .read_text())
        assert committed["layers"] == found["layers"] and len(found["layers"]) == 4
        shares[d] = sorted(e["est_over_ncdhw"] for e in found["layers"])
        if d == "F":
            assert max(e["pessimistic_over_ncdhw"] for e in found["layers"]) <= 0.53
            via = get_solver("ConvTriton3dViaNdhwcTf32x3Fwd")
            for e in found["layers"]:
                p = ConvProblem.from_key(e["key"])
                assert via.is_applicable(p, SM90) and ranks_first(via, p, SM90), e["key"]
    assert (shares["F"][0], shares["F"][-1]) == (0.202, 0.409)
    assert (shares["B"][0], shares["B"][-1]) == (0.61, 1.909)
    assert spec.RELAID_TF32X3_PADDED == ("F",)
    # NDHWC in place (ConvTriton3dPaddedTf32x3Fwd): 0.16-0.34 of the generic object's time.
    found = padded_estimate.estimate(runs, "FP32-F", "ConvTriton3dTf32x3Fwd", "FP16-F", copies,
                                     0.9, "NDHWC")
    committed = json.loads((results / "padded_estimate_3d_fp32_f_ndhwc_h200.json").read_text())
    assert committed["layers"] == found["layers"] and len(found["layers"]) == 4
    ndhwc = sorted(e["est_over_ndhwc"] for e in found["layers"])
    assert (ndhwc[0], ndhwc[-1]) == (0.157, 0.343)
    assert max(e["pessimistic_over_ndhwc"] for e in found["layers"]) <= 0.44
    padded = get_solver("ConvTriton3dPaddedTf32x3Fwd")
    for e in found["layers"]:
        p = ConvProblem.from_key(e["key"])
        assert padded.is_applicable(p, SM90) and ranks_first(padded, p, SM90), e["key"]
    names = {s.name for s in SOLVERS}
    assert "ConvTriton3dPaddedTf32x3Bwd" not in names and "ConvTriton3dPaddedTf32x3Wrw" not in names
    shipped = {j for s in SOLVERS for j in s.dynamic_jobs(SM90)}
    p = ConvProblem.from_key(found["layers"][0]["key"])
    assert set(launch_jobs(padded, p, padded.default_params(p, SM90), SM90)) <= shipped
