"""The im2col solvers (solvers/blas_im2col.py, kernels/conv_triton_im2col_spec.py) without a
GPU: the gather's arguments applied on numpy and the library's call emulated with cuBLAS's
column-major semantics give the float64 reference's output (forward) and filter gradient (few
input channels, few filters) at strides, paddings and dilations, transposed layers included;
what they refuse; their launches, workspace and objects; where they claim."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from blas_doubles import emulate
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import LIBRARY_SOLVERS, SOLVERS, all_dynamic_jobs, blas_1x1
from miopenkernels.solvers.blas_im2col import (
    _view,
    im2col_call,
    im2col_first,
    im2col_plan,
    im2col_spec,
)
from miopenkernels.solvers.reference import (
    conv_inputs,
    conv_output_name,
    conv_reference,
    conv_tensor_shapes,
)
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
SOLVER = next(s for s in LIBRARY_SOLVERS if s.name == "ConvBlasIm2colWrw")
FORWARD = next(s for s in LIBRARY_SOLVERS if s.name == "ConvBlasIm2colFwd")


def _layer(c: int = 3, k: int = 16, **kw: Any) -> ConvProblem:
    args: dict[str, Any] = dict(n=2, c=c, k=k, in_spatial=(7, 6), filter=(3, 3), pad=(1, 1),
                                direction="W", in_type="FP32", in_layout="NHWC",
                                wei_layout="NHWC", out_layout="NHWC")
    args.update(kw)
    return ConvProblem(**args)


def _solver(p: ConvProblem) -> Any:
    return next(s for s in LIBRARY_SOLVERS if s.name.startswith("ConvBlasIm2col") and
                s.math == "ieee" and s.direction == p.key_direction)


def _gather(launch: Any, buffers: dict[str, np.ndarray]) -> None:
    """The gather's element formula (kernels/conv_triton_im2col.py) on numpy, element by
    element from its launch arguments, into its destination buffer."""
    v = {a.name: a.value for a in launch.args if a.kind == "i32"}
    src_name, dst_name = launch.pointer_args()[:2]
    src = buffers[src_name]
    taps = v["T"] * v["R"] * v["S"]
    rows, cols = v["N"] * v["E"] * v["A"] * v["B"], v["U"] * taps
    col = np.full(rows * cols, np.nan)
    for i in range(rows * cols):
        j, row = i % cols, i // cols
        b, a = row % v["B"], (row // v["B"]) % v["A"]
        e, n = (row // (v["A"] * v["B"])) % v["E"], row // (v["E"] * v["A"] * v["B"])
        u, tap = (j % v["U"], j // v["U"]) if v["taps_first"] else (j // taps, j % taps)
        s, r, q = tap % v["S"], (tap // v["S"]) % v["R"], tap // (v["S"] * v["R"])
        at = {}
        for ax, o, k in (("d", e, q), ("h", a, r), ("w", b, s)):
            pos = o * v[f"mul_{ax}"] + v[f"off_{ax}"] + k * v[f"step_{ax}"]
            at[ax] = (pos // v[f"div_{ax}"], pos >= 0 and pos % v[f"div_{ax}"] == 0 and
                      pos // v[f"div_{ax}"] < v[f"{ax.upper()}S"])
        inside = all(ok for _, ok in at.values())
        col[i] = src[n * v["ssn"] + u * v["ssu"] + at["d"][0] * v["ssd"] +
                     at["h"][0] * v["ssh"] + at["w"][0] * v["ssw"]] if inside else 0.0
    buffers[dst_name] = col


def _reduce(v: dict[str, int], parts: int, partials: np.ndarray, out: np.ndarray) -> None:
    """The reduce kernel (conv2d_bwd_weight_reduce) on numpy: the parts summed, element i in
    (i0, i1, i2, i3) order of sizes (., C, R, S) stored at the strides given."""
    total = v["TOTAL"]
    sums = partials.reshape(parts, total).sum(axis=0)
    for i in range(total):
        i3, i2 = i % v["S"], (i // v["S"]) % v["R"]
        i1, i0 = (i // (v["S"] * v["R"])) % v["C"], i // (v["S"] * v["R"] * v["C"])
        out[i0 * v["swk"] + i1 * v["swc"] + i2 * v["swr"] + i3 * v["sws"]] = sums[i]


GEOMETRIES = [
    {},
    dict(k=24, in_spatial=(9, 8), filter=(6, 6), pad=(2, 2), stride=(2, 2)),
    dict(c=4, in_spatial=(8, 8), filter=(4, 4), pad=(0, 0), stride=(4, 4)),
    dict(c=2, in_spatial=(9, 7), filter=(3, 2), pad=(2, 0), stride=(2, 1), dilation=(1, 2)),
    dict(c=20, k=4),
    dict(c=16, k=3, in_spatial=(9, 8), pad=(1, 2), stride=(2, 3), dilation=(1, 2)),
    dict(c=16, k=3, mode="trans", stride=(2, 2)),
    dict(c=3, k=16, mode="trans", in_spatial=(5, 4), filter=(4, 4), stride=(2, 2)),
    dict(c=6, k=16),  # x gathered: no more channels than dy
    dict(c=24, k=24, in_spatial=(9, 8), stride=(2, 2)),
    dict(c=24, k=8, dilation=(2, 1), pad=(2, 1)),  # x gathered: dy has more than 4 channels
    dict(c=24, k=8, in_spatial=(9, 8), stride=(2, 2)),  # x gathered: a stride
    dict(direction="B", c=6, k=5),
    dict(direction="B", c=24, k=40, in_spatial=(9, 8), filter=(5, 3), pad=(2, 0),
         dilation=(1, 2)),
    dict(direction="F", c=16, k=8, mode="trans", filter=(4, 4), pad=(2, 1)),  # kernels' B
    dict(direction="F", c=6, k=5),
    dict(direction="F", c=8, k=12, in_spatial=(9, 8), filter=(5, 3), pad=(2, 0),
         stride=(2, 1), dilation=(1, 2)),
    dict(direction="F", c=3, k=16, in_spatial=(9, 8), filter=(6, 6), pad=(2, 2),
         stride=(2, 2)),
    # channel planes: a call per image (backward weights: FP32 products summed after), and
    # filters in either packed order
    *(dict(direction=d, c=c, k=k, in_layout=a, out_layout=a, wei_layout=w, in_spatial=(9, 8),
           stride=st)
      for d, c, k, st in (("F", 6, 5, (2, 1)), ("B", 6, 5, (1, 1)), ("W", 3, 16, (2, 2)),
                          ("W", 20, 4, (1, 2)), ("W", 12, 12, (1, 1)))
      for a, w in (("NCHW", "NCHW"), ("NCHW", "NHWC"), ("NHWC", "NCHW"))
      if not (d == "W" and k == 4 and a == "NHWC")),  # dy gathered: dw KRSC over the batch
    # 3-D layers (a video network's spatial, temporal and full filters), both layouts and
    # both filter orders
    *(dict(direction=d, c=c, k=k, in_layout=a, out_layout=a, wei_layout=w, in_spatial=(4, 6, 5),
           filter=f, pad=pad, stride=st, dilation=dil)
      for d, c, k, f, pad, st, dil in (
          ("F", 3, 8, (3, 3, 3), (1, 1, 1), (1, 2, 2), (1, 1, 1)),
          ("F", 6, 5, (3, 1, 1), (1, 0, 0), (2, 1, 1), (1, 1, 1)),
          ("B", 6, 5, (3, 3, 3), (2, 1, 1), (1, 1, 1), (2, 1, 1)),
          ("B", 8, 3, (1, 3, 3), (0, 1, 1), (1, 1, 1), (1, 1, 1)),
          ("W", 3, 16, (1, 3, 3), (0, 1, 1), (1, 2, 2), (1, 1, 1)),
          ("W", 12, 12, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
          ("W", 20, 4, (3, 3, 3), (1, 1, 1), (2, 1, 1), (1, 1, 1)))
      for a, w in (("NCDHW", "NCDHW"), ("NDHWC", "NDHWC"), ("NCDHW", "NDHWC"))
      if not (d == "W" and k == 4 and a == "NDHWC" and w == "NCDHW")),
    dict(direction="F", c=8, k=6, mode="trans", in_spatial=(3, 4, 4), filter=(2, 3, 3),
         pad=(1, 1, 0), stride=(1, 1, 1), dilation=(1, 1, 1), in_layout="NDHWC",
         out_layout="NDHWC", wei_layout="NDHWC"),
]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "-".join(map(str, g.values())))
def test_gather_and_call_compute_the_layer(geometry: dict[str, Any]) -> None:
    p = _layer(**geometry)
    assert _solver(p).is_applicable(p, SM90)
    tensors = conv_inputs(p, np.random.default_rng(5))
    buffers = {name: np.asarray(t, dtype=np.float64).ravel().copy()
               for name, t in tensors.items()}
    out = conv_output_name(p)
    buffers[out] = np.full(int(np.prod(conv_tensor_shapes(p)[out])), np.nan)
    for _, launch in _solver(p).lead_ins(p, (), SM90):
        _gather(launch, buffers)
    rows, cols = im2col_spec().col_shape(p.key_direction, _view(p)[1])
    assert buffers["ws_col"].size == rows * cols
    plan = im2col_plan(p)
    assert plan is not None and "ws_col" in (plan.call.a, plan.call.b)
    assert (plan.call.batch == 1) == (p.in_layout in ("NHWC", "NDHWC") and
                                      p.out_layout == p.in_layout)
    if plan.reduce:
        buffers["ws_part"] = np.full(plan.call.batch * dict(plan.reduce)["TOTAL"], np.nan)
    emulate(plan.call, buffers)
    if plan.reduce:
        _reduce(dict(plan.reduce), plan.call.batch, buffers["ws_part"], buffers[out])
    assert not np.isnan(buffers[out]).any()
    np.testing.assert_allclose(buffers[out], conv_reference(p, tensors).ravel(),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("change", [
    dict(c=20, k=4, wei_layout="NCHW"),  # dy gathered over the batch: dw[(k, r, s), C]
    dict(filter=(1, 1), pad=(0, 0)),  # one library call as it is
    dict(c=512, k=1, in_spatial=(4, 4), filter=(4, 4), pad=(0, 0)),  # a filter over the input
    dict(in_type="FP16"),  # mixed types
    dict(direction="B", stride=(2, 1)),  # backward data at a stride: mostly zeros
    dict(direction="F", mode="trans", stride=(2, 2)),  # the same as the kernels see it
    dict(c=6, k=18, groups=2),
])
def test_refused(change: dict[str, Any]) -> None:
    p = replace(_layer(), **change)
    assert not any(s.is_applicable(p, SM90) for s in LIBRARY_SOLVERS if "Im2col" in s.name)


def test_forward_of_any_channels_and_sixteen_bit_types() -> None:
    p = _layer(c=64, k=64, in_type="FP16", wei_type="FP16", out_type="FP16")
    assert FORWARD.is_applicable(replace(p, direction="F"), SM90)
    assert not FORWARD.is_applicable(replace(p, direction="F", filter=(1, 1), pad=(0, 0)), SM90)
    assert SOLVER.is_applicable(p, SM90)  # and the backward weights of any channels
    assert not SOLVER.is_applicable(replace(p, out_type="FP32"), SM90)  # mixed types
    tf32 = next(s for s in LIBRARY_SOLVERS if s.name == "ConvBlasIm2colTf32Fwd")
    assert not tf32.is_applicable(replace(p, direction="F"), SM90)
    assert tf32.is_applicable(_layer(direction="F", c=64, k=64), SM90)


def test_refused_off_nvidia_and_past_the_column_limit() -> None:
    assert not SOLVER.is_applicable(_layer(), Target("gfx942", 304))
    stem = _layer(n=32, k=32, in_spatial=(640, 640), filter=(6, 6), pad=(2, 2), stride=(2, 2))
    assert SOLVER.is_applicable(stem, SM90)  # YOLOv5's stem at batch 32: a 1.4 GB matrix
    assert SOLVER.workspace_bytes(stem) == 32 * 320 * 320 * 108 * 4
    big = _layer(n=32, c=512, k=512, in_spatial=(256, 256), direction="F", in_type="FP16",
                 wei_type="FP16", out_type="FP16")  # the SD VAE decoder's: a 19 GB matrix
    assert not FORWARD.is_applicable(big, SM90) and FORWARD.is_applicable(replace(big, n=1), SM90)
    assert not SOLVER.is_applicable(replace(stem, n=64), SM90)  # 2.8 GB


def test_launches_name_the_gathered_side_and_the_workspace() -> None:
    for p, narrow in ((_layer(), "x"), (_layer(c=20, k=4), "dy"), (_layer(c=16, k=16), "x"),
                      (_layer(c=32, k=16), "x"), (_layer(c=32, k=3, stride=(2, 1)), "dy"),
                      (_layer(c=32, k=4, stride=(2, 2)), "dy")):
        (job, gather), = SOLVER.lead_ins(p, (), SM90)
        assert gather.pointer_args()[:2] == [narrow, "ws_col"]
        assert SOLVER.workspace_slots(p, ()) == {"ws_col": 0}
        rows, cols = im2col_spec().col_shape("W", _view(p)[1])
        assert gather.grid[:2] == (-(-rows // 64), -(-cols // 32))
        assert dict((a.name, a.value) for a in gather.args)["taps_first"] == (narrow == "x")
        call = im2col_call(p)
        assert call is not None and call.c == "dw"


def test_backward_data_writes_the_filters_taps_first_then_dy() -> None:
    p = _layer(c=24, k=40, direction="B")
    solver = _solver(p)
    (job_w, filters), (job_col, gather) = solver.lead_ins(p, (), SM90)
    assert job_w == job_col  # one object
    assert filters.pointer_args()[:2] == ["w", "ws_w"]
    assert gather.pointer_args()[:2] == ["dy", "ws_col"]
    assert dict((a.name, a.value) for a in gather.args)["taps_first"] == 1
    slots = solver.workspace_slots(p, ())
    assert slots["ws_w"] == 0 and slots["ws_col"] >= 24 * 40 * 9 * 4
    assert solver.workspace_bytes(p) >= slots["ws_col"] + 2 * 7 * 6 * 40 * 9 * 4
    call = im2col_call(p)
    assert call is not None and call.c == "dx" and {call.a, call.b} == {"ws_w", "ws_col"}


def test_objects_the_package_ships() -> None:
    """The gather's objects (a type each) for NVIDIA targets, though the solvers are not the
    build's."""
    assert "ConvBlasIm2colWrw" not in {s.name for s in SOLVERS}
    gathers = [j for j in all_dynamic_jobs(SM90) if j.kernel_file == "conv_triton_im2col.py"]
    assert len(gathers) == 3
    assert not [j for j in all_dynamic_jobs(Target("gfx942", 304))
                if j.kernel_file == "conv_triton_im2col.py"]


def test_claims_only_where_listed_and_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    from miopenkernels.solvers import blas_im2col

    p = _layer()
    monkeypatch.setattr(blas_1x1, "_offered", [True])
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {})
    assert not im2col_first(p, SM90)
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (16, None)}})
    assert im2col_first(p, SM90) and SOLVER.claims_first(p, SM90)  # K = 16
    assert not im2col_first(_layer(k=15), SM90)
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (24, None)}})
    assert not im2col_first(p, SM90) and im2col_first(_layer(k=24), SM90)  # x gathered: K
    assert not im2col_first(_layer(c=20, k=4), SM90)  # dy gathered: C
    assert im2col_first(_layer(c=24, k=4), SM90)
    assert not im2col_first(p, SM90, "tf32")  # the TF32 math's case is TF32-W-NHWC
    assert not im2col_first(replace(p, direction="F"), SM90)
    assert not im2col_first(p, Target("sm80", 108))
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (16, 27)}})
    assert im2col_first(p, SM90)  # 27 columns: 3x3 taps of 3 channels
    assert not im2col_first(_layer(filter=(4, 4)), SM90)  # 48
    monkeypatch.setattr(blas_1x1, "_offered", [False])
    assert not im2col_first(p, SM90) and not SOLVER.claims_first(p, SM90)


def test_the_main_job_with_the_gather_objects() -> None:
    """The README's main-job figures at 1d2880e, the incremental build of 9c485a0 and the cold
    build of 4354ba2, from the runs' files."""
    import re
    from pathlib import Path

    from main_job_files import main_job_times, minutes

    root = Path(__file__).resolve().parents[2]
    text = (root / "bench" / "results" / "main_job-2cpu-1d2880e.txt").read_text()
    inc = re.search(r"incremental ([\d.]+) s, (\d+) objects compiled", text)
    assert inc is not None
    setup, build, rebuild = main_job_times("1d2880e")
    assert rebuild is not None
    assert (minutes(build), minutes(setup + build), round(rebuild, 1)) == \
        ("26 min 55 s", "27 min 47 s", 8.7)
    assert (round(float(inc.group(1)), 1), int(inc.group(2))) == (22.8, 8)
    assert "│ distinct   │ 10179 │    10179 │      0 │      0 │" in text
    assert "│ distinct   │ 10187 │        8 │  10179 │      0 │" in text
    readme = " ".join((root / "README.md").read_text().split())
    assert "10,187 at tree 9c485a0" in readme
    assert "26 min 55 s cold at tree 1d2880e (10,179 objects" in readme
    # the gather with a depth axis (its objects new), cold at 4354ba2
    text = (root / "bench" / "results" / "main_job-2cpu-4354ba2.txt").read_text()
    setup, build, rebuild = main_job_times("4354ba2")
    assert rebuild is not None
    assert (minutes(build), minutes(setup + build), round(rebuild, 1)) == \
        ("28 min 31 s", "29 min 14 s", 8.1)
    assert "│ distinct   │ 10187 │    10187 │      0 │      0 │" in text
    assert "│ distinct   │ 10187 │        0 │  10187 │      0 │" in text
    assert "10,187 at tree 4354ba2 (the im2col gather with a depth axis): 28 min 31 s cold" \
        in readme


def test_the_kernels_give_way_where_it_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry's precedence (FIRST_CLAIMS, YIELDS_TO): a 3x3 FP32 layer's Winograd
    backward weights ranks first until the im2col form claims the case, at the same math."""
    from miopenkernels.solvers import blas_im2col, get_solver, ranks_first

    p = _layer(n=32, c=64, k=64, in_spatial=(56, 56))
    winograd = get_solver("ConvTritonWinogradTf32x3Wrw")
    monkeypatch.setattr(blas_1x1, "_offered", [True])
    assert ranks_first(winograd, p, SM90)
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"TF32-W-NHWC": (1, None)}})
    assert ranks_first(winograd, p, SM90)  # the TF32 math's case: not the three products'
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (128, None)}})
    assert ranks_first(winograd, p, SM90)  # 64 filters: narrower than the claim
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (64, None)}})
    assert not ranks_first(winograd, p, SM90)
    monkeypatch.setattr(blas_1x1, "_offered", [False])  # no library: nothing to give way to
    assert ranks_first(winograd, p, SM90)


def _layer3(**kw: Any) -> ConvProblem:
    args: dict[str, Any] = dict(in_spatial=(4, 6, 5), filter=(3, 3, 3), pad=(1, 1, 1),
                                stride=(1, 1, 1), dilation=(1, 1, 1), in_layout="NDHWC",
                                wei_layout="NDHWC", out_layout="NDHWC")
    args.update(kw)
    return _layer(**args)


@pytest.mark.parametrize("change", [
    dict(c=6, k=18, groups=2),
    dict(direction="B", stride=(2, 1, 1)),  # backward data at a depth stride
    dict(filter=(5, 7, 7), pad=(2, 3, 3)),  # 245 taps: past MAX_TAPS
    dict(filter=(1, 1, 1), pad=(0, 0, 0)),  # one library call as it is
    dict(c=20, k=4, wei_layout="NCDHW"),  # dy gathered over the batch: dw[(k, t, r, s), C]
])
def test_three_d_refused(change: dict[str, Any]) -> None:
    assert _solver(_layer3()).is_applicable(_layer3(), SM90)
    p = _layer3(**change)
    assert not any(s.is_applicable(p, SM90) for s in LIBRARY_SOLVERS if "Im2col" in s.name)


def test_three_d_columns_and_workspace() -> None:
    """A video stem's backward weights (x gathered: T*R*S*C columns) and a 3x3x3 layer's
    backward data (the filters taps first, then dy's K*T*R*S columns)."""
    stem = _layer3(n=2, c=3, k=64, in_spatial=(8, 32, 32), filter=(3, 7, 7), pad=(1, 3, 3),
                   stride=(1, 2, 2))
    assert im2col_spec().col_shape("W", _view(stem)[1]) == (2 * 8 * 16 * 16, 3 * 49 * 3)
    assert SOLVER.workspace_bytes(stem) == 2 * 8 * 16 * 16 * 441 * 4
    p = _layer3(c=24, k=40, direction="B")
    (_, filters), (_, gather) = _solver(p).lead_ins(p, (), SM90)
    values = {a.name: a.value for a in filters.args if a.kind == "i32"}
    assert (values["N"], values["E"], values["A"], values["B"], values["U"]) == (3, 3, 3, 40, 24)
    values = {a.name: a.value for a in gather.args if a.kind == "i32"}
    assert (values["E"], values["A"], values["B"], values["T"], values["U"]) == (4, 6, 5, 3, 40)
    slots = _solver(p).workspace_slots(p, ())
    assert slots["ws_col"] >= 40 * 24 * 27 * 4


def test_three_d_families_give_way_where_it_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    """A (2+1)-D network's spatial layer: the 3-D implicit GEMM ranks first until the im2col
    form claims the case (NDHWC here)."""
    from miopenkernels.solvers import blas_im2col, get_solver, ranks_first

    p = _layer3(n=8, c=64, k=64, in_spatial=(8, 28, 28), filter=(1, 3, 3), pad=(0, 1, 1))
    monkeypatch.setattr(blas_1x1, "_offered", [True])
    im2col = _solver(p)
    first = [s for s in SOLVERS if s.math == "ieee" and s.is_applicable(p, SM90) and
             ranks_first(s, p, SM90)]
    assert first and im2col not in first and not ranks_first(im2col, p, SM90)
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NHWC": (1, None)}})
    assert all(ranks_first(s, p, SM90) for s in first)  # a 2-D case: not this one
    monkeypatch.setattr(blas_im2col, "IM2COL_FIRST", {"sm90": {"FP32-W-NDHWC": (64, None)}})
    assert not any(ranks_first(s, p, SM90) for s in first) and ranks_first(im2col, p, SM90)
    assert ranks_first(get_solver("ConvTriton3dTf32Wrw"), p, SM90)  # the TF32 math: not listed
