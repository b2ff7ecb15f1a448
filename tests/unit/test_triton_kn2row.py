"""The kn2row solvers (solvers/triton_kn2row.py): the algebra of kernels/
conv_triton_kn2row_spec.py (the flip's GEMM filters, the GEMM, the tap sum) against a direct
convolution in float64, which layers they take, and how their launches name the layer's tensors
and the workspace. Their real kernels under Triton's interpreter are in
tests/integration/test_kn2row_interpret.py; on the GPU in the GPU grid."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import (
    KN2ROW_BLAS_SOLVERS,
    SOLVERS,
    all_dynamic_jobs,
    get_solver,
    launch_jobs,
)
from miopenkernels.solvers.blas_1x1 import gemm_call
from miopenkernels.solvers.triton_kn2row import gemm_problem
from miopenkernels.target import Target

spec = pytest.importorskip("miopenkernels.kernels.conv_triton_kn2row_spec")

SM90 = Target("sm90", 132)
TF32X3 = "ConvTritonImplicitGemmTf32x3Kn2Row"


def _layer(direction: str = "B", layout: str = "NCHW", **kw: object) -> ConvProblem:
    """The SD 1.5 UNet's conv_in (4 -> 320, 3x3 at 64x64) at batch 32; its conv_out
    (320 -> 4) in forward."""
    c, k = (4, 320) if direction == "B" else (320, 4)
    p = ConvProblem(n=32, c=c, k=k, in_spatial=(64, 64), filter=(3, 3), pad=(1, 1),
                    direction=direction, in_layout=layout, wei_layout=layout,
                    out_layout=layout)
    return replace(p, **kw) if kw else p


def _direct(x: np.ndarray, w: np.ndarray, st: tuple[int, int], pad: tuple[int, int],
            dil: tuple[int, int]) -> np.ndarray:
    n, _, h, wd = x.shape
    k, _, r_, s_ = w.shape
    p_ = (h + 2 * pad[0] - dil[0] * (r_ - 1) - 1) // st[0] + 1
    q_ = (wd + 2 * pad[1] - dil[1] * (s_ - 1) - 1) // st[1] + 1
    y = np.zeros((n, k, p_, q_))
    for p, q, r, s in itertools.product(range(p_), range(q_), range(r_), range(s_)):
        ih, iw = p * st[0] - pad[0] + r * dil[0], q * st[1] - pad[1] + s * dil[1]
        if 0 <= ih < h and 0 <= iw < wd:
            y[:, :, p, q] += x[:, :, ih, iw] @ w[:, :, r, s].T
    return y


def _kn2row(direction: str, src: np.ndarray, w: np.ndarray, sizes: dict[str, int]
            ) -> np.ndarray:
    """flip (`gemm_filter_values`), GEMM (`gemm_sizes`), tap sum (`tap_values`), in numpy."""
    k, c, r_, s_ = w.shape
    v = spec.gemm_filter_values(direction, sizes, (c * r_ * s_, r_ * s_, s_, 1))
    g = spec.gemm_sizes(direction, sizes)
    dst = np.full(g["K"] * g["C"], np.nan)
    for kk, cc, r, s in itertools.product(range(k), range(c), range(r_), range(s_)):
        dst[cc * v["sdc"] + kk * v["sdk"] + (r_ - 1 - r) * v["sdr"] + (s_ - 1 - s) * v["sds"]] \
            = w[kk, cc, r, s]
    z = np.einsum("jc,nchw->njhw", dst.reshape(g["K"], g["C"]), src)
    t = spec.tap_values(direction, sizes, {"x": (0,) * 4, "y": (0,) * 4}, False)
    out = np.zeros((sizes["N"], t["KO"], t["P"], t["Q"]))
    for o, a, b, r, s in itertools.product(range(t["KO"]), range(t["P"]), range(t["Q"]),
                                           range(r_), range(s_)):
        hn = a * t["mul_h"] + t["off_h"] + r * t["step_h"]
        wn = b * t["mul_w"] + t["off_w"] + s * t["step_w"]
        if hn < 0 or wn < 0 or hn % t["div_h"] or wn % t["div_w"]:
            continue
        ih, iw = hn // t["div_h"], wn // t["div_w"]
        if ih < t["HZ"] and iw < t["WZ"]:
            out[:, o, a, b] += z[:, ((r_ - 1 - r) * s_ + (s_ - 1 - s)) * t["KO"] + o, ih, iw]
    return out


@pytest.mark.parametrize("geometry", [
    (2, 5, 7, 6, 3, 3, 3, (1, 1), (1, 1), (1, 1)),
    (1, 4, 9, 8, 2, 3, 2, (2, 1), (1, 0), (1, 2)),
    (2, 3, 8, 7, 4, 5, 3, (2, 3), (2, 1), (1, 1)),
    (1, 3, 10, 9, 2, 3, 3, (1, 2), (2, 2), (2, 1)),
])
def test_the_algebra_is_the_convolution_both_ways(geometry: tuple) -> None:
    n, c, h, wd, k, r, s, st, pad, dil = geometry
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((n, c, h, wd)), rng.standard_normal((k, c, r, s))
    y = _direct(x, w, st, pad, dil)
    sizes = {"N": n, "C": c, "H": h, "W": wd, "K": k, "P": y.shape[2], "Q": y.shape[3],
             "R": r, "S": s, "G": 1, "stride_h": st[0], "stride_w": st[1], "pad_h": pad[0],
             "pad_w": pad[1], "dil_h": dil[0], "dil_w": dil[1]}
    assert np.abs(y).max() > 1.0
    np.testing.assert_allclose(_kn2row("F", x, w, sizes), y, atol=1e-12)
    dy = rng.standard_normal(y.shape)
    dx = _kn2row("B", dy, w, sizes)  # the adjoint: <dy, conv(x)> = <dx, x>
    assert dx.shape == x.shape
    assert abs(float((dy * y).sum() - (dx * x).sum())) < 1e-9 * float(np.abs(dy * y).sum())


def test_which_layers_it_takes() -> None:
    solver = get_solver(TF32X3 + "Bwd")
    fwd = get_solver(TF32X3 + "Fwd")
    for layout in ("NCHW", "NHWC"):
        assert solver.is_applicable(_layer("B", layout), SM90)
        assert fwd.is_applicable(_layer("F", layout), SM90)
        assert solver.is_applicable(_layer("B", layout, c=8, filter=(7, 7), pad=(3, 3),
                                           stride=(2, 2)), SM90)
    for kw in ({"c": 9},  # more output channels than MAX_OUTPUT_CHANNELS
               {"k": 15},  # a reduction shorter than MIN_REDUCTION
               {"filter": (1, 1), "pad": (0, 0)},  # one tap: a plain GEMM
               {"groups": 2, "c": 4, "k": 320},
               {"in_type": "FP16", "wei_type": "FP16", "out_type": "FP16"},
               {"mode": "trans"},
               # Z of 4.9 GB, larger than MAX_Z_BYTES and than dy (147 columns from 64)
               {"in_spatial": (512, 512), "k": 64, "c": 3, "filter": (7, 7), "pad": (3, 3)},
               {"stride": (1, 1), "direction": "W"}):
        assert not solver.is_applicable(replace(_layer("B"), **kw), SM90), kw
    assert not solver.is_applicable(_layer("B"), Target("gfx906", 60))  # no matrix cores
    # The VAE encoder's 3-channel input at 512x512: a Z of 906 MB, past MAX_Z_BYTES but no
    # larger than dy (27 columns from 128); at batch 64 dy passes 32-bit offsets.
    vae = replace(_layer("B"), in_spatial=(512, 512), k=128, c=3)
    assert solver.is_applicable(vae, SM90) and not solver.is_applicable(
        replace(vae, n=64), SM90)
    # dx of 2.2G elements at stride 8 from a Z of 272 MB: past the tap sum's 32-bit offsets.
    huge = _layer("B", n=1, c=8, k=16, in_spatial=(16504, 16504), filter=(1, 2), pad=(0, 0),
                  stride=(8, 8))
    sizes = {"N": 1, "C": 8, "K": 16, "R": 1, "S": 2, "H": 16504, "W": 16504, "P": 2063,
             "Q": 2063, "G": 1}
    assert spec.z_bytes("B", sizes) < spec.MAX_Z_BYTES and not spec.applies("B", sizes)
    assert not solver.is_applicable(huge, SM90)
    assert spec.applies("B", {**sizes, "H": 4096, "W": 4096, "P": 512, "Q": 512})
    assert spec.z_bytes("B", {"N": 32, "C": 3, "K": 128, "R": 3, "S": 3, "P": 512,
                              "Q": 512, "H": 512, "W": 512}) == 905_969_664


def test_the_library_form_takes_an_input_past_32_bits() -> None:
    """ESRGAN's 64 -> 3 output at 2048x2048 in forward: from batch 8 on x passes 2**31
    elements, which the library reads with 64-bit offsets (its GEMM's sizes within 32 bits,
    Z's 906M elements and y's within the tap sum's); the implicit GEMM's forms refuse it, and
    at batch 32 Z (3.6G elements) is past the tap sum's offsets for both."""
    blas = next(s for s in KN2ROW_BLAS_SOLVERS if s.name == "ConvBlasKn2RowFwd")
    triton = get_solver(TF32X3 + "Fwd")
    for layout in ("NCHW", "NHWC"):
        esrgan = _layer("F", layout, n=8, c=64, k=3, in_spatial=(2048, 2048))
        assert blas.is_applicable(esrgan, SM90) and not triton.is_applicable(esrgan, SM90)
        call = gemm_call(gemm_problem(esrgan))
        assert call is not None and max(call.m, call.n, call.k) < 2**31
        assert not blas.is_applicable(replace(esrgan, n=32), SM90)
    sizes = {"N": 8, "C": 64, "K": 3, "R": 3, "S": 3, "H": 2048, "W": 2048, "P": 2048,
             "Q": 2048, "G": 1}
    assert spec.applies("F", sizes, wide_input=True) and not spec.applies("F", sizes)


def test_launches_name_the_layer_and_the_workspace() -> None:
    for direction, source, out in (("B", "dy", "dx"), ("F", "x", "y")):
        solver = get_solver(TF32X3 + ("Bwd" if direction == "B" else "Fwd"))
        for layout in ("NCHW", "NHWC"):
            p = _layer(direction, layout)
            params = solver.default_params(p, SM90)
            assert solver.params_valid(p, SM90, params) and params[4] == 1
            split = params[:4] + (4,) + params[5:]
            assert not solver.params_valid(p, SM90, split)  # a split needs its own workspace
            slots = solver.workspace_slots(p, params)
            assert slots == {"ws_w": 0, "ws_z": 46080}  # 36 x 320 FP32 filters, rounded
            assert solver.workspace_for(p, params) == 46080 + 32 * 64 * 64 * 36 * 4
            (flip_job, flip), = solver.lead_ins(p, params, SM90)
            assert flip.pointer_args()[:2] == ["w", "ws_w"]
            main = solver.launch(p, params)
            assert main.pointer_args()[:3] == [source, "ws_w", "ws_z"]
            assert main.workspace_bytes == solver.workspace_for(p, params)
            (tap_job, tap), = solver.follow_ups(p, params, SM90)
            assert tap.pointer_args()[:2] == ["ws_z", out]
            assert tap.grid[0] * 512 >= 32 * 4 * 64 * 64
            assert ("-DCHANNELS_LAST=1" in tap_job.options) == (layout == "NHWC")
            jobs = launch_jobs(solver, p, params, SM90)
            assert jobs[0] == get_solver("ConvTritonImplicitGemmTf32x3Fwd").compile_job(
                gemm_problem(p), params, SM90)
            assert {flip_job, tap_job} <= set(jobs)


def test_the_gemm_problem_and_the_library_call() -> None:
    q = gemm_problem(_layer("B", "NCHW"))
    assert (q.n, q.c, q.k, q.in_spatial, q.filter, q.direction) == \
        (32, 320, 36, (64, 64), (1, 1), "F")
    call = gemm_call(q)
    assert call is not None and call.batch == 32  # a per-image product in NCHW
    blas = next(s for s in KN2ROW_BLAS_SOLVERS if s.name == "ConvBlasKn2RowBwd")
    assert blas.is_applicable(_layer("B", "NHWC"), SM90)
    assert not blas.claims_first(_layer("B", "NHWC"), SM90)
    assert not blas.is_applicable(_layer("B", "NHWC"), Target("gfx942", 304))


def test_objects_the_package_ships() -> None:
    names = [s.name for s in SOLVERS if "Kn2Row" in s.name]
    assert len(names) == 6  # three GEMM maths, forward and backward data
    taps = [j for j in all_dynamic_jobs(SM90) if j.kernel_file == "conv_triton_tapsum.py"]
    assert len(taps) == 2  # FP32, each layout
    flips = [j for j in get_solver(TF32X3 + "Bwd").dynamic_jobs(SM90)
             if j.kernel_file == "conv_triton_flip.py"]
    assert len(flips) == 1 and flips[0] in get_solver("ConvTritonFmaFewKBwd").dynamic_jobs(SM90)
    assert not get_solver(TF32X3 + "Fwd").dynamic_jobs(Target("gfx906", 60))


def test_the_main_job_with_the_tap_sum_objects() -> None:
    """The README's main-job figures at cbca774 (the tap sum's objects added), from the run's
    file."""
    from pathlib import Path

    from main_job_files import main_job_times, minutes

    root = Path(__file__).resolve().parents[2]
    text = (root / "bench" / "results" / "main_job-2cpu-cbca774.txt").read_text()
    setup, build, rebuild = main_job_times("cbca774")
    assert rebuild is not None
    assert (minutes(build), minutes(setup + build), round(rebuild, 1)) == \
        ("26 min 16 s", "27 min 3 s", 7.8)
    assert "│ distinct   │ 10175 │    10175 │      0 │      0 │" in text
    readme = " ".join((root / "README.md").read_text().split())
    assert "10,175 at tree cbca774" in readme
    assert "26 min 16 s cold on the 2-core development box, 27 min 3 s with the set-up" in readme


@pytest.mark.parametrize("direction", ["B", "F"])
def test_an_invoker_runs_flip_gemm_and_tap_sum_on_the_workspace(
        direction: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """make_invoker on the null backend: the flip from the caller's filters into the
    workspace's first part, the GEMM from the layer's input into Z, the tap sum from Z into
    the caller's output, each pointer where its name says."""
    from find_doubles import db_env, run_recorded, triton_compiler
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle
    from miopenkernels.plan import make_invoker

    db_env(monkeypatch, tmp_path)  # type: ignore[arg-type]
    solver = get_solver(TF32X3 + ("Bwd" if direction == "B" else "Fwd"))
    backend = NullBackend(SM90)
    h = Handle(backend=backend, compiler=triton_compiler(), solvers=[solver])
    p = _layer(direction, n=1, in_spatial=(6, 6), **({"c": 3, "k": 16} if direction == "B"
                                                       else {"c": 16, "k": 3}))
    params = solver.default_params(p, SM90)
    inv = make_invoker(h, p, solver, params=params)
    assert inv.workspace_bytes == solver.workspace_for(p, params)
    launches, ptrs = run_recorded(backend, inv)
    assert [r.kernel for r in launches] == ["flip_filters", "conv2d_fwd", "tap_sum"]
    flip, gemm, tap = (dict(r.args) for r in launches)
    ws, slots = ptrs["workspace"], solver.workspace_slots(p, params)
    source, out = ("dy", "dx") if direction == "B" else ("x", "y")
    role = {"dy": "y", "dx": "x", "x": "x", "y": "y"}
    assert flip["ptr:w"] == ptrs["w"] and flip["ptr:ws_w"] == ws + slots["ws_w"]
    assert gemm[f"ptr:{source}"] == ptrs[role[source]]
    assert (gemm["ptr:ws_w"], gemm["ptr:ws_z"]) == (ws + slots["ws_w"], ws + slots["ws_z"])
    assert tap["ptr:ws_z"] == ws + slots["ws_z"] and tap[f"ptr:{out}"] == ptrs[role[out]]


def test_the_tap_sums_amd_resources() -> None:
    """bench/results/amd_resources_tapsum-cbca774.json: two objects an AMD matrix-core arch,
    none spilling, no LDS or scratch, the VGPRs the results README quotes."""
    import json
    from pathlib import Path

    report = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results" /
                         "amd_resources_tapsum-cbca774.json").read_text())
    rows = {arch: v["families"]["conv_triton_tapsum"] for arch, v in report["archs"].items()
            if "conv_triton_tapsum" in v["families"]}
    assert sorted(rows) == ["gfx1100", "gfx1151", "gfx1200", "gfx1201", "gfx90a", "gfx942",
                            "gfx950"]
    assert all(r["objects"] == 2 and r["spilling"] == r["sgpr_spilling"] == 0 and
               r["max_lds_bytes"] == r["max_scratch_bytes"] == 0 for r in rows.values())
    assert {rows[a]["max_vgprs"] for a in ("gfx90a", "gfx942", "gfx950")} == {37}
    assert {r["max_vgprs"] for a, r in rows.items() if a.startswith("gfx1")} == {69, 71}
    assert report["refused"] == []


def test_no_first_choice_moved() -> None:
    """bench/results/picks_sm90-132-152c0f8-2186e59.json: immediate mode's first choices before
    and after the kn2row solvers, as the results README quotes them."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    moved = json.loads((root / "bench" / "results" /
                        "picks_sm90-132-152c0f8-2186e59.json").read_text())
    assert (moved["problems"], moved["moved"], moved["changes"]) == (41526, 0, [])
    readme = " ".join((root / "bench" / "results" / "README.md").read_text().split())
    assert "picks_sm90-132-152c0f8-2186e59.json): 0 of 41,526 moved" in readme
