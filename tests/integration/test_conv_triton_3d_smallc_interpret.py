"""The few-channel 3-D kernels (kernels/conv_triton_3d_smallc.py), run by Triton's interpreter
on the CPU (TRITON_INTERPRET=1) through the solvers' own launches (arguments, grid,
constexprs of the job, the reduce follow-up of a split backward weights, backward data's
gather), against the float64 reference: every direction, NCDHW and NDHWC, FP32 and FP16,
1-4 channels a group, the aligned objects (both layouts) and the generic ones, strides 1-2,
padding, dilation, 3x3x3, 1x7x7 and 3x1x1 filters, groups 1 and 2, a transposed layer,
several reduction blocks (3 channels by 3x3x3: 81 columns) and tiles that cut the filters;
and 2-D layers (NCHW and NHWC) through the 2-D solvers ConvTritonSmallC{Fwd,Bwd,Wrw}.
Small tiles (an sm80 target's legal space) keep the interpreter quick. The harness is
triton_interpreter.py here."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_smallc_spec")

# (C, K, D, H, W, filter (t, r, s), stride, pad, dilation, groups, N, SPLIT_K, mode); the
# first meets the aligned objects' assumptions in both layouts (`spec.meets_aligned`).
ALIGNED = (1, 32, 2, 3, 8, (3, 3, 3), 1, 1, 1, 1, 1, 1, "conv")
GEOMETRIES = [
    ALIGNED,
    (1, 32, 4, 5, 6, (3, 3, 3), 1, 1, 1, 1, 2, 1, "conv"),
    (1, 8, 5, 6, 5, (3, 3, 3), 2, 1, 1, 1, 1, 4, "conv"),
    (3, 20, 3, 9, 8, (1, 7, 7), (1, 2, 2), (0, 3, 3), 1, 1, 2, 2, "conv"),
    (3, 16, 4, 5, 5, (3, 3, 3), 1, 2, 2, 1, 1, 1, "conv"),
    (2, 6, 4, 4, 5, (3, 1, 1), 1, (1, 0, 0), 1, 2, 2, 2, "conv"),
    (4, 40, 3, 4, 4, (2, 2, 2), 1, 0, 1, 1, 2, 1, "conv"),
    (2, 2, 2, 3, 3, (2, 2, 2), 2, 0, 1, 1, 2, 2, "trans"),
]
#: Backward data's: its products a position (t*r*s*c) no more than the filters
#: (`spec.products_pay`): stride 2, dilation 2, groups, a transposed layer (its forward).
GEOMETRIES_B = [
    ALIGNED,
    (1, 32, 4, 5, 6, (3, 3, 3), 1, 1, 1, 1, 2, 1, "conv"),
    (1, 32, 5, 6, 5, (3, 3, 3), 2, 1, 1, 1, 1, 1, "conv"),
    (1, 27, 4, 5, 5, (3, 3, 3), 1, 2, 2, 1, 1, 1, "conv"),
    (2, 6, 4, 4, 5, (3, 1, 1), 1, (1, 0, 0), 1, 2, 2, 1, "conv"),
    (4, 40, 3, 4, 4, (2, 2, 2), (1, 2, 2), 0, 1, 1, 2, 1, "conv"),
    (16, 2, 2, 3, 3, (2, 2, 2), 2, 0, 1, 1, 2, 1, "trans"),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3}
#: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages (SPLIT_K from the case).
TILE = (32, 16, 16, 1, 4, 2)

SCRIPT = HARNESS + textwrap.dedent('''
    direction, cases, tile, family = json.loads(sys.argv[1])
    SM80 = Target("sm80", 108)
    solver = get_solver(family + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction])
    rng = np.random.default_rng(0)
    errors = []
    for layout, data_type, (c, k, d, h, w, f, st, pad, dil, g, n, split, mode) in cases:
        # A depth of 0: a 2-D layer (its filter, stride, padding and dilation of two axes).
        axes = 2 if d == 0 else 3
        three = lambda v: tuple(v) if isinstance(v, list) else (v,) * axes
        # A transposed layer's plain convolution runs the other way: forward's kernel is
        # backward data's of the transposed layer, so the layer asks for "B" there.
        asked = {"F": "B", "B": "F", "W": "W"}[direction] if mode == "trans" else direction
        p = ConvProblem(n=n, c=c * g, k=k * g, groups=g, in_spatial=(d, h, w)[3 - axes:],
                        filter=tuple(f),
                        pad=three(pad), stride=three(st), dilation=three(dil),
                        direction=asked, in_type=data_type, wei_type=data_type,
                        out_type=data_type, in_layout=layout, wei_layout=layout,
                        out_layout=layout, mode=mode)
        assert solver.is_applicable(p, SM80), p.key()
        params = tuple(tile[:4]) + (split if direction == "W" else 1,) + tuple(tile[4:])
        assert solver.params_valid(p, SM80, params), params
        launch = solver.launch(p, params)
        follow = solver.follow_ups(p, params, SM80)
        assert len(follow) == (direction == "B" or (direction == "W" and split > 1)), follow
        tensors, exact, output = layer_tensors(p, asked, data_type, rng)
        tensors["workspace"] = _HostTensor(
            np.full(max(launch.workspace_bytes // 4, 1), np.nan, np.float32), "float32")
        errors.append(launches_error(solver, p, params, SM80, tensors, exact, output))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_interpreted_smallc_kernels_match_float64(direction: str, layout: str) -> None:
    _check(direction, layout, GEOMETRIES_B if direction == "B" else GEOMETRIES,
           "ConvTriton3dSmallC")


def _check(direction: str, layout: str, geometries: list, family: str) -> None:
    """Each geometry in FP32 and FP16 through the family's solver of the direction, within
    TOLERANCE of float64."""
    cases = [(layout, data_type, g) for data_type in ("FP32", "FP16") for g in geometries]
    errors = interpreted(SCRIPT, [direction, cases, TILE, family], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[1]]]  # a NaN left in the output fails too
    assert not bad, bad


# 2-D layers (a depth of 0 here) on the 2-D solvers: an image stem's 3 channels at 3x3 (27
# columns) and 7x7 stride 2, 4 latent channels, 1 channel dilated, a transposed layer with 3
# outputs; the first meets the aligned objects in both layouts. Backward data takes those
# whose products a position are no more than the filters (not the 7x7's 147 for 16, nor 4
# channels' 36 for 24: 40 filters there), a transposed layer of 48 and a stride-2 stem.
GEOMETRIES_2D = [
    (3, 32, 0, 4, 8, (3, 3), 1, 1, 1, 1, 2, 1, "conv"),
    (3, 16, 0, 9, 7, (7, 7), 2, 3, 1, 1, 1, 4, "conv"),
    (4, 24, 0, 5, 6, (3, 3), 1, 1, 1, 1, 2, 2, "conv"),
    (1, 12, 0, 7, 7, (3, 3), 1, 2, 2, 1, 1, 1, "conv"),
    (8, 3, 0, 3, 3, (4, 4), 2, 1, 1, 1, 2, 2, "trans"),
]
GEOMETRIES_2D_B = [g for g in GEOMETRIES_2D if g[0] in (1, 3) and g[5] != (7, 7)] + [
    (4, 40, 0, 5, 6, (3, 3), 1, 1, 1, 1, 2, 1, "conv"),
    (48, 3, 0, 3, 3, (4, 4), 2, 1, 1, 1, 2, 1, "trans"),
    (3, 32, 0, 9, 7, (3, 3), 2, 1, 1, 1, 1, 1, "conv")]


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_interpreted_2d_smallc_kernels_match_float64(direction: str, layout: str) -> None:
    _check(direction, layout, GEOMETRIES_2D_B if direction == "B" else GEOMETRIES_2D,
           "ConvTritonSmallC")
