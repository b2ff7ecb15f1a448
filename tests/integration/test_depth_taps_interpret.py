"""The depth-taps solvers (solvers/triton_depth_taps.py) run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through their own launches: the 2-D implicit GEMM's objects per depth
slice and tap into the workspace's parts, the split reduce into dx, against the float64
reference. tests/launch_emulation.py replays the same launches as their arguments read; this
runs the kernels themselves, so that what the emulation assumes of them (where a part starts,
in what order the reduce reads it) is checked too: the GPU grid once found dx NaN where each
part had been rounded up to the workspace's alignment, which the emulation's shapes (every
part a multiple of 256 bytes) had not shown. The harness is tests/integration/
triton_interpreter.py."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

# FindDb keys (backward data): the GPU grid's cases that failed with padded parts (3x1x1 to 20
# channels, a 3-channel stem at spatial stride 2, depthwise groups), one that passed.
KEYS = [
    "45-5-6-6-3x1x1-20-5-6-6-2-1x0x0-1x1x1-1x1x1-0-NCDHW-FP32-B",
    "16-4-6-6-3x5x5-3-4-12-12-2-1x2x2-1x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP32-B",
    "18-4-7-9-3x3x3-18-4-7-9-2-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-B_g18",
    "32-6-8-8-3x3x3-1-6-8-8-2-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-B",
]

SCRIPT = HARNESS + textwrap.dedent('''
    name, keys = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    errors = []
    for key in keys:
        solver = get_solver(name)
        p = ConvProblem.from_key(key)
        assert solver.is_applicable(p, SM90), key
        params = solver.default_params(p, SM90)
        tensors, exact, output = layer_tensors(p, "B", "FP32", rng)
        workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                        (np.float32, "float32"))
        tensors = Parts(tensors, solver.workspace_slots(p, params))
        errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("name", ["ConvTritonImplicitGemmTf32x3DepthTapsBwd",
                                  "ConvTritonImplicitGemmDepthTapsBwd"])
def test_interpreted_depth_taps_launches_match_float64(name: str) -> None:
    errors = interpreted(SCRIPT, [name, KEYS], len(KEYS))
    bad = [(key, e) for key, e in zip(KEYS, errors, strict=True)
           if not e < 1e-5]  # a NaN left in the output fails too
    assert not bad, bad
