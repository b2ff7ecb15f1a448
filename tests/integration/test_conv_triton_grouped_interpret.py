"""Grouped convolutions on the Triton solvers, run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through the solvers' own launches against the float64 reference: the
implicit GEMM (groups as program axis 1) in every direction, backward data included, and its
few-channel and split forms, in FP32 and FP16; its packed kernels (fewer than 16 channels and
filters a group, several groups to a tile) in FP16 (the interpreter does not model BF16
dots); the grouped direct family in FP32 (2-8 channels or filters a group, filters 3/5/7,
strides 1/2, dilation, a channel multiplier, a split backward-weights reduction); both
layouts. The interpreter's harness (numpy arrays as tensors) is
tests/integration/triton_interpreter.py."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_grouped_spec")

# (channels a group, filters a group, groups, H, W, filter, stride, pad, dilation, N, SPLIT_K)
GEMM_GEOMETRIES = [
    (16, 16, 2, 8, 8, 3, 1, 1, 1, 2, 0),
    (8, 16, 4, 9, 7, 3, 2, 1, 1, 1, 0),
    (16, 32, 2, 6, 6, 1, 1, 0, 1, 2, 0),
    (16, 16, 2, 8, 8, 3, 1, 1, 1, 2, 2),
]
# The packed kernels (fewer than 16 channels and filters a group, 16-bit): groups that fill a
# tile, one that does not (13 groups of 8 across 32-wide tiles), uneven channels and filters,
# a channel multiplier, strides, dilation, a split backward weights.
PACKED_GEOMETRIES = [
    (4, 4, 8, 7, 7, 3, 1, 2, 2, 1, 0),
    (8, 8, 13, 9, 8, 3, 2, 1, 1, 2, 0),
    (8, 8, 5, 7, 7, 3, 1, 1, 1, 1, 0),
    (3, 8, 2, 9, 9, 3, 2, 1, 1, 1, 0),
    (1, 4, 6, 8, 8, 5, 1, 2, 1, 1, 0),
    (8, 4, 6, 8, 7, 1, 2, 0, 1, 2, 0),
    (8, 8, 13, 9, 8, 3, 1, 1, 1, 2, 4),
]
# The same for the grouped direct family.
DIRECT_GEOMETRIES = [
    (4, 4, 4, 7, 6, 3, 1, 1, 1, 2, 0),
    (2, 8, 3, 9, 8, 3, 2, 1, 1, 1, 0),
    (8, 2, 2, 8, 7, 5, 1, 2, 2, 1, 0),
    (1, 2, 6, 7, 7, 3, 1, 1, 1, 2, 0),
    (4, 4, 4, 9, 9, 7, 2, 3, 1, 2, 4),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3, "BF16": 2e-2}

SCRIPT = HARNESS + textwrap.dedent('''
    family, direction, cases = json.loads(sys.argv[1])
    solver = get_solver(family + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction])
    rng = np.random.default_rng(0)
    errors = []
    for layout, t, (cg, kg, g, h, w, f, st, pad, dil, n, split) in cases:
        p = ConvProblem(n=n, c=cg * g, k=kg * g, groups=g, in_spatial=(h, w), filter=(f, f),
                        pad=(pad, pad), stride=(st, st), dilation=(dil, dil), direction=direction,
                        in_type=t, wei_type=t, out_type=t, in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        errors.append(default_error(solver, p, split, rng))
    print(json.dumps(errors))
''')


def _failures(family: str, direction: str, geometries: list[tuple[int, ...]],
              types: tuple[str, ...]) -> list:
    """The cases of `family` (a solver name without its direction) in both layouts whose
    error is over the type's tolerance (or NaN: an element left unwritten)."""
    cases = [(layout, t, g) for layout in ("NCHW", "NHWC") for t in types for g in geometries]
    errors = interpreted(SCRIPT, [family, direction, cases], len(cases))
    return [(c, e) for c, e in zip(cases, errors, strict=True) if not e < TOLERANCE[c[1]]]


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_implicit_gemm_with_groups_matches_float64(direction: str) -> None:
    bad = _failures("ConvTritonImplicitGemm", direction, GEMM_GEOMETRIES, ("FP32", "FP16"))
    assert not bad, bad


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_packed_kernels_match_float64(direction: str) -> None:
    geometries = [g if direction == "W" else (*g[:-1], 0) for g in PACKED_GEOMETRIES]
    bad = _failures("ConvTritonImplicitGemm", direction, geometries, ("FP16",))
    assert not bad, bad


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_grouped_direct_family_matches_float64(direction: str) -> None:
    geometries = [g if direction == "W" else (*g[:-1], 0) for g in DIRECT_GEOMETRIES]
    bad = _failures("ConvTritonGrouped", direction, geometries, ("FP32",))
    assert not bad, bad


# Packed backward weights in NCHW through the NHWC packed kernel (VIA_NHWC_PACKED): the
# transposes of x and dy into the workspace, the packed kernel, a split's reduce and dw's copy
# back; groups of 4 and 8 channels, a stride, a split.
VIA_PACKED_GEOMETRIES = [
    (4, 4, 8, 7, 7, 3, 1, 1, 1, 2, 0),
    (8, 8, 6, 9, 8, 3, 2, 1, 1, 2, 0),
    (8, 8, 4, 8, 8, 3, 1, 1, 1, 1, 4),
]
VIA_SCRIPT = HARNESS + textwrap.dedent('''
    cases = json.loads(sys.argv[1])
    solver = get_solver("ConvTritonImplicitGemmViaNhwcWrw")
    rng = np.random.default_rng(0)
    errors = []
    for cg, kg, g, h, w, f, st, pad, dil, n, split in cases:
        p = ConvProblem(n=n, c=cg * g, k=kg * g, groups=g, in_spatial=(h, w), filter=(f, f),
                        pad=(pad, pad), stride=(st, st), dilation=(dil, dil), direction="W",
                        in_type="FP16", wei_type="FP16", out_type="FP16")
        params, error = default_launches_error(solver, p, split, rng)
        assert solver.compile_job(p, params, SM90).kernel_name.endswith("_packed"), params
        errors.append(error)
    print(json.dumps(errors))
''')


def test_packed_backward_weights_through_the_nhwc_kernel_match_float64() -> None:
    errors = interpreted(VIA_SCRIPT, VIA_PACKED_GEOMETRIES, len(VIA_PACKED_GEOMETRIES))
    bad = [(g, e) for g, e in zip(VIA_PACKED_GEOMETRIES, errors, strict=True)
           if not e < TOLERANCE["FP16"]]
    assert not bad, bad
