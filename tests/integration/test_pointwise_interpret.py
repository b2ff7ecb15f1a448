"""The pointwise row kernels (kernels/conv_triton_pointwise.py), run by Triton's interpreter on the
CPU (TRITON_INTERPRET=1) through the solvers' own launches (arguments, grid, constexprs of the
job, backward weights' reduce follow-up), against the float64 reference, output and workspace
NaN first: every direction, FP32 and FP16 (BF16 on the GPU grid), 2-D (NHWC) and 3-D (NDHWC)
layers narrow on either side, an NCHW one of one position an image, widths that meet the aligned
objects and widths that do not, several reduction blocks and output column tiles, backward
weights in 2 and 5 parts. The harness is triton_interpreter.py here."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
spec = pytest.importorskip("miopenkernels.kernels.conv_triton_pointwise_spec")

# (C, K, spatial, N, SPLIT_K for backward weights (0: the default split)).
GEOMETRIES = [
    (64, 3, (5, 7), 2, 0),  # a mask head (forward aligned on x's side)
    (3, 64, (4, 6, 5), 1, 2),  # the same, 3-D, the other way round
    (8, 8, (6, 5), 2, 5),  # a latent, narrow on both sides
    (12, 40, (3, 5, 4), 2, 0),  # widths no aligned object takes, a second column tile
    (144, 6, (7, 3), 1, 2),  # three of forward's reduction blocks
    (16, 96, (5, 5), 1, 0),  # an expansion; backward weights' filters wide
    (6, 24, (1, 1), 5, 0, "NCHW"),  # a squeeze-and-excitation expansion, channel-planar
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3}

SCRIPT = HARNESS + textwrap.dedent('''
    direction, cases = json.loads(sys.argv[1])
    solver = get_solver("ConvTritonPointwise" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction])
    rng = np.random.default_rng(0)
    errors = []
    for data_type, (c, k, spatial, n, split, *named) in cases:
        layout = named[0] if named else "NHWC" if len(spatial) == 2 else "NDHWC"
        ones = (1,) * len(spatial)
        p = ConvProblem(n=n, c=c, k=k, in_spatial=tuple(spatial), filter=ones,
                        pad=(0,) * len(spatial), stride=ones, dilation=ones,
                        direction=direction, in_type=data_type, wei_type=data_type,
                        out_type=data_type, in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        if split and direction == "W":
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        tensors, exact, output = layer_tensors(p, direction, data_type, rng)
        workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                        (np.float32, "float32"))
        errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_pointwise_kernels_match_float64(direction: str) -> None:
    cases = [(t, list(g)) for t in ("FP32", "FP16") for g in GEOMETRIES]
    errors = interpreted(SCRIPT, [direction, cases], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[0]]]  # a NaN left in the output fails too
    assert not bad, bad
