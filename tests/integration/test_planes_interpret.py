"""The planes solvers (solvers/triton_planes.py) run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through their own launches: a 2-D solver's objects on each depth slice of
an NCDHW layer of one depth tap, their pointers a slice into the caller's tensors and the
activations' image and channel strides the 3-D ones, against the float64 reference. The GPU
grid runs them too; this checks on every machine that each slice's launch lands where the next
one does not (the output NaN first, so a slice left unwritten fails). The harness is
tests/integration/triton_interpreter.py."""

from __future__ import annotations

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_spec")

# (solver, FindDb key): a video stem's 1x3x3 at spatial stride 2 on 3 channels (and its
# backward data into 3 channels), a (2+1)-D spatial 1x3x3, a 1x1x1 downsample at spatial
# stride 2, a 3-filter output layer; each plane a multiple of 16 bytes.
CASES = [
    ("ConvTritonImplicitGemmTf32x3PlanesFwd",
     "3-4-8-8-1x3x3-16-4-4-4-2-0x1x1-1x2x2-1x1x1-0-NCDHW-FP32-F"),
    ("ConvTritonImplicitGemmPlanesFwd",
     "16-3-4-4-1x1x1-32-3-2-2-2-0x0x0-1x2x2-1x1x1-0-NCDHW-FP32-F"),
    ("ConvTritonFmaPlanesFwd",
     "3-4-8-8-1x3x3-16-4-4-4-2-0x1x1-1x2x2-1x1x1-0-NCDHW-FP32-F"),
    ("ConvTritonImplicitGemmTf32x3PlanesBwd",
     "16-3-6-6-1x3x3-16-3-6-6-2-0x1x1-1x1x1-1x1x1-0-NCDHW-FP32-B"),
    ("ConvTritonImplicitGemmPlanesBwd",
     "32-3-2-2-1x1x1-16-3-4-4-2-0x0x0-1x2x2-1x1x1-0-NCDHW-FP32-B"),
    ("ConvTritonFmaFewKPlanesBwd",
     "16-4-4-4-1x3x3-3-4-8-8-2-0x1x1-1x2x2-1x1x1-0-NCDHW-FP32-B"),
    ("ConvTritonFmaFewKPlanesFwd",
     "3-4-8-8-1x3x3-3-4-4-4-2-0x1x1-1x2x2-1x1x1-0-NCDHW-FP32-F"),
]

SCRIPT = HARNESS + "print(json.dumps(fp32_defaults_errors(json.loads(sys.argv[1]))))\n"


def test_interpreted_planes_launches_match_float64() -> None:
    errors = interpreted(SCRIPT, CASES, len(CASES))
    bad = [(case, e) for case, e in zip(CASES, errors, strict=True)
           if not e < 1e-5]  # a NaN left in the output fails too
    assert not bad, bad
