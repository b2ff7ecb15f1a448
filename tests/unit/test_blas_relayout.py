"""solvers/blas_relayout.py without a GPU: channel-planar backward weights of a 1x1 layer as
the transposes into the workspace and the channels-last twin's library call, run on numpy
(the transpose kernel's [b][r][s] -> [b][s][r] and cuBLAS's column-major product) against the
float64 reference; applicability; where it ranks first."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from blas_doubles import _Backend, _Blas, emulate
from miopenkernels.backends import cublas
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    BLAS_SOLVERS,
    IM2COL_SOLVERS,
    KN2ROW_BLAS_SOLVERS,
    SOLVERS,
    VIA_BLAS_SOLVERS,
    blas_1x1,
    library_solvers,
    ranks_first,
)
from miopenkernels.solvers._conv import channels_last_twin
from miopenkernels.solvers.blas_1x1 import GemmCall, gemm_call
from miopenkernels.solvers.blas_relayout import ConvBlasGemm1x1ViaNhwc
from miopenkernels.solvers.reference import conv_inputs, conv_reference, conv_tensor_shapes
from miopenkernels.solvers.triton_1x1 import gemm1x1_first
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
VIA = ConvBlasGemm1x1ViaNhwc()


def _problem(dims: int = 2, mode: str = "conv", **kw: Any) -> ConvProblem:
    lay = "NCHW" if dims == 2 else "NCDHW"
    args: dict[str, Any] = dict(n=3, c=6, k=10, in_spatial=(5, 7) if dims == 2 else (3, 4, 5),
                                filter=(1,) * dims, direction="W", in_layout=lay,
                                wei_layout=lay, out_layout=lay, mode=mode)
    args.update(kw)
    return ConvProblem(**args)


def _arg(launch: Any, name: str) -> Any:
    return next(a.value for a in launch.args if a.name == name)


def _transpose(launch: Any, buffers: dict[str, np.ndarray]) -> None:
    """transpose_021 as its launch says: [B][R][S] (rows SRC_S apart) -> [B][S][R]."""
    src = next(a.kind[4:] for a in launch.args if a.name == "src_ptr")
    dst = next(a.kind[4:] for a in launch.args if a.name == "dst_ptr")
    b, r, s = (_arg(launch, n) for n in ("B", "R", "S"))
    assert _arg(launch, "SRC_S") == s and (_arg(launch, "DST_B"), _arg(launch, "DST_R")) == (b, r)
    buffers[dst] = buffers[src][:b * r * s].reshape(b, r, s).transpose(0, 2, 1).ravel().copy()


def _made_call(blas: _Blas, call: Any) -> GemmCall:
    """Run a prepared library call whose slots' addresses stand for the buffers of their
    names, and read back the GEMM the library got, its operands named by those slots."""
    address = {name: 0x1000 * (i + 1) for i, name in enumerate(call.slots)}
    for name, value in address.items():
        call.set(name, value)
    call(0)
    got = blas.gemms[-1]
    by_address = {v: k for k, v in address.items()}
    return GemmCall(bool(got[1]), bool(got[2]), got[3], got[4], got[5], by_address[got[7]],
                    got[9], got[10], by_address[got[11]], got[13], got[14],
                    by_address[got[16]], got[18], got[19], got[20])


@pytest.mark.parametrize(("dims", "mode"), list(itertools.product((2, 3), ("conv", "trans"))))
def test_copies_and_call_compute_the_weights(monkeypatch: pytest.MonkeyPatch, dims: int,
                                             mode: str) -> None:
    p = _problem(dims, mode)
    assert VIA.is_applicable(p, SM90) and gemm_call(p) is None
    tensors = conv_inputs(p, np.random.default_rng(11))
    buffers = {name: np.asarray(t, dtype=np.float64).ravel().copy()
               for name, t in tensors.items()}
    for _, launch in VIA.lead_ins(p, (), SM90):
        _transpose(launch, buffers)
    blas = _Blas()
    monkeypatch.setattr(cublas, "load", lambda: blas)
    call = VIA.library_launch(_Backend(), p)
    assert set(call.slots) == {"ws_x", "ws_dy", "dw"}
    replay = _made_call(blas, call)
    twin = gemm_call(channels_last_twin(p))
    assert twin is not None
    assert (replay.m, replay.n, replay.k, replay.batch) == (twin.m, twin.n, twin.k, 1)
    shapes = conv_tensor_shapes(p)
    buffers["dw"] = np.full(math.prod(shapes["dw"]), np.nan)
    emulate(replay, buffers)
    want = conv_reference(p, tensors).ravel()
    assert not np.isnan(buffers["dw"]).any()
    np.testing.assert_allclose(buffers["dw"], want, rtol=1e-12, atol=1e-12)


def test_the_workspace_holds_both_copies_aligned() -> None:
    p = _problem(n=3, c=6, k=10, in_type="FP16")  # x 3*6*35*2 = 1,260 bytes, dy 2,100
    assert VIA.workspace_slots(p, ()) == {"ws_x": 0, "ws_dy": 1280}
    assert VIA.workspace_for(p, ()) == VIA.workspace_bytes(p) == 1280 + 2304


def test_an_invoker_transposes_then_calls_with_the_copies(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Any) -> None:
    """make_invoker: the two transposes (our objects, from the store) into the workspace,
    then the library's call reading them and writing the caller's dw."""
    from find_doubles import db_env, run_recorded, triton_compiler
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle
    from miopenkernels.plan import make_invoker

    db_env(monkeypatch, tmp_path)
    blas = _Blas()
    monkeypatch.setattr(cublas, "load", lambda: blas)
    backend = NullBackend(SM90)
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[VIA])
    p = _problem(n=4, c=32, k=48, in_spatial=(7, 9), in_type="FP16")
    inv = make_invoker(h, p, VIA, params=())
    assert inv.workspace_bytes == VIA.workspace_bytes(p) and len(inv.first) == 2
    launches, ptrs = run_recorded(backend, inv)
    ws, slots = ptrs["workspace"], VIA.workspace_slots(p, ())
    first, second = (dict(r.args) for r in launches)
    assert [r.kernel for r in launches] == ["transpose_021", "transpose_021"]
    assert first["ptr:x"] == ptrs["x"] and first["ptr:ws_x"] == ws + slots["ws_x"]
    assert second["ptr:dy"] == ptrs["y"] and second["ptr:ws_dy"] == ws + slots["ws_dy"]
    got = blas.gemms[-1]
    twin = gemm_call(channels_last_twin(p))
    assert twin is not None
    where = {"ws_x": ws + slots["ws_x"], "ws_dy": ws + slots["ws_dy"], "dw": ptrs["w"]}
    names = {"x": "ws_x", "dy": "ws_dy", "dw": "dw"}
    assert (got[7], got[11], got[16]) == (where[names[twin.a]], where[names[twin.b]],
                                          where[names[twin.c]])
    # The library's scratch is its own pool's, not the invoker's workspace.
    state_ws = blas.lib.calls[-1][1][1]
    assert blas.lib.calls[-1][0] == "cublasSetWorkspace_v2" and state_ws != ws


@pytest.mark.parametrize("change", [
    dict(in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC"),  # the plain call's
    dict(direction="F"), dict(direction="B"),
    dict(filter=(3, 3), pad=(1, 1)), dict(stride=(2, 2)), dict(groups=2),
    dict(in_layout="NCHW", wei_layout="NCHW", out_layout="NHWC"),
    dict(in_type="INT8"),
])
def test_refused(change: dict[str, Any]) -> None:
    assert not VIA.is_applicable(_problem(**change), SM90)


def test_types_math_and_vendors() -> None:
    tf32 = ConvBlasGemm1x1ViaNhwc("tf32")
    assert (VIA.name, tf32.name) == ("ConvBlasGemm1x1ViaNhwcWrw", "ConvBlasGemm1x1Tf32ViaNhwcWrw")
    assert VIA.ranking_name == "ConvBlasGemm1x1Wrw"
    assert VIA.algorithm(_problem()) == "miopenConvolutionBwdWeightsAlgoGEMM"
    for t in ("FP16", "BF16", "FP32"):
        assert VIA.is_applicable(_problem(in_type=t), SM90)
    assert tf32.is_applicable(_problem(in_type="FP32"), SM90)
    assert not tf32.is_applicable(_problem(in_type="FP16"), SM90)
    assert not VIA.is_applicable(_problem(in_type="FP16"), Target("gfx90a", 104))
    assert VIA.dynamic_jobs(SM90) == [] and not {s.name for s in VIA_BLAS_SOLVERS} & \
        {s.name for s in SOLVERS}


def test_offered_with_the_library_and_first_where_the_table_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blas_1x1, "_offered", [False])
    monkeypatch.setattr(cublas, "load", lambda: _Blas())
    monkeypatch.setattr(blas_1x1, "VIA_FIRST", {"sm90": {"FP16-W-NCHW": 40}})
    # Pixels no multiple of 16: the Triton 1x1 GEMM's aligned object does not apply.
    layers = [_problem(n=32, c=256, k=64, in_spatial=(27, 27), in_type="FP16"),  # 51.2
              _problem(n=32, c=64, k=256, in_spatial=(55, 55), in_type="FP16"),
              _problem(n=32, c=1024, k=2048, in_spatial=(14, 14), in_type="FP16")]
    claimed = {(i, s.name) for i, p in enumerate(layers) for s in SOLVERS
               if s.is_applicable(p, SM90) and ranks_first(s, p, SM90)}
    assert not any(ranks_first(VIA, p, SM90) for p in layers)  # not offered in this process
    assert library_solvers(_Backend()) == [*BLAS_SOLVERS, *VIA_BLAS_SOLVERS, *KN2ROW_BLAS_SOLVERS,
                                           *IM2COL_SOLVERS]
    assert all(ranks_first(VIA, p, SM90) for p in layers)
    for i, name in claimed:  # the kernels' families give way
        assert not ranks_first(next(s for s in SOLVERS if s.name == name), layers[i], SM90)
    assert not ranks_first(VIA, _problem(n=32, c=32, k=96, in_spatial=(27, 27),  # 24
                                         in_type="FP16"), SM90)
    assert not ranks_first(VIA, _problem(n=32, c=256, k=64, in_spatial=(1, 1),
                                         in_type="FP16"), SM90)  # one pixel: one call
    assert not ranks_first(VIA, _problem(n=32, c=256, k=64, in_spatial=(27, 27),
                                         in_type="BF16"), SM90)
    # Where the Triton 1x1 GEMM's aligned object applies it keeps first place: the copies
    # took 1.26 of cuDNN where it took 1.04 (bench/first_place.py's text).
    aligned = [_problem(n=32, c=256, k=64, in_spatial=(28, 28), in_type="FP16"),
               _problem(n=32, c=1024, k=2048, in_spatial=(16, 16), in_type="FP16")]
    gemm1x1 = next(s for s in SOLVERS if s.name == "ConvTritonGemm1x1Wrw")
    for p in aligned:
        assert gemm1x1_first(p, SM90) and ranks_first(gemm1x1, p, SM90)
        assert not ranks_first(VIA, p, SM90)


def test_the_copies_table_is_what_the_committed_run_measured() -> None:
    """VIA_FIRST is what bench/first_place.py fits from the committed runs of the copies
    against the kernels (alternatives_blas_via_w_h200.json and alternatives_blas_bf16_h200.json,
    the zoo part's layers where the Triton 1x1 GEMM does not rank first): FP16 and BF16 from
    C*K/(C+K) >= 32, where the claimed layers run at most 1.1 of cuDNN's GPU time and 0.8 of
    the best kernel's."""
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    spec = importlib.util.spec_from_file_location("bench_first_place", bench / "first_place.py")
    assert spec is not None and spec.loader is not None
    first_place = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(first_place)
    runs = [first_place.load_run(first_place.RESULTS / r) for r in first_place.RUNS]
    assert first_place.tables(runs)["VIA_FIRST"] == blas_1x1.VIA_FIRST["sm90"] == \
        {"FP16-W-NCHW": 32, "BF16-W-NCHW": 32}
    fits = {c: e for d in runs for c, e in first_place.cases(d).items()}
    for case in ("FP16-W-NCHW", "BF16-W-NCHW"):
        via = fits[case]
        assert via["through_copies"] and via["layers"] > 50
        assert 0 < via["claimed"] < via["layers"]
        assert via["library"] <= min(1.1, first_place.GAIN * via["kernels"])


def _planar(direction: str, mode: str = "conv", **kw: Any) -> ConvProblem:
    return _problem(direction=direction, mode=mode, **kw)


@pytest.mark.parametrize(("direction", "mode"), list(itertools.product("FB", ("conv", "trans"))))
def test_forward_and_backward_data_through_the_copies(monkeypatch: pytest.MonkeyPatch,
                                                      direction: str, mode: str) -> None:
    """ConvBlasGemm1x1ViaNhwc{Fwd,Bwd}: what the direction reads transposed into the
    workspace, the channels-last twin's call writing the workspace's copy of the output, that
    copy transposed back into the caller's tensor, against float64."""
    p = _planar(direction, mode)
    via = ConvBlasGemm1x1ViaNhwc("ieee", p.key_direction)  # a transposed one's: the other
    assert via.is_applicable(p, SM90) and gemm_call(p) is not None
    assert via.name == "ConvBlasGemm1x1ViaNhwc" + {"F": "Fwd", "B": "Bwd"}[p.key_direction]
    read, out = {"F": ("x", "y"), "B": ("dy", "dx")}[direction]
    assert set(via.workspace_slots(p, ())) == {"ws_" + read, "ws_" + out}
    tensors = conv_inputs(p, np.random.default_rng(5))
    buffers = {name: np.asarray(t, dtype=np.float64).ravel().copy()
               for name, t in tensors.items()}
    shapes = conv_tensor_shapes(p)
    buffers[out] = np.full(math.prod(shapes[out]), np.nan)
    (_, lead), = via.lead_ins(p, (), SM90)
    _transpose(lead, buffers)
    blas = _Blas()
    monkeypatch.setattr(cublas, "load", lambda: blas)
    call = via.library_launch(_Backend(), p)
    assert set(call.slots) == {"ws_" + read, "w", "ws_" + out}
    replay = _made_call(blas, call)
    assert replay.batch == 1  # one call over every image's pixels
    buffers["ws_" + out] = np.full(math.prod(shapes[out]), np.nan)
    emulate(replay, buffers)
    (_, back), = via.follow_ups(p, (), SM90)
    _transpose(back, buffers)
    want = conv_reference(p, tensors).ravel()
    assert not np.isnan(buffers[out]).any()
    np.testing.assert_allclose(buffers[out], want, rtol=1e-12, atol=1e-12)


def test_an_invoker_copies_calls_and_copies_back(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Any) -> None:
    """make_invoker on the forward solver: x's transpose, the call writing the workspace's
    copy of y, then its transpose into the caller's y (the invoker's follow-up)."""
    from find_doubles import db_env, run_recorded, triton_compiler
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle
    from miopenkernels.plan import make_invoker

    db_env(monkeypatch, tmp_path)
    blas = _Blas()
    monkeypatch.setattr(cublas, "load", lambda: blas)
    via = ConvBlasGemm1x1ViaNhwc("ieee", "F")
    backend = NullBackend(SM90)
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[via])
    p = _planar("F", n=4, c=32, k=48, in_spatial=(7, 9), in_type="FP16")
    inv = make_invoker(h, p, via, params=())
    assert len(inv.first) == 1 and len(inv.then) == 1
    launches, ptrs = run_recorded(backend, inv)
    ws, slots = ptrs["workspace"], via.workspace_slots(p, ())
    into, back = (dict(r.args) for r in launches)
    assert into["ptr:x"] == ptrs["x"] and into["ptr:ws_x"] == ws + slots["ws_x"]
    assert back["ptr:ws_y"] == ws + slots["ws_y"] and back["ptr:y"] == ptrs["y"]
    got = blas.gemms[-1]
    assert ws + slots["ws_y"] == got[16] and ptrs["w"] in (got[7], got[11])


def test_misaligned_planes_go_through_the_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """VIA_MISALIGNED: where BLAS_FIRST gives the library a 16-bit channel-planar forward or
    backward-data problem whose planes are not whole 16-byte vectors and C*K/(C+K) >= 150,
    the copies' solver ranks first and the per-image call does not; elsewhere the per-image
    call keeps it."""
    monkeypatch.setattr(blas_1x1, "_offered", [True])
    assert blas_1x1.VIA_MISALIGNED["sm90"] == {"FP16-F-NCHW": 150, "FP16-B-NCHW": 150,
                                               "BF16-F-NCHW": 150, "BF16-B-NCHW": 150}
    for d, direct in (("F", BLAS_SOLVERS[0]), ("B", BLAS_SOLVERS[1])):
        via = ConvBlasGemm1x1ViaNhwc("ieee", d)
        deeplab = _planar(d, n=32, c=1024, k=2048, in_spatial=(65, 65), in_type="FP16")
        assert ranks_first(via, deeplab, SM90) and not ranks_first(direct, deeplab, SM90)
        assert blas_1x1.blas_first(deeplab, SM90)  # the kernels' families give way
        for other in (replace_of(deeplab, in_spatial=(64, 64)),  # whole vectors
                      replace_of(deeplab, c=256, k=128),  # 85 multiply-adds an element
                      replace_of(deeplab, in_spatial=(7, 7)) if d == "F" else  # below
                      replace_of(deeplab, c=128, k=96),  # BLAS_FIRST's pixels; 55 an element
                      replace_of(deeplab, in_type="FP32", wei_type="FP32",
                                 out_type="FP32")):  # a case the table does not list
            assert not ranks_first(via, other, SM90), other.key()
        assert ranks_first(direct, replace_of(deeplab, in_spatial=(64, 64)), SM90)
        bf16 = replace_of(deeplab, in_type="BF16", wei_type="BF16", out_type="BF16")
        assert ranks_first(via, bf16, SM90) and not ranks_first(direct, bf16, SM90)
        volume = _planar(d, dims=3, n=32, c=1024, k=2048, in_spatial=(5, 13, 13),
                         in_type="FP16")  # 3-D: not measured
        assert via.is_applicable(volume, SM90) and not ranks_first(via, volume, SM90)
        one_pixel = replace_of(deeplab, in_spatial=(1, 1))
        assert not via.is_applicable(one_pixel, SM90)  # the channels-last call's bytes
        assert not via.is_applicable(replace_of(deeplab, in_layout="NHWC", wei_layout="NHWC",
                                                out_layout="NHWC"), SM90)


def replace_of(p: ConvProblem, **kw: Any) -> ConvProblem:
    from dataclasses import replace

    return replace(p, **kw)


def test_the_misaligned_table_is_what_the_estimates_say() -> None:
    """VIA_MISALIGNED's figures from the committed runs (bench/via_estimate.py): over the
    misaligned one-call layers BLAS_FIRST gives the library, from C*K/(C+K) >= 150 the route
    is estimated faster on every one (forward 27 layers 0.30-0.94, backward data 17
    0.31-0.84; 1.05 and 0.99 at most at the copies' 90% point), below it slower on most."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "bench"))
    import via_estimate

    results = root / "bench" / "results"
    runs = {"F": ["zoo_h200-fb-9ec5af9.json"],
            "B": ["zoo_h200-b-nchw-ef1efe1.json.gz", "zoo_h200-fb-9ec5af9.json"]}
    want = {"F": (27, 0.303, 0.936, 1.048), "B": (17, 0.313, 0.835, 0.985)}
    for d, suffix in (("F", "Fwd"), ("B", "Bwd")):
        found = via_estimate.estimate([str(results / r) for r in runs[d]], f"FP16-{d}", "*",
                                      "misaligned-1x1", 0.9,
                                      twin_solver="ConvBlasGemm1x1" + suffix)
        committed = json.loads((results / f"via_estimate_misaligned_{d.lower()}_h200.json")
                               .read_text())
        assert committed["layers"] == found["layers"]
        least = blas_1x1.BLAS_FIRST["sm90"][f"FP16-{d}-NCHW"]
        rows = [e for e in found["layers"] if math.prod(
            ConvProblem.from_key(e["key"]).in_spatial) >= least]
        claimed = [e for e in rows if e["channels_ratio"] >= 150]
        shares = [e["via_over_nchw"] for e in claimed]
        n, lo, hi, worst = want[d]
        assert (len(claimed), min(shares), max(shares)) == (n, lo, hi)
        assert max(e["pessimistic_over_nchw"] for e in claimed) == worst
        below = [e["via_over_nchw"] for e in rows if e["channels_ratio"] < 150]
        assert sum(s < 1 for s in below) < len(below) / 5
    for d, suffix, n, lo, hi, worst in (("F", "Fwd", 9, 0.35, 0.644, 0.719),
                                        ("B", "Bwd", 11, 0.315, 0.832, 1.053)):
        found = via_estimate.estimate(
            [str(results / "zoo_h200-bf16-every4-d10d600.json")], f"BF16-{d}", "*",
            "misaligned-1x1", 0.9, copies_case="FP16-F",
            copies_runs=[str(results / "zoo_h200-fb-9ec5af9.json")],
            twin_solver="ConvBlasGemm1x1" + suffix)
        committed = json.loads((results / f"via_estimate_misaligned_{d.lower()}_bf16_h200.json")
                               .read_text())
        assert committed["layers"] == found["layers"]
        least = blas_1x1.BLAS_FIRST["sm90"][f"BF16-{d}-NCHW"]
        claimed = [e for e in found["layers"] if e["channels_ratio"] >= 150 and math.prod(
            ConvProblem.from_key(e["key"]).in_spatial) >= least]
        shares = [e["via_over_nchw"] for e in claimed]
        assert (len(claimed), min(shares), max(shares)) == (n, lo, hi)
        assert max(e["pessimistic_over_nchw"] for e in claimed) == worst
