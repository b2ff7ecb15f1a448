"""Forward and backward data of the 3-D implicit GEMM split in parts (solvers/triton_3d.py,
`conv_triton_3d_split_spec.small_split`), run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through the solvers' own launches: the split kernel writing FP32 partials,
the 2-D family's reduce summing them into y or dx, against the float64 reference. Both layouts,
the relaid NCDHW route, strides 1-2 (backward data's phases times parts on the grid's axis 2, a
phase no tap reaches, the 1x1x1 stride-2 layer whose unsplit launch runs phase 0 alone),
groups, padding and dilation, splits that leave a part without steps. The harness is
tests/integration/triton_interpreter.py."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

# (solver suffix, layout, C, K, D, H, W, filter, stride, pad, dilation, groups, N, SPLIT_K)
GEOMETRIES = [
    ("", "NCDHW", 16, 32, 3, 4, 5, (3, 3, 3), 1, 1, 1, 1, 1, 4),
    ("", "NDHWC", 16, 16, 2, 5, 5, (1, 3, 3), 1, 1, 1, 1, 2, 2),
    ("", "NCDHW", 8, 16, 4, 6, 6, (3, 3, 3), 2, 1, 1, 1, 1, 2),
    ("", "NDHWC", 16, 32, 4, 6, 6, (1, 1, 1), 2, 0, 1, 1, 1, 4),
    ("", "NCDHW", 8, 8, 3, 5, 5, (3, 3, 3), 1, 2, 2, 2, 1, 8),
    ("", "NDHWC", 16, 16, 2, 3, 3, (1, 1, 1), 1, 0, 1, 1, 1, 64),
    ("ViaNdhwc", "NCDHW", 16, 16, 3, 4, 4, (3, 3, 3), 1, 1, 1, 1, 1, 4),
]
TOLERANCE = 3e-3

SCRIPT = HARNESS + textwrap.dedent('''
    direction, cases = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    errors = []
    for suffix, layout, c, k, d, h, w, f, st, pad, dil, groups, n, split in cases:
        solver = get_solver("ConvTriton3d" + suffix + {"F": "Fwd", "B": "Bwd"}[direction])
        p = ConvProblem(n=n, c=c, k=k, in_spatial=(d, h, w), filter=tuple(f),
                        pad=tuple(pad if v > 1 else 0 for v in f), stride=(st, st, st),
                        dilation=(dil, dil, dil), groups=groups, direction=direction,
                        in_type="FP16", wei_type="FP16", out_type="FP16", in_layout=layout,
                        wei_layout=layout, out_layout=layout)
        params, error = default_launches_error(solver, p, split, rng)
        assert len(solver.follow_ups(p, params, SM90)) >= 1  # the reduce
        errors.append(error)
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B"])
def test_interpreted_split_launches_match_float64(direction: str) -> None:
    errors = interpreted(SCRIPT, [direction, GEOMETRIES], len(GEOMETRIES))
    bad = [(case, e) for case, e in zip(GEOMETRIES, errors, strict=True)
           if not e < TOLERANCE]  # a NaN left in the output fails too
    assert not bad, bad
