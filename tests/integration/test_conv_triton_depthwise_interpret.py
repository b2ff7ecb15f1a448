"""The depthwise kernels, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1) through
the solvers' own launches (arguments, grid, constexprs of the job, the reduce follow-up),
against the float64 reference (solvers/reference.py): every direction, type and layout,
filters 3/5/7, strides 1/2, dilations 1/2, odd sizes and a split backward-weights reduction;
channels-last backward data at stride 2 and dilation 1 runs the phased objects (its job says
so: checked).
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
pytest.importorskip("miopenkernels.kernels.conv_triton_depthwise_spec")

# (C, H, W, filter, stride, pad, dilation, N, SPLIT_K or 0 for the default)
GEOMETRIES = [
    (5, 9, 7, 3, 1, 1, 1, 2, 0),
    (5, 11, 8, 5, 2, 2, 1, 2, 0),
    (3, 13, 9, 7, 1, 3, 2, 1, 0),
    (16, 9, 10, 3, 2, 0, 2, 2, 4),
    # stride 2, dilation 1: channels-last backward data on the phased objects (odd and even
    # sizes, so that the four phases differ; padding 0, 1 and 3)
    (6, 10, 9, 3, 2, 1, 1, 3, 0),
    (7, 9, 12, 3, 2, 0, 1, 2, 0),
    (4, 12, 11, 7, 2, 3, 1, 1, 0),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3, "BF16": 2e-2}

SCRIPT = HARNESS + textwrap.dedent('''
    from miopenkernels.kernels import conv_triton_depthwise

    direction, cases = json.loads(sys.argv[1])
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    solver = get_solver("ConvTritonDepthwise" + suffix)
    rng = np.random.default_rng(0)
    errors = []
    for layout, data_type, (c, h, w, f, st, pad, dil, n, split) in cases:
        p = ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=(h, w), filter=(f, f),
                        pad=(pad, pad), stride=(st, st), dilation=(dil, dil),
                        direction=direction, in_type=data_type, wei_type=data_type,
                        out_type=data_type, in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        if split and direction == "W":
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        job = solver.compile_job(p, params, SM90)
        phased = (direction, layout, st, dil) == ("B", "NHWC", 2, 1)
        assert ("-DPHASES=2" in job.options) == phased, (p.key(), job.options)
        errors.append(relative_error(solver, conv_triton_depthwise, p, params, SM90, rng))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_kernels_match_float64(direction: str) -> None:
    cases = [(layout, data_type, g) for layout in ("NCHW", "NHWC")
             for data_type in ("FP32", "FP16", "BF16") for g in GEOMETRIES]
    env = dict(os.environ, TRITON_INTERPRET="1", MIOPENKERNELS_TRITON="1")
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([direction, cases])],
                         capture_output=True, text=True, env=env, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == len(cases)
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[1]]]  # a NaN left in the output fails too
    assert not bad, bad
