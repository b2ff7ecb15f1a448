"""The 3-D relaid solvers (solvers/triton_3d_relaid.py), run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through their own launches (the copies into the workspace, the 3-D
implicit GEMM's aligned object on the relaid problem, a split's reduce, the copy back), against
the float64 reference: every direction in FP16; NCDHW problems through NDHWC with and without
channel padding, NDHWC problems of channel counts off the multiple of 16 (a stem's 3, 45, 20),
1x1x1 and 3x3x3 filters, strides 1-2, a split backward weights; and FP32 NCDHW forward and
backward data through NDHWC on the three-TF32-product kernels, forward padded in both layouts.
BF16 is left to the GPU grid
(the interpreter does not model BF16 dots). The harness is
tests/integration/triton_interpreter.py."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

# (layout, C, K, D, H, W, filter, stride, pad, N, backward weights' SPLIT_K or 0 for the
# default)
GEOMETRIES = [
    ("NCDHW", 5, 6, 3, 4, 5, (3, 3, 3), 1, 1, 2, 0),
    ("NCDHW", 16, 16, 3, 6, 6, (1, 3, 3), 2, 1, 1, 4),
    ("NCDHW", 16, 32, 2, 3, 3, (1, 1, 1), 1, 0, 2, 0),
    ("NDHWC", 3, 16, 3, 6, 6, (1, 3, 3), 2, 1, 2, 0),
    ("NDHWC", 16, 45, 3, 4, 4, (3, 1, 1), 1, 1, 1, 2),
    ("NDHWC", 20, 16, 2, 4, 5, (3, 3, 3), 1, 1, 1, 0),
]
TOLERANCE = 3e-3

SCRIPT = HARNESS + textwrap.dedent('''
    direction, cases, *variant = json.loads(sys.argv[1])
    suffix = (variant[0] if variant else "") + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    rng = np.random.default_rng(0)
    errors = []
    for layout, c, k, d, h, w, f, st, pad, n, split in cases:
        infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
        solver = get_solver("ConvTriton3d" + infix + suffix)
        p = ConvProblem(n=n, c=c, k=k, in_spatial=(d, h, w), filter=tuple(f),
                        pad=(pad if f[0] > 1 else 0, pad if f[1] > 1 else 0,
                             pad if f[2] > 1 else 0),
                        stride=(1, st, st), direction=direction, in_type="FP16",
                        wei_type="FP16", out_type="FP16", in_layout=layout,
                        wei_layout=layout, out_layout=layout)
        params, error = default_launches_error(solver, p, split if direction == "W" else 0,
                                               rng)
        main_job = solver.compile_job(p, params, SM90)
        assert "--assume=" in " ".join(main_job.options), main_job.options  # the aligned object
        errors.append(error)
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_relaid_launches_match_float64(direction: str) -> None:
    errors = interpreted(SCRIPT, [direction, GEOMETRIES], len(GEOMETRIES))
    bad = [(case, e) for case, e in zip(GEOMETRIES, errors, strict=True)
           if not e < TOLERANCE]  # a NaN left in the output fails too
    assert not bad, bad


def test_interpreted_relaid_tap_groups_match_float64() -> None:
    """ConvTriton3d{ViaNdhwc,Padded}TapsWrw: the relaid backward weights on the several-taps
    solver (3 taps along s, along t of the 3x1x1 filter), splits included."""
    cases = [g for g in GEOMETRIES if tuple(g[6]) != (1, 1, 1)]
    errors = interpreted(SCRIPT, ["W", cases, "Taps"], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE]  # a NaN left in the output fails too
    assert not bad, bad


# FP32 NCDHW problems whose channels need no padding, through NDHWC on the three-TF32-product
# kernels (ConvTriton3dViaNdhwcTf32x3{Fwd,Bwd}): (C, K, D, H, W, filter, stride, pad, N).
FP32_GEOMETRIES = [
    (16, 32, 3, 5, 6, (1, 3, 3), 1, 1, 2),
    (32, 16, 4, 5, 5, (3, 3, 3), 2, 1, 1),
    (16, 16, 2, 4, 4, (3, 1, 1), 1, 1, 2),
]
# Forward of channel counts off the multiple (RELAID_TF32X3_PADDED): padded in the copies.
FP32_PADDED = [(20, 45, 3, 4, 5, (3, 1, 1), 1, 1, 2), (18, 16, 2, 5, 5, (1, 3, 3), 2, 1, 1)]
FP32_SCRIPT = HARNESS + textwrap.dedent('''
    direction, cases, layout = json.loads(sys.argv[1])
    infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
    solver = get_solver(f"ConvTriton3d{infix}Tf32x3" + {"F": "Fwd", "B": "Bwd"}[direction])
    rng = np.random.default_rng(1)
    errors = []
    for c, k, d, h, w, f, st, pad, n in cases:
        p = ConvProblem(n=n, c=c, k=k, in_spatial=(d, h, w), filter=tuple(f),
                        pad=tuple(pad if v > 1 else 0 for v in f), stride=(1, st, st),
                        direction=direction, in_type="FP32", wei_type="FP32",
                        out_type="FP32", in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        tensors, exact, output = layer_tensors(p, direction, "FP32", rng)
        workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                        (np.float32, "float32"))
        errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B"])
def test_interpreted_fp32_route_through_ndhwc_matches_float64(direction: str) -> None:
    """The FP32 NCDHW route: the transposes (forward: channels padded where they miss the
    multiple), the three-product kernel's aligned NDHWC object, the copy back, against
    float64 (three TF32 products: close to FP32)."""
    cases = FP32_GEOMETRIES + (FP32_PADDED if direction == "F" else [])
    errors = interpreted(FP32_SCRIPT, [direction, cases, "NCDHW"], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < 1e-4]  # a NaN left in the output fails too
    assert not bad, bad


def test_interpreted_fp32_padded_ndhwc_forward_matches_float64() -> None:
    """ConvTriton3dPaddedTf32x3Fwd: NDHWC forward of channels off the multiple, the copies
    padding x and w (and y's copy back), on the three-product kernel's aligned object."""
    errors = interpreted(FP32_SCRIPT, ["F", FP32_PADDED, "NDHWC"], len(FP32_PADDED))
    bad = [(case, e) for case, e in zip(FP32_PADDED, errors, strict=True) if not e < 1e-4]
    assert not bad, bad
