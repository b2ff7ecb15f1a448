"""Every conv solver against the float64 reference, on the GPU, through the Handle.

A grid of small problems covers every solver, direction, layout and type. Each case draws fresh
random inputs, poisons the output with NaN before the launch, and compares with
`solvers.reference.conv_reference` within `reference.tolerance` for the type. Tunable solvers are
checked with their default parameters and with two other legal parameter sets.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import SOLVERS
from miopenkernels.solvers import reference as ref
from miopenkernels.target import Target

SM90 = Target("sm90", 132)
TYPES = ("FP32", "FP16", "BF16")
LAYOUTS = ("NCHW", "NHWC")
BASE = [
    ConvProblem(n=2, c=8, k=16, in_spatial=(12, 12), filter=(3, 3), pad=(1, 1)),
    ConvProblem(n=3, c=16, k=8, in_spatial=(9, 9), filter=(1, 1)),
    ConvProblem(n=2, c=24, k=40, in_spatial=(10, 10), filter=(1, 1), stride=(2, 2)),
    ConvProblem(n=2, c=3, k=5, in_spatial=(13, 11), filter=(5, 5), pad=(2, 2), stride=(2, 2)),
    ConvProblem(n=1, c=6, k=6, in_spatial=(11, 11), filter=(3, 3), pad=(2, 2), dilation=(2, 2)),
    ConvProblem(n=2, c=8, k=8, in_spatial=(9, 9), filter=(3, 3), pad=(1, 1), groups=2),
    ConvProblem(n=2, c=8, k=8, in_spatial=(8, 8), filter=(3, 3), pad=(1, 1), groups=8),
    ConvProblem(n=2, c=3, k=16, in_spatial=(20, 20), filter=(7, 7), pad=(3, 3), stride=(2, 2)),
    ConvProblem(n=2, c=33, k=65, in_spatial=(7, 7), filter=(3, 3), pad=(1, 1)),
    ConvProblem(n=4, c=64, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1)),
    # Groups of 16 channels: the Via solvers' transposes of grouped weights and activations.
    ConvProblem(n=2, c=32, k=32, in_spatial=(8, 8), filter=(3, 3), pad=(1, 1), groups=2),
    ConvProblem(n=2, c=16, k=16, in_spatial=(8, 8), filter=(3, 3), stride=(2, 2), pad=(1, 1),
                mode="trans", trans_output_pad=(1, 1)),
    # 1x1 with 16-aligned pixels and channels: the aligned objects of the 1x1 NCHW GEMMs (a
    # split of 32-pixel blocks cuts within images: 144 pixels in 5 blocks).
    ConvProblem(n=3, c=32, k=48, in_spatial=(12, 12), filter=(1, 1)),
    # Depthwise (the depthwise family): 5x5 stride 2 on 32 channels (NHWC: the aligned
    # objects), 7x7 dilated on 24 (no alignment), odd image sizes.
    ConvProblem(n=2, c=32, k=32, in_spatial=(15, 13), filter=(5, 5), pad=(2, 2), stride=(2, 2),
                groups=32),
    ConvProblem(n=3, c=24, k=24, in_spatial=(17, 14), filter=(7, 7), pad=(6, 6),
                dilation=(2, 2), groups=24),
    # Stride 2 at 3x3 and 7x7 on odd and even sizes: channels-last backward data on the
    # phased objects (the four phases of different sizes).
    ConvProblem(n=3, c=24, k=24, in_spatial=(15, 12), filter=(3, 3), pad=(1, 1), stride=(2, 2),
                groups=24),
    ConvProblem(n=2, c=16, k=16, in_spatial=(13, 14), filter=(7, 7), pad=(3, 3), stride=(2, 2),
                groups=16),
    # Even channels not a multiple of 8 at 3x3 (16-bit NHWC: the objects assuming pairs of
    # channels, raster and, at stride 2, phased; FP32: none at 18, multiples of 4 at 20).
    ConvProblem(n=3, c=18, k=18, in_spatial=(11, 9), filter=(3, 3), pad=(1, 1), groups=18),
    ConvProblem(n=2, c=20, k=20, in_spatial=(13, 12), filter=(3, 3), pad=(1, 1),
                stride=(2, 2), groups=20),
    # Grouped, few channels a group (FP32: the grouped direct family; 16-bit: the implicit
    # GEMM's packed kernels): ResNeXt's 4 a group, one
    # channel to two filters at 5x5 stride 2, eight channels to two filters dilated.
    ConvProblem(n=2, c=32, k=32, in_spatial=(10, 9), filter=(3, 3), pad=(1, 1), groups=8),
    ConvProblem(n=2, c=8, k=16, in_spatial=(13, 11), filter=(5, 5), pad=(2, 2), stride=(2, 2),
                groups=8),
    ConvProblem(n=2, c=16, k=4, in_spatial=(12, 12), filter=(3, 3), pad=(2, 2),
                dilation=(2, 2), groups=2),
    # Grouped, 8 a group in 13 groups at stride 2 on odd sizes (16-bit: the packed kernels,
    # a last tile of fewer groups; NHWC: the objects assuming multiples of 8).
    ConvProblem(n=2, c=104, k=104, in_spatial=(11, 10), filter=(3, 3), pad=(1, 1),
                stride=(2, 2), groups=13),
    # Channel counts that are not multiples of 8 (16-bit NHWC: the padded solvers): 20 to 36
    # at stride 2 on odd sizes, and 32 to 3 filters (an image output).
    ConvProblem(n=2, c=20, k=36, in_spatial=(9, 10), filter=(3, 3), pad=(1, 1), stride=(2, 2)),
    ConvProblem(n=3, c=32, k=3, in_spatial=(11, 9), filter=(3, 3), pad=(1, 1)),
    # Six filters over 70 channels, dilated, stride (1, 2) (the few-filter direct kernel: a
    # partial filter block and channel block).
    ConvProblem(n=2, c=70, k=6, in_spatial=(11, 10), filter=(3, 3), pad=(2, 2),
                dilation=(2, 2), stride=(1, 2)),
    # An image stem at full resolution, 3 channels to 32 filters at stride 1 (sizes that meet
    # the aligned objects): the few-channel kernels' 2-D solvers in every direction.
    ConvProblem(n=2, c=3, k=32, in_spatial=(17, 16), filter=(3, 3), pad=(1, 1)),
    # A 4-channel stem to 70 filters, 7x7 at stride 2 on odd sizes (FP32 forward: the direct
    # kernel on the FP32 units, its widest tile and a partial filter block).
    ConvProblem(n=2, c=4, k=70, in_spatial=(15, 13), filter=(7, 7), pad=(3, 3), stride=(2, 2)),
    # Grouped, 16 a group at stride 2: the implicit GEMM's backward data with groups.
    ConvProblem(n=2, c=64, k=64, in_spatial=(9, 9), filter=(3, 3), pad=(1, 1), stride=(2, 2),
                groups=4),
    # 3-D (the 3-D family; NCDHW and NDHWC in place of NCHW and NHWC): 3x3x3 stride 2 on odd
    # sizes, (2+1)-D's 1x3x3 with groups of 16 channels (NDHWC: the aligned objects), a
    # dilated 3x3x3, and 1x1x1 stride 2 (stride phases no tap reaches).
    ConvProblem(n=2, c=8, k=16, in_spatial=(5, 9, 8), filter=(3, 3, 3), pad=(1, 1, 1),
                stride=(2, 2, 2), in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=2, c=32, k=32, in_spatial=(4, 6, 6), filter=(1, 3, 3), pad=(0, 1, 1),
                groups=2, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=1, c=16, k=24, in_spatial=(6, 7, 5), filter=(3, 3, 3), pad=(2, 2, 2),
                dilation=(2, 2, 2), in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=2, c=16, k=32, in_spatial=(5, 6, 7), filter=(1, 1, 1), stride=(2, 2, 2),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # 3-D channel counts off the aligned objects' multiple of 16 (16-bit: the relaid solvers,
    # NCDHW through NDHWC and NDHWC padded): a video stem's 3 channels at 3x5x5 stride (1, 2, 2)
    # (the narrow tiles), and (2+1)-D's 45 filters of a 3x1x1 temporal layer on 20 channels.
    ConvProblem(n=2, c=3, k=16, in_spatial=(4, 12, 12), filter=(3, 5, 5), pad=(1, 2, 2),
                stride=(1, 2, 2), in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=2, c=20, k=45, in_spatial=(5, 6, 6), filter=(3, 1, 1), pad=(1, 0, 0),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # One input channel, 32 filters (3D U-Net's first layer, small): the few-channel solvers.
    ConvProblem(n=2, c=1, k=32, in_spatial=(6, 8, 8), filter=(3, 3, 3), pad=(1, 1, 1),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # 3-D depthwise (the 3-D depthwise family): X3D's 3x3x3 at spatial stride 2 on 24
    # channels (NDHWC: the aligned objects) and a temporal 5x1x1 on 20 (no alignment; the
    # plane's taps at run time), odd sizes.
    ConvProblem(n=2, c=24, k=24, in_spatial=(5, 11, 10), filter=(3, 3, 3), pad=(1, 1, 1),
                stride=(1, 2, 2), groups=24, in_layout="NCDHW", wei_layout="NCDHW",
                out_layout="NCDHW"),
    ConvProblem(n=2, c=20, k=20, in_spatial=(7, 6, 9), filter=(5, 1, 1), pad=(2, 0, 0),
                groups=20, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # X3D-like 3x3x3 on 18 channels (16-bit NDHWC: the pair-aligned objects).
    ConvProblem(n=2, c=18, k=18, in_spatial=(4, 7, 9), filter=(3, 3, 3), pad=(1, 1, 1),
                groups=18, in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # One depth tap at depth stride 1 (NDHWC: the slices solvers, a 2-D layer over N*D
    # images): X3D's 1x1x1 downsample at stride (1, 2, 2) on 24 channels, and a (2+1)-D
    # spatial 1x3x3 on 20 channels to 36 filters (16-bit: the padded 2-D objects), odd sizes.
    ConvProblem(n=2, c=24, k=48, in_spatial=(3, 9, 11), filter=(1, 1, 1), stride=(1, 2, 2),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=2, c=20, k=36, in_spatial=(3, 7, 9), filter=(1, 3, 3), pad=(0, 1, 1),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # One depth tap at depth stride 1 on planes of a multiple of 16 bytes (NCDHW: the planes
    # solvers, a 2-D launch per depth slice): a video stem's 3 channels at 1x5x5 stride
    # (1, 2, 2), and 16 channels to 3 filters at 1x3x3 (the few-filter kernels).
    ConvProblem(n=2, c=3, k=16, in_spatial=(3, 16, 16), filter=(1, 5, 5), pad=(0, 2, 2),
                stride=(1, 2, 2), in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=2, c=16, k=3, in_spatial=(2, 8, 8), filter=(1, 3, 3), pad=(0, 1, 1),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # Deep layers at batch 1 on a few positions (R3D-18's layer4, small): the 3-D family's
    # forward and backward data split on a small grid (`conv_triton_3d_split_spec.small_split`),
    # at stride 1 and at stride 2 (backward data's phases times parts).
    ConvProblem(n=1, c=128, k=128, in_spatial=(2, 5, 6), filter=(3, 3, 3), pad=(1, 1, 1),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    ConvProblem(n=1, c=64, k=128, in_spatial=(4, 9, 8), filter=(3, 3, 3), pad=(1, 1, 1),
                stride=(2, 2, 2), in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
    # Pointwise layers narrow on one side (the pointwise row GEMMs, channels-last): 64
    # channels to 2 filters (a mask head; its wide side meets the aligned objects) and, 3-D,
    # 3 channels to 40 filters on odd sizes (no aligned object).
    ConvProblem(n=2, c=64, k=2, in_spatial=(9, 7), filter=(1, 1)),
    # A squeeze-and-excitation layer's expansion (one position an image, 6 channels to 24
    # filters): rows in NCHW as in NHWC.
    ConvProblem(n=5, c=6, k=24, in_spatial=(1, 1), filter=(1, 1)),
    ConvProblem(n=2, c=3, k=40, in_spatial=(3, 5, 7), filter=(1, 1, 1), in_layout="NCDHW",
                wei_layout="NCDHW", out_layout="NCDHW"),
    # 128 channels and filters over 65,536 input positions: 16-bit backward data and weights
    # on their wide tiles (spec WIDE_RULE).
    ConvProblem(n=16, c=128, k=128, in_spatial=(4, 32, 32), filter=(1, 1, 1),
                in_layout="NCDHW", wei_layout="NCDHW", out_layout="NCDHW"),
]
#: A 3-D problem's layout for each 2-D one of LAYOUTS.
LAYOUTS_3D = {"NCHW": "NCDHW", "NHWC": "NDHWC"}


# BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, warps, stages: 192 KiB of shared memory for FP16
# and BF16 on sm90, 96-128 KiB for FP32.
TRITON_BIG = [(256, 256, 64, 8, 1, 8, 3), (128, 128, 32, 8, 1, 8, 4)]
# Backward weights split four ways: FP32 partials in the workspace, summed by a second launch
# (the implicit GEMM's set, then the depthwise and grouped families').
TRITON_SPLIT = [(64, 64, 32, 8, 4, 4, 3), (16, 32, 1, 1, 4, 4, 1)]


def _variants() -> list[ConvProblem]:
    out = []
    for base, d, lay, t in itertools.product(BASE, "FBW", LAYOUTS, TYPES):
        if len(base.in_spatial) == 3:
            lay = LAYOUTS_3D[lay]
        out.append(replace(base, direction=d, in_layout=lay, wei_layout=lay, out_layout=lay,
                           in_type=t, wei_type=t, out_type=t))
    return out


def _cases() -> list[tuple[ConvProblem, str, tuple[int, ...] | None]]:
    cases = []
    for p in _variants():
        for s in SOLVERS:
            if not s.is_applicable(p, SM90):
                continue
            cases.append((p, s.name, None))
            if s.tunable:
                space = s.param_space(p, SM90)
                default = tuple(s.default_params(p, SM90))
                others = [tuple(q) for q in space if tuple(q) != default]
                # The same two picks (first and last legal set) on every problem, so that few
                # distinct binaries are needed. Triton's last sets are its largest tiles: one
                # with more than 48 KiB of dynamic shared memory (the opt-in path) instead.
                last = others[-1:]
                if s.language == "triton":
                    last = [q for q in TRITON_BIG if q in others][:1]
                    last += [q for q in TRITON_SPLIT if q in others][:1]
                for q in dict.fromkeys(others[:1] + last):
                    cases.append((p, s.name, q))
    return cases


CASES = _cases()


def test_grid_covers_every_solver_direction_layout_and_type() -> None:
    seen = {(s, p.direction, p.in_layout, p.in_type) for p, s, _ in CASES}
    for solver in SOLVERS:
        if "Chunks" in solver.name:  # tensors past 32-bit offsets alone: test_chunks_gpu.py
            continue
        assert any(k[0] == solver.name for k in seen), f"{solver.name} is never applicable"
    for d, lay, t in itertools.product("FBW", LAYOUTS, TYPES):
        assert any(k[1:] == (d, lay, t) for k in seen), f"no solver covers {d} {lay} {t}"


def _host(arr: np.ndarray, data_type: str) -> np.ndarray:
    if data_type == "FP32":
        return arr.astype(np.float32)
    if data_type == "FP16":
        return arr.astype(np.float16)
    bits = arr.astype(np.float32).view(np.uint32) >> 16  # exact: inputs are quantised
    return bits.astype(np.uint16)


def _back(arr: np.ndarray, data_type: str) -> np.ndarray:
    if data_type == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def _terms(p: ConvProblem) -> int:
    taps = int(np.prod(p.filter))
    if p.direction == "W":
        return p.n * int(np.prod(p.out_spatial if p.mode == "conv" else p.in_spatial))
    ch = (p.c if p.direction == "F" else p.k) // p.groups
    return max(ch, p.c // p.groups, p.k // p.groups) * taps


@pytest.fixture(scope="module")
def handle(tmp_path_factory):  # noqa: ANN001, ANN201
    import os

    from miopenkernels.handle import Handle

    root = tmp_path_factory.mktemp("dbs")
    os.environ["MIOPEN_USER_DB_PATH"] = str(root / "user")
    # A kernel cache given by the caller (e.g. compiled ahead on a CPU machine) is kept.
    os.environ.setdefault("MIOPEN_CUSTOM_CACHE_DIR", str(root / "cache"))
    os.environ["MIOPEN_SYSTEM_DB_PATH"] = str(root / "none")
    return Handle()


@pytest.mark.parametrize(("problem", "solver", "params"), CASES,
                         ids=[f"{s}-{p.key()}-{q}" for p, s, q in CASES])
def test_solver_matches_reference(handle, problem, solver, params, rng) -> None:  # noqa: ANN001
    from miopenkernels.find import bind, make_invoker, solver_of
    from miopenkernels.tensor import as_device

    t = problem.in_type
    inputs = ref.conv_inputs(problem, rng)
    out_name = ref.conv_output_name(problem)
    shapes = ref.conv_tensor_shapes(problem)
    host = {n: _host(a, t) for n, a in inputs.items()}
    poison = np.full(shapes[out_name], np.nan, np.float32)
    host[out_name] = _host(poison, t) if t != "BF16" else np.full(shapes[out_name], 0xFFFF,
                                                                   np.uint16)
    layer = {"x": host.get("x", host.get("dx")), "w": host.get("w", host.get("dw")),
             "y": host.get("y", host.get("dy"))}
    be = handle.backend
    dev = {r: as_device(a, be) for r, a in layer.items()}  # all uploaded: output is NaN
    s = solver_of(handle, solver)
    inv = make_invoker(handle, problem, s, params=params, specialised=False)
    bound = bind(handle, problem, dev["x"], dev["w"], dev["y"])
    ptrs = {r: v.ptr for r, v in bound.items()}
    ptrs["workspace"] = 0
    if inv.workspace_bytes:
        inv.workspace = be.alloc(inv.workspace_bytes)
        ptrs["workspace"] = inv.workspace.ptr
    inv(ptrs)
    be.synchronize()
    out_role = {"F": "y", "B": "x", "W": "w"}[problem.direction]
    got = np.empty_like(layer[out_role])
    be.copy_out(got, dev[out_role].buffer)
    for v in dev.values():
        v.release()
    got64 = _back(got, t)
    assert not np.isnan(got64).any(), f"{np.isnan(got64).sum()} of {got64.size} outputs unwritten"
    want = ref.conv_reference(problem, inputs)
    err = float(np.max(np.abs(got64 - want)))
    tol_type = "TF32" if s.math == "tf32" else t
    tol = ref.tolerance(tol_type, _terms(problem))
    assert err <= tol, f"max abs error {err:.3g} > {tol:.3g} ({tol_type})"


def test_specialised_kernel_matches_dynamic(handle, rng) -> None:  # noqa: ANN001
    """A specialised (shape baked in) binary gives the dynamic binary's result exactly."""
    from miopenkernels.find import make_invoker, solver_of

    p = BASE[0]
    inputs = ref.conv_inputs(p, rng)
    x, w = inputs["x"].astype(np.float32), inputs["w"].astype(np.float32)
    results = []
    for s in SOLVERS:
        if not s.is_applicable(p, SM90):
            continue
        for spec in (False, True):
            y = np.full(p.out_shape, np.nan, np.float32)
            inv = make_invoker(handle, p, solver_of(handle, s.name), specialised=spec)
            handle.invokers[(p, s.name)] = inv
            handle.run(p, s.name, x, w, y)
            results.append(y)
        handle.invokers.pop((p, s.name))
        assert np.array_equal(results[-1], results[-2]), s.name
    assert results
