"""The 3-D depthwise kernels, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1)
through the solvers' own launches (arguments, grid, constexprs of the job, the reduce
follow-up), against the float64 reference (solvers/reference.py): every direction, type and
layout, 3x3 and 5x5 planes (unrolled) and a temporal-only 5x1x1 filter (run-time taps), depth
strides 1/2, spatial strides 1/2, dilation 2 and a split backward-weights reduction.
The interpreter's harness (numpy arrays as tensors) is tests/integration/triton_interpreter.py."""

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
pytest.importorskip("miopenkernels.kernels.conv_triton_depthwise3d_spec")

# (C, D, H, W, T, R = S, (stride_d, stride_hw), (pad_d, pad_hw), (dil_d, dil_hw), N,
#  SPLIT_K or 0 for the default)
GEOMETRIES = [
    (5, 5, 7, 6, 3, 3, (1, 1), (1, 1), (1, 1), 2, 0),
    (6, 6, 9, 8, 3, 3, (1, 2), (1, 1), (1, 1), 2, 0),
    (4, 7, 8, 7, 5, 1, (1, 1), (2, 0), (1, 1), 1, 0),
    (3, 6, 9, 9, 3, 5, (2, 2), (1, 2), (1, 1), 2, 0),
    (8, 5, 7, 7, 3, 3, (2, 1), (2, 2), (2, 2), 2, 4),
    # Depth and plane stride 2 on odd and even sizes, 10 channels (16-bit NDHWC: pairs):
    # channels-last backward data on the phased objects, a depth tap off the lattice.
    (10, 7, 11, 10, 3, 3, (2, 2), (1, 1), (1, 1), 2, 0),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3, "BF16": 2e-2}

SCRIPT = HARNESS + textwrap.dedent('''
    from miopenkernels.kernels import conv_triton_depthwise

    direction, cases = json.loads(sys.argv[1])
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    solver = get_solver("ConvTritonDepthwise3d" + suffix)
    rng = np.random.default_rng(0)
    errors = []
    for layout, data_type, (c, d, h, w, t, f, st, pad, dil, n, split) in cases:
        p = ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=(d, h, w), filter=(t, f, f),
                        pad=(pad[0], pad[1], pad[1]), stride=(st[0], st[1], st[1]),
                        dilation=(dil[0], dil[1], dil[1]), direction=direction,
                        in_type=data_type, wei_type=data_type, out_type=data_type,
                        in_layout=layout, wei_layout=layout, out_layout=layout)
        assert solver.is_applicable(p, SM90), p.key()
        assert solver.claims_first(p, SM90)
        params = solver.default_params(p, SM90)
        if split and direction == "W":
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        job = solver.compile_job(p, params, SM90)
        assert job.kernel_name == ("depthwise_conv3d_wrw" if direction == "W"
                                   else "depthwise_conv3d"), job.kernel_name
        phased = direction == "B" and layout == "NDHWC" and (f, st[1], dil[1]) == (3, 2, 1)
        assert ("-DPHASES=2" in job.options) == phased, job.options
        errors.append(relative_error(solver, conv_triton_depthwise, p, params, SM90, rng))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_kernels_match_float64(direction: str) -> None:
    # BF16 on two geometries: the same loads and sums as FP16, at a quarter of the time.
    cases = [(layout, data_type, g) for layout in ("NCDHW", "NDHWC")
             for data_type in ("FP32", "FP16", "BF16")
             for g in (GEOMETRIES if data_type != "BF16" else GEOMETRIES[:2] + GEOMETRIES[-1:])]
    env = dict(os.environ, TRITON_INTERPRET="1", MIOPENKERNELS_TRITON="1")
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([direction, cases])],
                         capture_output=True, text=True, env=env, timeout=900, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == len(cases)
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[1]]]  # a NaN left in the output fails too
    assert not bad, bad
