"""The im2col solvers (solvers/blas_im2col.py) with their gather run by
Triton's interpreter on the CPU (TRITON_INTERPRET=1) through their own lead-in, and the GEMM
library's call emulated on numpy (cuBLAS's column-major strided product), against the float64
reference. The output and the workspace are NaN first, so a column the gather leaves
unwritten or an element the call does not write fails. Forward, backward data, backward
weights of few input channels and of few filters; strides, padding and dilation; 2-D and 3-D;
channels-last and channel planes. The harness is
tests/integration/triton_interpreter.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_im2col_spec")

from miopenkernels.problem import ConvProblem  # noqa: E402


def _key(c: int, k: int, hw: tuple[int, ...], rs: tuple[int, ...],
         pad: tuple[int, ...] = (1, 1), stride: tuple[int, ...] = (1, 1),
         dilation: tuple[int, ...] = (1, 1), direction: str = "W", layout: str = "NHWC") -> str:
    return ConvProblem(n=2, c=c, k=k, in_spatial=hw, filter=rs, pad=pad, stride=stride,
                       dilation=dilation, direction=direction, in_layout=layout,
                       wei_layout=layout, out_layout=layout).key()


def _key3(c: int, k: int, trs: tuple[int, int, int], pad: tuple[int, int, int],
          stride: tuple[int, int, int], direction: str, layout: str) -> str:
    return _key(c, k, (4, 6, 5), trs, pad, stride, (1, 1, 1), direction, layout)


CASES = [
    _key(3, 16, (7, 6), (3, 3)),  # an image stem
    _key(3, 24, (9, 8), (6, 6), pad=(2, 2), stride=(2, 2)),  # YOLOv5's 6x6 stem
    _key(4, 16, (8, 8), (4, 4), pad=(0, 0), stride=(4, 4)),  # ConvNeXt's patches
    _key(2, 16, (9, 7), (3, 2), pad=(2, 0), stride=(2, 1), dilation=(1, 2)),
    _key(20, 4, (6, 5), (3, 3)),  # a latent output
    _key(16, 3, (9, 8), (3, 3), pad=(1, 2), stride=(2, 3), dilation=(1, 2)),
    _key(24, 8, (7, 6), (3, 3), dilation=(2, 1), pad=(2, 1)),  # x gathered, the wider side
    _key(12, 12, (9, 8), (3, 3), stride=(2, 2)),  # a plain layer's
    _key(6, 5, (7, 6), (3, 3), direction="F"),
    _key(24, 40, (9, 8), (5, 3), pad=(2, 0), dilation=(1, 2), direction="B"),
    # channel planes: a call per image; backward weights' FP32 products summed by the reduce
    _key(6, 5, (9, 8), (3, 3), stride=(2, 1), direction="F", layout="NCHW"),
    _key(6, 5, (9, 8), (3, 3), direction="B", layout="NCHW"),
    _key(3, 16, (9, 8), (3, 3), stride=(2, 2), layout="NCHW"),
    _key(20, 4, (7, 6), (3, 3), layout="NCHW"),
    _key(8, 12, (9, 8), (5, 3), pad=(2, 0), stride=(2, 1), dilation=(1, 2), direction="F"),
    # 3-D layers: a video stem, a temporal layer, a full filter's backward data and weights
    _key3(3, 8, (3, 3, 3), (1, 1, 1), (1, 2, 2), "F", "NCDHW"),
    _key3(6, 5, (3, 1, 1), (1, 0, 0), (2, 1, 1), "F", "NDHWC"),
    _key3(6, 5, (3, 3, 3), (1, 1, 1), (1, 1, 1), "B", "NDHWC"),
    _key3(8, 3, (1, 3, 3), (0, 1, 1), (1, 1, 1), "B", "NCDHW"),
    _key3(3, 16, (1, 3, 3), (0, 1, 1), (1, 2, 2), "W", "NDHWC"),
    _key3(12, 12, (3, 3, 3), (1, 1, 1), (1, 1, 1), "W", "NCDHW"),
    _key3(20, 4, (3, 3, 3), (1, 1, 1), (2, 1, 1), "W", "NCDHW"),
]

#: cuBLAS's strided-batched product on numpy: the unit tests' double (tests/unit/blas_doubles.py).
UNIT = str(Path(__file__).resolve().parents[1] / "unit")
SCRIPT = HARNESS + f"sys.path.insert(0, {UNIT!r})\nfrom blas_doubles import emulate\n" + '''
def im2col_errors(keys):
    from miopenkernels.solvers import LIBRARY_SOLVERS
    from miopenkernels.solvers.blas_im2col import im2col_plan
    rng = np.random.default_rng(0)
    errors = []
    for key in keys:
        p = ConvProblem.from_key(key)
        name = "ConvBlasIm2col" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[p.direction]
        solver = next(s for s in LIBRARY_SOLVERS if s.name == name)
        assert solver.is_applicable(p, SM90), key
        tensors, exact, output = layer_tensors(p, p.direction, "FP32", rng)
        nbytes = solver.workspace_for(p, ())
        workspace_parts(tensors, solver, p, (), nbytes, (np.float32, "float32"))
        tensors = Parts(tensors, solver.workspace_slots(p, ()))
        for job, gather in solver.lead_ins(p, (), SM90):
            run(job_module(job), gather, job, tensors)
        rows, cols = im2col_spec_shape(p)
        col = tensors["ws_col"].array[:rows * cols].astype(np.float64)
        if np.isnan(col).any():
            errors.append(float("nan"))
            continue
        names = {"F": ("x", "w", "y"), "B": ("dx", "w", "dy"), "W": ("x", "dy", "dw")}[
            p.direction]
        buffers = {name: tensors[name].array.reshape(-1).astype(np.float64) for name in names}
        buffers["ws_col"] = col
        if p.direction == "B":  # the filters taps first
            buffers["ws_w"] = tensors["ws_w"].array.reshape(-1).astype(np.float64)
        plan = im2col_plan(p)
        if plan.reduce:  # each image's FP32 product, then the reduce's launch
            part = tensors["ws_part"].array.reshape(-1)
            buffers["ws_part"] = part.astype(np.float64)
            emulate(plan.call, buffers)
            part[:] = buffers["ws_part"]
            for job, launch in solver.follow_ups(p, (), SM90):
                run(job_module(job), launch, job, tensors)
            got = tensors[output].array.astype(np.float64)
        else:
            emulate(plan.call, buffers)
            got = buffers[output].reshape(tensors[output].array.shape)
        ref = conv_reference(p, exact)
        errors.append(float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    return errors

def im2col_spec_shape(p):
    from miopenkernels.solvers.blas_im2col import _view, im2col_spec
    return im2col_spec().col_shape(p.direction, _view(p)[1])

print(json.dumps(im2col_errors(json.loads(sys.argv[1]))))
'''


def test_interpreted_gather_and_emulated_call_match_float64() -> None:
    errors = interpreted(SCRIPT, CASES, len(CASES))
    # channel-planar backward weights: the products' FP32 partial sums (float64 elsewhere)
    planar_w = ("-NCHW-FP32-W", "-NCDHW-FP32-W")
    bad = [(case, e) for case, e in zip(CASES, errors, strict=True)
           if not e < (1e-6 if case.endswith(planar_w) else 1e-12)]  # NaN fails too
    assert not bad, bad
