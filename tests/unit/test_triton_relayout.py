"""The Via solvers: a problem on the other layout's Triton kernels, with transposes around them."""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from find_doubles import db_env, run_recorded, triton_compiler
from miopenkernels.backends import NullBackend
from miopenkernels.find import make_invoker
from miopenkernels.handle import Handle
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import load_model, rank_candidates
from miopenkernels.solvers import SOLVERS, get_solver, ranks_first
from miopenkernels.target import Target
from relayout_cases import RESULTS, SM90, as_case, geomean, plain

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

# ResNet-50's 3x3 layer at 28x28, batch 32, and its first layer (C=3, 7x7 stride 2).
LAYER = ConvProblem(n=32, c=128, k=128, in_spatial=(28, 28), filter=(3, 3), pad=(1, 1))
FIRST = ConvProblem(n=32, c=3, k=64, in_spatial=(224, 224), filter=(7, 7), pad=(3, 3),
                    stride=(2, 2))


def _times(name: str, batch: int = 32) -> dict[tuple[str, str], float]:
    """{(case, layer): our ms} at `batch` of a committed bench/results/kernels_h100 run."""
    rows = json.loads((RESULTS / name).read_text())["rows"]
    return {(r["case"], r["key"].split("-NCHW")[0].split("-NHWC")[0]): r["ours_ms"]
            for r in rows if r["n"] == batch}


# The runs that measured each case with the Via solvers (`after`) against one without them for
# it, and the batch: backward on every filter size (tree 8f40ce6); forward on 3x3 and up (tree
# b1b1a34 with the forward cases added), FP16 at batch 64, as its batch-32 layers are FindDb
# records of the NCHW kernel.
EVIDENCE = {
    **dict.fromkeys(("FP16-B", "FP16-W", "BF16-B", "BF16-W", "FP32-B", "FP32-W", "TF32-B"),
                    ("kernels_h100-8f40ce6.json", "kernels_h100-ec37f22.json", 32)),
    "TF32-F": ("kernels_h100-b1b1a34-tf32f.json", "kernels_h100-35f27da.json", 32),
    "FP16-F": ("kernels_h100-b1b1a34-fwd.json", "kernels_h100-35f27da.json", 64),
    "BF16-F": ("kernels_h100-b1b1a34-fwd.json", "kernels_h100-35f27da.json", 64),
}


def _taps(layer: str) -> int:
    a, b = (int(v) for v in layer.split("-")[3].split("x"))
    return a * b


def _channels(case: str, layer: str) -> int:
    """Input channels of a layer key: forward keys start C-H-W, backward ones K-P-Q-RxS-C."""
    return int(layer.split("-")[0 if case.split("-")[1] == "F" else 4])


def test_the_table_is_what_the_committed_runs_measured() -> None:
    """VIA_NHWC lists exactly the cases whose NHWC kernels took under 0.7 of the NCHW
    kernels' time (geomean over the batch-32 layers, before any Via solver); with the
    transposes, the filter sizes it takes are those whose layers got faster, and the others
    (and the first layer's few channels) did not."""
    before = _times("kernels_h100-ec37f22.json")
    share = {}
    for t in ("FP16", "BF16", "FP32", "TF32"):
        for d in "FBW":
            layers = [lay for case, lay in before if case == f"{t}-{d}-NCHW"]
            share[f"{t}-{d}"] = geomean([before[(f"{t}-{d}-NHWC", lay)]
                                          / before[(f"{t}-{d}-NCHW", lay)] for lay in layers])
    table = spec.VIA_NHWC["sm90"]
    assert {c for c, v in share.items() if v < 0.7} == set(table)
    assert all(v > 1.0 for c, v in share.items() if c not in table)
    small_c = []
    for case, taps in table.items():
        after_file, before_file, batch = EVIDENCE[case]
        after, ref = _times(after_file, batch), _times(before_file, batch)
        by_taps: dict[int, list[float]] = {}
        for (c, lay), ms in after.items():
            if c != f"{case}-NCHW":
                continue
            if _channels(case, lay) < spec.VIA_NHWC_MIN_C:
                if after_file.endswith("8f40ce6.json"):  # the run that took them too
                    small_c.append(ms / ref[(c, lay)])
                continue
            by_taps.setdefault(_taps(lay), []).append(ms / ref[(c, lay)])
        for rs, ratios in by_taps.items():
            assert (geomean(ratios) < 0.95) == (rs >= taps), (case, rs, geomean(ratios))
    assert geomean(small_c) > 1.0
    # NHWC TF32 backward weights: the NCHW kernel's share of the NHWC kernel's time, by taps.
    shares: dict[int, list[float]] = {}
    for (c, lay), ms in before.items():
        if c == "TF32-W-NCHW" and _channels(c, lay) >= spec.VIA_NHWC_MIN_C:
            shares.setdefault(_taps(lay), []).append(ms / before[("TF32-W-NHWC", lay)])
    assert spec.VIA_NCHW["sm90"] == {"TF32-W": 2}
    assert geomean(shares[9]) < 0.5 and geomean(shares[1]) > 0.6


def test_registered_where_the_table_lists_a_case() -> None:
    names = {s.name for s in SOLVERS if "Via" in s.name and "3d" not in s.name and
             "Chunks" not in s.name}
    assert names == {"ConvTritonImplicitGemmViaNhwcFwd", "ConvTritonImplicitGemmViaNhwcBwd",
                     "ConvTritonImplicitGemmViaNhwcWrw", "ConvTritonImplicitGemmTf32ViaNhwcFwd",
                     "ConvTritonImplicitGemmTf32ViaNhwcBwd",
                     "ConvTritonImplicitGemmTf32ViaNchwWrw", "ConvTritonImplicitGemmViaNchwWrw",
                     "ConvTritonImplicitGemmViaNchwBwd"}


def _records(path: Path) -> dict[str, dict[str, float]]:
    """{key: {solver: ms}} of a text FindDb."""
    out = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition("=")
        out[key] = {e.split(":")[0]: float(e.split(":")[1].split(",")[0])
                    for e in rest.split(";") if ":" in e}
    return out


FINDDB = Path(__file__).resolve().parents[2] / "dbs" / "sm9084" / "sm9084.HIP.fdb.txt"


def test_one_tap_table_is_what_the_databases_measured() -> None:
    """VIA_NHWC_ONE_TAP: on ResNet-50's 1x1 layers at batch 32 (dbs/sm9084 holds both paths'
    times), the layers it sends through the NHWC kernels got faster than on the NCHW kernels
    (geomean) and the layers it keeps got slower through them; TF32 forward, not listed, got
    no faster where the others are listed (7x7)."""
    records = _records(FINDDB)
    ratios: dict[tuple[str, bool], list[float]] = {}
    table = spec.VIA_NHWC_ONE_TAP["sm90"]
    for key, times in records.items():
        parts = key.split("-")
        if parts[3] != "1x1" or parts[7] != "32" or "-NCHW-" not in key:
            continue
        t, d = parts[-2], parts[-1]
        tf32 = d.endswith("_tf32")
        case = f"{'TF32' if tf32 else t}-{d[0]}"
        infix = "Tf32" if tf32 else ""
        suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[d[0]]
        via = times.get(f"ConvTritonImplicitGemm{infix}ViaNhwc{suffix}")
        direct = times.get(f"ConvTritonImplicitGemm{infix}{suffix}")
        if via is None or direct is None:
            continue
        # The output's pixels: forward keys end K-P-Q, backward ones start with dy's K-P-Q.
        p, q = (int(v) for v in (parts[5:7] if d[0] == "F" else parts[1:3]))
        limit = table.get(case, 49 if case == "TF32-F" else None)
        if limit is not None:
            ratios.setdefault((case, p * q <= limit), []).append(via / direct)
    assert {c for c, _ in ratios} == {*table, "TF32-F"}
    for (case, sent), values in ratios.items():
        if case == "TF32-F":
            assert not sent or geomean(values) >= 0.95, values
        else:
            assert (geomean(values) < 1.0) == sent, (case, sent, values)
    one = ConvProblem(n=32, c=1024, k=256, in_spatial=(14, 14), filter=(1, 1))
    bwd = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    assert bwd.is_applicable(as_case(one, "B", "FP16"), SM90)
    assert not bwd.is_applicable(as_case(replace(one, in_spatial=(56, 56)), "B", "FP16"), SM90)
    assert not bwd.is_applicable(as_case(replace(one, c=8), "B", "FP16"), SM90)
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    assert not fwd.is_applicable(as_case(one, "F", "FP16"), SM90)  # 14x14: forward keeps NCHW
    assert fwd.is_applicable(as_case(replace(one, in_spatial=(7, 7)), "F", "FP16"), SM90)


def _h100_tuning_logs() -> dict[str, dict[str, float]]:
    """{key: {solver: fastest ms}} over the H100 tuning runs' logs (bench/results/tune_sm9084):
    what dbs/sm9084's records held before the H200 re-tuned some of them (run 23)."""
    out: dict[str, dict[str, float]] = {}
    for log in sorted((RESULTS / "tune_sm9084").glob("*.tune.json.gz")):
        run = json.loads(gzip.decompress(log.read_bytes()))
        if "H100" not in str(run.get("device")):
            continue
        for t in run["timings"]:
            if t.get("time_ms") is None:  # a candidate that failed
                continue
            times = out.setdefault(t["key"], {})
            times[t["solver"]] = min(times.get(t["solver"], math.inf), t["time_ms"])
    return out


def test_few_channel_table_is_what_the_committed_runs_measured() -> None:
    """VIA_NCHW_FEW_C lists the first layer's backward-weights cases whose NCHW kernel took
    under 0.7 of the NHWC kernel's time (FP32X3 and IEEE FP32 did not), and that with the
    transposes (the H100's batch-32 tuning runs) took under 0.9 of it (TF32 did not)."""
    run = json.loads((RESULTS / "triton_kernels_first_layer_w_h100.json").read_text())
    ms = {(r["type"], r["layout"]): r["ours_ms"] for r in run["rows"]}
    share = {f"{t}-W": ms[(t, "NCHW")] / ms[(t, "NHWC")] for t, _ in ms}
    kernels = {c for c, v in share.items() if v < 0.7}
    records = _h100_tuning_logs()
    key = "64-112-112-7x7-3-224-224-32-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-{}-W{}"
    names = {"FP16": ("FP16", "", ""), "BF16": ("BF16", "", ""), "TF32": ("FP32", "_tf32", "Tf32")}
    with_transposes = set()
    for t, (stored, suffix, infix) in names.items():
        times = records[key.format(stored, suffix)]
        if times[f"ConvTritonImplicitGemm{infix}ViaNchwWrw"] < \
                0.9 * times[f"ConvTritonImplicitGemm{infix}Wrw"]:
            with_transposes.add(f"{t}-W")
    listed_w = {c for c in spec.VIA_NCHW_FEW_C["sm90"] if c.endswith("-W")}
    assert kernels & with_transposes == listed_w
    first = replace(FIRST, direction="W", in_layout="NHWC", wei_layout="NHWC",
                    out_layout="NHWC")
    sizes = {"C": 3, "R": 7, "S": 7, "P": 112, "Q": 112}
    assert spec.via_other_layout("sm90", "NHWC", "FP16-W", sizes)
    assert not spec.via_other_layout("sm90", "NHWC", "FP32-W", sizes)
    assert not spec.via_other_layout("sm90", "NCHW", "FP16-W", sizes)
    wrw = get_solver("ConvTritonImplicitGemmViaNchwWrw")
    for t in ("FP16", "BF16"):
        assert wrw.is_applicable(replace(first, in_type=t, wei_type=t, out_type=t), SM90)
    assert not wrw.is_applicable(replace(first, in_type="FP32", wei_type="FP32",
                                         out_type="FP32"), SM90)


def test_applies_to_listed_nchw_cases_on_listed_kinds_only() -> None:
    bwd = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    wrw = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    for t in ("FP16", "BF16", "FP32"):
        assert bwd.is_applicable(as_case(LAYER, "B", t), SM90)
        assert wrw.is_applicable(as_case(LAYER, "W", t), SM90)
        assert not bwd.is_applicable(as_case(LAYER, "B", t, "NHWC"), SM90)
    # Few channels (the first layer) stay on the NCHW kernels; 1x1 filters do in FP16 and
    # BF16, not in FP32.
    assert not bwd.is_applicable(as_case(FIRST, "B", "FP16"), SM90)
    one = replace(LAYER, filter=(1, 1), pad=(0, 0))
    assert wrw.is_applicable(as_case(one, "W", "FP32"), SM90)
    assert not wrw.is_applicable(as_case(one, "W", "FP16"), SM90)
    assert not bwd.is_applicable(as_case(LAYER, "F", "FP16"), SM90)
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    assert fwd.is_applicable(as_case(LAYER, "F", "FP16"), SM90)
    assert not fwd.is_applicable(as_case(LAYER, "F", "FP32"), SM90)  # FP32 forward: NCHW kernel
    # No measurement on the AMD kinds or sm80: the NCHW kernels stay alone there.
    for other in ("gfx942-304", "sm80-108"):
        assert not bwd.is_applicable(as_case(LAYER, "B", "FP16"), Target.parse(other))
    # Transposed convolutions are taken as their plain convolution's opposite direction;
    # grouped backward data is, as in the other directions (the group is the kernels' program
    # axis 1).
    assert wrw.is_applicable(replace(as_case(LAYER, "W", "FP16"), mode="trans"), SM90)
    assert bwd.is_applicable(replace(as_case(LAYER, "F", "FP16"), mode="trans"), SM90)
    assert not bwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), mode="trans"), SM90)
    assert fwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), mode="trans"), SM90)
    assert bwd.is_applicable(replace(as_case(LAYER, "B", "FP16"), groups=2), SM90)


def test_the_nhwc_solvers_objects_and_parameters() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    nhwc = get_solver("ConvTritonImplicitGemmWrw")
    p = as_case(LAYER, "W", "FP16")
    q = as_case(LAYER, "W", "FP16", "NHWC")
    params = via.default_params(p, SM90)
    assert params == nhwc.default_params(q, SM90)
    assert via.compile_job(p, params, SM90) == nhwc.compile_job(q, params, SM90)
    assert via.param_space(p, SM90) == nhwc.param_space(q, SM90)
    assert via.ranking_name == nhwc.name
    # The package adds one transpose object per element type and tile, nothing else.
    jobs = via.dynamic_jobs(SM90)
    assert sorted(j.kernel_name for j in jobs) == ["transpose_021"] * 3 * len(
        spec.TRANSPOSE_TILES)
    assert len(set(jobs)) == len(jobs)
    assert via.dynamic_jobs(Target.parse("gfx942-304")) == []


def test_backward_data_transposes_in_and_out() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    slots = via.workspace_slots(p, params)
    total = via.workspace_for(p, params)
    elem = 2
    sizes = {"ws_x": 32 * 128 * 28 * 28 * elem, "ws_w": 128 * 128 * 9 * elem,
             "ws_y": 32 * 128 * 28 * 28 * elem, "ws_part": 0}
    ends = sorted((slots[s], slots[s] + sizes[s]) for s in sizes)
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:], strict=False))  # no overlap
    assert all(off % 256 == 0 for off in slots.values()) and ends[-1][1] <= total
    ins = via.lead_ins(p, params, SM90)
    assert [(launch.pointer_args()[:2], plain(launch)) for _, launch in ins] == [
        (["w", "ws_w"], {"B": 128, "R": 128, "S": 9}),
        (["dy", "ws_y"], {"B": 32, "R": 128, "S": 784})]
    main = via.launch(p, params)
    assert main.kernel_name == "conv2d_bwd_data" and main.workspace_bytes == total
    assert main.pointer_args()[:4] == ["ws_x", "ws_w", "ws_y", "ws_part"]
    (_, out), = via.follow_ups(p, params, SM90)
    assert out.kernel_name == "transpose_021" and out.pointer_args()[:2] == ["ws_x", "dx"]
    assert plain(out) == {"B": 32, "R": 784, "S": 128}  # [n][pixels][c] -> [n][c][pixels]


def test_each_transpose_takes_the_tile_of_its_shape() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    (wjob, w), (yjob, y) = via.lead_ins(p, params, SM90)
    # KCRS [128][128][9] -> KRSC: nine taps a row, the tall tile; so is dy [32][128][784] in
    # a 16-bit type, and the square tile in FP32.
    assert "-DBLOCK_R=128" in wjob.options and "-DBLOCK_S=16" in wjob.options
    assert w.grid == (1, 1, 128)
    assert yjob == wjob and y.grid == (49, 1, 32)
    (_, _), (yjob32, y32) = via.lead_ins(as_case(LAYER, "B", "FP32"), params, SM90)
    assert "-DBLOCK_R=64" in yjob32.options and y32.grid == (13, 2, 32)
    assert spec.transpose_tile(3, 224 * 224, 2) == (16, 128)  # the first layer's 3 channels
    assert spec.transpose_tile(224 * 224, 3, 4) == (128, 16)
    assert spec.transpose_tile(64, 3136, 2) == (16, 128)
    jobs = via.dynamic_jobs(SM90)
    assert wjob in jobs and yjob32 in jobs


def test_a_transpose_too_big_for_the_grid_either_way_is_not_taken() -> None:
    """The output goes back [n][pixels][c] -> [n][c][pixels]: its grid's rows are the pixels,
    which must fit as well as the channels of the copy in."""
    big = replace(LAYER, n=1, c=16, k=16, in_spatial=(4096, 4096))
    bwd = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    assert not bwd.is_applicable(as_case(big, "B", "FP16"), SM90)
    assert bwd.is_applicable(as_case(replace(big, in_spatial=(512, 512)), "B", "FP16"), SM90)
    assert spec.transpose_fits(1, 16, 4096 * 4096, 2) is False
    assert spec.transpose_fits(1, 4096 * 64, 16, 2) is True  # the tall tile's 128 rows


def test_one_by_one_weights_are_read_where_they_are() -> None:
    """KCRS and KRSC are the same bytes for a 1x1 filter: no copy, no workspace for it."""
    one = replace(LAYER, filter=(1, 1), pad=(0, 0))
    p = as_case(one, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    slots = via.workspace_slots(p, params)
    assert "ws_w" not in slots and {"ws_x", "ws_y"} <= set(slots)
    (_, only), = via.lead_ins(p, params, SM90)
    assert only.pointer_args()[:2] == ["dy", "ws_y"]
    assert via.launch(p, params).pointer_args()[:3] == ["ws_x", "w", "ws_y"]
    # Backward weights of a 1x1 filter write the caller's dw: nothing follows the kernel.
    wrw = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    q = as_case(one, "W", "FP16")
    assert wrw.follow_ups(q, params, SM90) == ()
    assert wrw.launch(q, params).pointer_args()[:3] == ["ws_x", "dw", "ws_y"]
    assert "ws_w" not in wrw.workspace_slots(q, params)


def test_a_split_reduction_writes_the_nchw_output_itself() -> None:
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    p = as_case(LAYER, "W", "FP32")
    params = (64, 64, 32, 8, 4, 4, 2)
    slots = via.workspace_slots(p, params)
    assert "ws_w" not in slots  # no NHWC copy of dw: the reduce writes dw
    main = via.launch(p, params)
    assert main.pointer_args()[:4] == ["ws_x", "dw", "ws_y", "ws_part"]
    (job, reduce), = via.follow_ups(p, params, SM90)
    assert job.kernel_name == "conv2d_bwd_weight_reduce"
    assert reduce.pointer_args()[:2] == ["ws_part", "dw"]
    # KCRS strides of the NCHW problem's dw, in the partials' order (r, s, k, c).
    assert [reduce.scalars()[k] for k in ("swk", "swc", "swr", "sws")] == [3, 1, 128 * 9, 9]
    assert slots["ws_part"] + 4 * 128 * 128 * 9 * 4 <= via.workspace_for(p, params)


def test_one_call_runs_transposes_kernel_and_transpose_back_in_the_workspace(
        monkeypatch, tmp_path) -> None:  # noqa: ANN001
    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[via])
    p = as_case(LAYER, "B", "FP16")
    params = (128, 64, 64, 8, 1, 4, 4)
    inv = make_invoker(h, p, via, params=params)
    assert inv.workspace_bytes == via.workspace_for(p, params)
    assert inv.alignment == (("workspace", 16),)
    launches, ptrs = run_recorded(backend, inv)
    ws = ptrs["workspace"]
    assert [r.kernel for r in launches] == ["transpose_021", "transpose_021",
                                            "conv2d_bwd_data", "transpose_021"]
    slots = via.workspace_slots(p, params)
    first, second, conv, last = (dict(r.args) for r in launches)
    assert first["ptr:w"] == ptrs["w"] and first["ptr:ws_w"] == ws + slots["ws_w"]
    assert second["ptr:dy"] == ptrs["y"] and second["ptr:ws_y"] == ws + slots["ws_y"]
    assert conv["ptr:ws_x"] == ws + slots["ws_x"]
    assert last["ptr:dx"] == ptrs["x"]


def test_the_miss_ranking_puts_them_first_in_their_cases() -> None:
    model = load_model()

    def first(p: ConvProblem, tf32: bool = False) -> str:
        solvers = [s for s in SOLVERS if s.is_applicable(p, SM90)
                   and (tf32 or s.math != "tf32")]
        return rank_candidates(p, SM90, solvers, lambda s, q: True, model=model)[0].solver.name

    # Backward weights of 3x3 stride-1 filters go to Winograd (tests/unit/
    # test_triton_winograd.py); with a stride they stay with the implicit GEMM.
    strided = replace(LAYER, stride=(2, 2))
    assert first(as_case(strided, "W", "FP32")) == "ConvTritonImplicitGemmViaNhwcWrw"
    assert first(as_case(LAYER, "B", "BF16")) == "ConvTritonImplicitGemmViaNhwcBwd"
    assert first(as_case(LAYER, "B", "FP32"), tf32=True) == "ConvTritonImplicitGemmTf32ViaNhwcBwd"
    # TF32 backward weights stay on the NCHW kernel, which still ranks first; in NHWC they go
    # through it.
    assert first(as_case(strided, "W", "FP32"), tf32=True) == "ConvTritonImplicitGemmTf32Wrw"
    assert first(as_case(strided, "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonImplicitGemmTf32ViaNchwWrw"
    assert first(as_case(LAYER, "W", "FP16", "NHWC")) == "ConvTritonImplicitGemmWrw"
    assert first(as_case(LAYER, "W", "FP32")) == "ConvTritonWinogradTf32x3Wrw"
    # TF32 Winograd ranks first up to 14x14 outputs: at 28x28 the Via solver stays first.
    assert first(as_case(replace(LAYER, in_spatial=(14, 14)), "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonWinogradTf32Wrw"
    assert first(as_case(LAYER, "W", "FP32", "NHWC"), tf32=True) == \
        "ConvTritonImplicitGemmTf32ViaNchwWrw"


def test_nhwc_tf32_backward_weights_run_the_nchw_kernel() -> None:
    via = get_solver("ConvTritonImplicitGemmTf32ViaNchwWrw")
    nchw = get_solver("ConvTritonImplicitGemmTf32Wrw")
    p = as_case(LAYER, "W", "FP32", "NHWC")
    q = as_case(LAYER, "W", "FP32")
    assert via.is_applicable(p, SM90) and not via.is_applicable(q, SM90)
    assert not via.is_applicable(as_case(replace(LAYER, filter=(1, 1), pad=(0, 0)), "W", "FP32",
                                     "NHWC"), SM90)
    params = via.default_params(p, SM90)
    assert params == nchw.default_params(q, SM90)
    assert via.compile_job(p, params, SM90) == nchw.compile_job(q, params, SM90)
    ins = via.lead_ins(p, params, SM90)
    # NHWC [n][pixels][c] -> NCHW [n][c][pixels], for x and dy.
    assert [(launch.pointer_args()[:2], plain(launch)) for _, launch in ins] == [
        (["x", "ws_x"], {"B": 32, "R": 784, "S": 128}),
        (["dy", "ws_y"], {"B": 32, "R": 784, "S": 128})]
    split = (64, 64, 32, 8, 4, 4, 3)
    (_, reduce), = via.follow_ups(p, split, SM90)
    # The reduce writes dw in KRSC, the caller's layout, walking the partials' (r, s, k, c).
    assert [reduce.scalars()[k] for k in ("swk", "swc", "swr", "sws")] == [3 * 128, 128,
                                                                            9 * 128, 1]
    (_, back), = via.follow_ups(p, (64, 64, 32, 8, 1, 4, 3), SM90)
    # KCRS [k][c][taps] -> KRSC [k][taps][c].
    assert back.pointer_args()[:2] == ["ws_w", "dw"]
    assert plain(back) == {"B": 128, "R": 128, "S": 9}


def test_a_split_forward_via_nhwc_reduces_partials_in_their_channels_last_order() -> None:
    """The NHWC kernel of a Via forward writes its partials in NHWC order, (n, p, q, k); the
    reduce walks them so and stores into the caller's NCHW output with its strides."""
    via = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    p = as_case(ConvProblem(n=1, c=1024, k=256, in_spatial=(14, 14), filter=(1, 1)), "F", "FP16")
    (_, reduce), = via.follow_ups(p, (64, 32, 64, 8, 4, 4, 3), SM90)
    v = reduce.scalars()
    assert (v["TOTAL"], v["C"], v["R"], v["S"], v["SPLIT_K"]) == (256 * 14 * 14, 14, 14, 256, 4)
    assert [v[k] for k in ("swk", "swc", "swr", "sws")] == [256 * 14 * 14, 14, 1, 14 * 14]
    # The NCHW solver's own split reduces NCHW-ordered partials.
    (_, own), = get_solver("ConvTritonImplicitGemmFwd").follow_ups(
        p, (64, 32, 64, 8, 4, 4, 3), SM90)
    assert [own.scalars()[k] for k in ("C", "R", "S", "sws")] == [256, 14, 14, 1]


def test_every_object_of_a_call_is_named_for_precompiles_and_closures(tmp_path) -> None:  # noqa: ANN001
    from miopenkernels.builder.closure import required_kernels
    from miopenkernels.solvers import launch_jobs

    via = get_solver("ConvTritonImplicitGemmViaNhwcBwd")
    p = as_case(LAYER, "B", "FP16")
    params = via.default_params(p, SM90)
    jobs = launch_jobs(via, p, params, SM90)
    assert jobs[0] == via.compile_job(p, params, SM90)
    assert {j.kernel_name for j in jobs[1:]} == {"transpose_021"}
    fdb = tmp_path / "sm9084.HIP.fdb.txt"
    fdb.write_text(f"{p.key()}=ConvTritonImplicitGemmViaNhwcBwd:0.1,0,"
                   "miopenConvolutionBwdDataAlgoImplicitGEMM\n")
    (req,) = required_kernels(SM90, fdb, None)
    assert req.solver == via.name and set(req.companions) == set(jobs[1:])


def test_odd_channels_go_through_padded_copies() -> None:
    """An NCHW problem whose NHWC form misses the aligned objects' assumption (16-bit channel
    counts not multiples of 8: RetinaNet's 819-filter head) is relaid with its channels
    rounded up (the copies' new channels zero), so that the NHWC kernel's aligned object runs:
    its generic object is what made these 22-45x cuDNN. FP32 (no padded copies) and grouped
    ones stay on the NCHW kernel."""
    from miopenkernels.solvers.triton_conv_relayout import padded_nhwc, via_layout

    head = ConvProblem(n=32, c=256, k=819, in_spatial=(100, 136), filter=(3, 3), pad=(1, 1))
    even = replace(head, k=816)
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
    for d in ("F", "B", "W"):
        via = get_solver(f"ConvTritonImplicitGemmViaNhwc{suffix[d]}")
        for t in ("FP16", "BF16"):
            assert via_layout(as_case(even, d, t), SM90, "ieee") == "NHWC"
            assert padded_nhwc(as_case(even, d, t)) is None
            assert via_layout(as_case(head, d, t), SM90, "ieee") == "NHWC"
            q = padded_nhwc(as_case(head, d, t))
            assert q is not None and (q.c, q.k, q.in_layout) == (256, 824, "NHWC")
            assert via.is_applicable(as_case(head, d, t), SM90)
            params = via.default_params(as_case(head, d, t), SM90)
            inner = get_solver(f"ConvTritonImplicitGemm{suffix[d]}")
            assert via.compile_job(as_case(head, d, t), params, SM90) == \
                inner.compile_job(q, params, SM90)
        # FP32 has no padded copies: the NCHW kernel, which no longer gives way, ranks first.
        fp32 = replace(as_case(head, d, "FP32"), direction=d)
        if d != "F":  # FP32 forward is no Via case
            assert via_layout(fp32, SM90, "ieee") is None
    grouped = replace(as_case(head, "B", "FP16"), c=258, k=822, groups=2)
    assert padded_nhwc(grouped) is None and via_layout(grouped, SM90, "ieee") is None


def test_padded_copies_in_and_out() -> None:
    """Backward weights of the 819-filter head at the default split: dy [n][819][pixels] into
    [n][pixels][824] (zero beyond 819), x into NHWC unpadded (256 channels), the padded
    problem's reduce into the padded dw's workspace part, and dw's real filters and channels
    back into KCRS; forward reads w [819][256][9] into [824][9][256]."""
    head = as_case(ConvProblem(n=32, c=256, k=819, in_spatial=(100, 136), filter=(3, 3),
                           pad=(1, 1)), "W", "FP16")
    via = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    params = via.default_params(head, SM90)
    split = int(params[4])
    slots, total = via._layout(head, params)
    assert {"ws_x", "ws_y", "ws_w", "ws_part"} <= set(slots)
    ins = {launch.pointer_args()[0]: launch.scalars() for _, launch in
           via.lead_ins(head, params, SM90)}
    pix = 100 * 136
    assert ins["dy"] == {"B": 32, "R": 819, "S": pix, "SRC_S": pix, "DST_B": 32, "DST_R": 824}
    assert ins["x"] == {"B": 32, "R": 256, "S": pix, "SRC_S": pix, "DST_B": 32, "DST_R": 256}
    steps = via.follow_ups(head, params, SM90)
    assert len(steps) == (2 if split > 1 else 1)
    back = steps[-1][1]
    assert back.pointer_args()[:2] == ["ws_w", "dw"]
    # Padded KRSC [824][9][256] -> KCRS [819][256][9]: rows of 256 channels, 819 filters.
    assert back.scalars() == {"B": 819, "R": 9, "S": 256, "SRC_S": 256, "DST_B": 819,
                              "DST_R": 9}
    if split > 1:
        reduce = steps[0][1]
        assert "ws_w" in reduce.pointer_args() and "dw" not in reduce.pointer_args()
    assert total >= 824 * 9 * 256 * 2 + 32 * pix * (824 + 256) * 2
    fwd = get_solver("ConvTritonImplicitGemmViaNhwcFwd")
    f = replace(head, direction="F")
    ins = {launch.pointer_args()[0]: launch.scalars() for _, launch in
           fwd.lead_ins(f, fwd.default_params(f, SM90), SM90)}
    assert ins["w"] == {"B": 819, "R": 256, "S": 9, "SRC_S": 9, "DST_B": 824, "DST_R": 256}
    (_, out), = fwd.follow_ups(f, fwd.default_params(f, SM90), SM90)
    assert out.pointer_args()[:2] == ["ws_y", "y"]
    assert out.scalars() == {"B": 32, "R": pix, "S": 819, "SRC_S": 824, "DST_B": 32,
                             "DST_R": pix}


def test_few_channel_backward_data_is_what_the_zoo_runs_measured() -> None:
    """FP16-B in VIA_NCHW_FEW_C: over the zoo's few-channel layers (dx of fewer than 16
    channels) that the NCHW run put on the NCHW implicit GEMM (all at a stride: the few-channel
    kernel's), that kernel took under 0.5 of the NHWC run's time (geomean); forward, not
    listed, did not (above 0.7). At stride 1 the padded solver keeps them."""
    nchw = json.loads((RESULTS / "zoo_h200-nchw-57b2c95.json").read_text())["rows"]
    nhwc = json.loads((RESULTS / "zoo_h200-nhwc-57b2c95.json").read_text())["rows"]

    def share(direction: str) -> tuple[int, float]:
        own = {(r["network"], r["layer"]): r for r in nchw
               if r.get("ratio") and r["case"] == f"FP16-{direction}-NCHW"}
        values = []
        for r in nhwc:
            o = own.get((r["network"], r["layer"]))
            if not r.get("ratio") or r["case"] != f"FP16-{direction}-NHWC" or o is None:
                continue
            channels = int(r["key"].split("-")[0 if direction == "F" else 4])
            if channels < spec.VIA_NHWC_MIN_C and o["solver"].startswith("ConvTritonImplicitGemm"):
                values.append(o["ours_gpu_ms"] / r["ours_gpu_ms"])
        assert len(values) >= 15
        return len(values), geomean(values)

    # The spec comment's figures: 0.34 over 19 stems, forward 0.77.
    layers, b = share("B")
    assert (layers, round(b, 2)) == (19, 0.34) and "FP16-B" in spec.VIA_NCHW_FEW_C["sm90"]
    assert round(share("F")[1], 2) == 0.77 and "FP16-F" not in spec.VIA_NCHW_FEW_C["sm90"]
    bwd = get_solver("ConvTritonImplicitGemmViaNchwBwd")
    stem = replace(as_case(FIRST, "B", "FP16", "NHWC"))
    assert bwd.is_applicable(stem, SM90)
    assert not bwd.is_applicable(as_case(LAYER, "B", "FP16", "NHWC"), SM90)
    assert not bwd.is_applicable(as_case(FIRST, "B", "FP32", "NHWC"), SM90)
    one = replace(stem, stride=(1, 1))
    assert not bwd.is_applicable(one, SM90)
    assert get_solver("ConvTritonImplicitGemmPaddedBwd").is_applicable(one, SM90)
    assert ranks_first(get_solver("ConvTritonImplicitGemmPaddedBwd"), one, SM90)
    assert ranks_first(bwd, stem, SM90)
    # The NCHW kernel there is the few-channel one; dx comes back into the caller's NHWC.
    params = bwd.default_params(stem, SM90)
    assert bwd.launch(stem, params).kernel_name == "conv2d_bwd_data_smallc"
    (_, out), = bwd.follow_ups(stem, params, SM90)
    assert out.kernel_name == "transpose_021" and out.pointer_args()[:2] == ["ws_x", "dx"]
    assert plain(out) == {"B": 32, "R": 3, "S": 224 * 224}  # [n][c][pixels] -> [n][pixels][c]
