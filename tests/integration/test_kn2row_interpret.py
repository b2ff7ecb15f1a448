"""The kn2row solvers (solvers/triton_kn2row.py) run by Triton's interpreter on the CPU
(TRITON_INTERPRET=1) through their own launches: the flip lead-in writing the GEMM's filters,
the implicit GEMM's object on the GEMM problem writing Z, and the tap sum, against the float64
reference. The output and the workspace are NaN first, so a tap the sum never reads, a Z
plane the GEMM leaves unwritten or an output element left out fails. Forward and backward
data, both layouts, IEEE and three-product GEMMs, strides, padding and dilation. The harness
is tests/integration/triton_interpreter.py."""

from __future__ import annotations

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_kn2row_spec")

from miopenkernels.problem import ConvProblem  # noqa: E402


def _problem(direction: str, layout: str, c: int, k: int, hw: tuple[int, int],
             rs: tuple[int, int], pad: tuple[int, int] = (1, 1),
             stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1)) -> str:
    return ConvProblem(n=2, c=c, k=k, in_spatial=hw, filter=rs, pad=pad, stride=stride,
                       dilation=dilation, direction=direction, in_layout=layout,
                       wei_layout=layout, out_layout=layout).key()


# (solver, FindDb key): few-filter outputs (forward) and few-channel inputs (backward data).
CASES = [
    ("ConvTritonImplicitGemmTf32x3Kn2RowFwd", _problem("F", "NCHW", 16, 3, (6, 5), (3, 3))),
    ("ConvTritonImplicitGemmKn2RowFwd", _problem("F", "NHWC", 16, 4, (5, 6), (3, 3))),
    ("ConvTritonImplicitGemmTf32x3Kn2RowFwd",
     _problem("F", "NHWC", 24, 2, (7, 6), (3, 2), pad=(2, 0), stride=(2, 1),
              dilation=(1, 2))),
    ("ConvTritonImplicitGemmTf32x3Kn2RowBwd", _problem("B", "NCHW", 4, 16, (6, 6), (3, 3))),
    ("ConvTritonImplicitGemmKn2RowBwd", _problem("B", "NHWC", 3, 16, (6, 5), (3, 3))),
    ("ConvTritonImplicitGemmTf32x3Kn2RowBwd",
     _problem("B", "NCHW", 2, 16, (9, 8), (3, 3), pad=(1, 2), stride=(2, 3),
              dilation=(1, 2))),
    ("ConvTritonImplicitGemmKn2RowBwd",
     _problem("B", "NHWC", 3, 16, (8, 8), (5, 5), pad=(2, 2), stride=(2, 2))),
]

SCRIPT = HARNESS + "print(json.dumps(fp32_defaults_errors(json.loads(sys.argv[1]))))\n"


def test_interpreted_kn2row_launches_match_float64() -> None:
    errors = interpreted(SCRIPT, CASES, len(CASES))
    bad = [(case, e) for case, e in zip(CASES, errors, strict=True)
           if not e < 1e-5]  # a NaN left in the output fails too
    assert not bad, bad
