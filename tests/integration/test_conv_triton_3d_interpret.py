"""The 3-D kernels, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1) through the
solvers' own launches (arguments, grid, constexprs of the job, the reduce follow-up of a split
backward weights), against the float64 reference (solvers/reference.py): every direction, NCDHW
and NDHWC, FP32 and FP16, strides 1-2, padding, dilation, 1x1x1, 1x3x3 and 3x3x3 filters,
groups 1 and 2. Small tiles (an sm80 target's legal space) keep the interpreter quick. BF16 is
left to the GPU grid: under the interpreter, with bfloat16 held as its bits in numpy, the dot's
result was off by a relative 9e9. The harness (numpy arrays as tensors) is
triton_interpreter.py here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from triton_interpreter import HARNESS

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
spec = pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

# (C, K, D, H, W, filter (t, r, s), stride, pad, dilation, groups, N, SPLIT_K)
GEOMETRIES = [
    (8, 16, 3, 5, 4, (1, 1, 1), 1, 0, 1, 1, 2, 1),
    (4, 6, 4, 5, 5, (3, 3, 3), 1, 1, 1, 2, 1, 2),
    (5, 8, 5, 6, 7, (3, 3, 3), 2, 1, 1, 1, 2, 1),
    (6, 5, 5, 5, 6, (3, 3, 3), 1, 2, 2, 2, 1, 4),
    (8, 8, 4, 5, 5, (1, 1, 1), 2, 0, 1, 1, 2, 1),
    (4, 8, 3, 6, 6, (1, 3, 3), 2, 1, 1, 1, 1, 2),
    # 16 channels and filters: NDHWC meets the alignment assumption (the channels-last object).
    (16, 16, 3, 4, 4, (3, 3, 3), 1, 1, 1, 1, 1, 2),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3}
#: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, num_warps, num_stages (SPLIT_K from the case).
TILE = (32, 16, 16, 1, 1, 4, 2)

SCRIPT = HARNESS + textwrap.dedent('''
    from miopenkernels.kernels import conv_triton_3d

    direction, cases, tile, arch, *named = json.loads(sys.argv[1])
    SM80 = Target(arch, 108)  # sm80 unless a case names another target
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    solver = get_solver(named[0] if named else "ConvTriton3d" + suffix)
    rng = np.random.default_rng(0)
    errors = []
    for layout, data_type, (c, k, d, h, w, f, st, pad, dil, g, n, split) in cases:
        p = ConvProblem(n=n, c=c * g, k=k * g, groups=g, in_spatial=(d, h, w), filter=tuple(f),
                        pad=(pad,) * 3, stride=(st,) * 3, dilation=(dil,) * 3,
                        direction=direction, in_type=data_type, wei_type=data_type,
                        out_type=data_type, in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        assert solver.is_applicable(p, SM80), p.key()
        params = tuple(tile[:4]) + (split if direction == "W" else 1,) + tuple(tile[5:])
        assert solver.params_valid(p, SM80, params), params
        follow = solver.follow_ups(p, params, SM80)
        assert len(follow) == (direction == "W" and split > 1), follow
        errors.append(relative_error(solver, conv_triton_3d, p, params, SM80, rng))
    print(json.dumps(errors))
''')


def _run(direction: str, cases: list, tile: tuple = TILE, arch: str = "sm80",
         solver: str | None = None) -> list[float]:
    env = dict(os.environ, TRITON_INTERPRET="1", MIOPENKERNELS_TRITON="1")
    payload = [direction, cases, tile, arch, *([solver] if solver else [])]
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(payload)],
                         capture_output=True, text=True, env=env, timeout=1200, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == len(cases)
    return errors


@pytest.mark.parametrize("direction", ["F", "B", "W"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_interpreted_kernels_match_float64(direction: str, layout: str) -> None:
    cases = [(layout, data_type, g) for data_type in ("FP32", "FP16") for g in GEOMETRIES]
    errors = _run(direction, cases)
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[1]]]  # a NaN left in the output fails too
    assert not bad, bad


@pytest.mark.parametrize("direction", ["B", "W"])
def test_interpreted_wide_tiles_match_float64(direction: str) -> None:
    """The FP16 wide tiles of backward data and weights (spec WIDE_TILES, sm90's legal space)
    on aligned NDHWC layers, a split backward weights among them."""
    bm, bn, bk, warps, stages = spec.WIDE_TILES[direction]
    tile = (bm, bn, bk, 8, 1, warps, stages)
    cases = [("NDHWC", "FP16", g) for g in (
        (16, 32, 3, 5, 6, (3, 3, 3), 1, 1, 1, 1, 2, 4),
        (32, 16, 4, 6, 5, (1, 3, 3), 2, 1, 1, 1, 1, 1))]
    errors = _run(direction, cases, tile, "sm90")
    assert all(e < TOLERANCE["FP16"] for e in errors), errors


def test_interpreted_tap_groups_match_float64() -> None:
    """ConvTriton3dTapsWrw's launches (TAPS taps a program, spec TAP_GROUPS) on aligned NDHWC
    FP16 layers: 3 taps along s (3x3x3 split in four, 1x3x3 at stride 2 unsplit, dilation 2,
    two groups), 2 along s (2x2x2), 3 along t (3x1x1)."""
    cases = [("NDHWC", "FP16", g) for g in (
        (16, 16, 3, 5, 6, (3, 3, 3), 1, 1, 1, 1, 2, 4),
        (16, 32, 4, 6, 5, (1, 3, 3), 2, 1, 1, 1, 1, 1),
        (16, 16, 3, 7, 7, (3, 3, 3), 1, 2, 2, 1, 1, 1),
        (16, 16, 3, 4, 5, (1, 3, 3), 1, 1, 1, 2, 1, 2),
        (16, 16, 4, 5, 5, (2, 2, 2), 1, 0, 1, 1, 1, 2),
        (16, 16, 5, 4, 4, (3, 1, 1), 1, 1, 1, 1, 2, 2))]
    errors = _run("W", cases, (64, 16, 16, 1, 1, 4, 2), "sm90", "ConvTriton3dTapsWrw")
    assert all(e < TOLERANCE["FP16"] for e in errors), errors
