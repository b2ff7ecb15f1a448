"""The batch-chunk solvers' arithmetic, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1)
through their own launches (every chunk's, its pointers a chunk's bytes into the caller's
tensors, and backward weights' one reduce over every chunk's partials), against the float64
reference: every direction in FP16, NCDHW and NDHWC, convolutions and transposed ones, chunkings
whose offsets keep the aligned channels-last objects legal and ones that take the generic
objects, the chunk solvers over the 3-D relaid solvers (each chunk's copies into the
workspace and back), and the 2-D family's solvers on one layer. A tensor of 2**31 elements is
too large for the interpreter, so the script lowers the limit the chunking works to
(`triton_chunks.LIMIT`) to a few hundred elements; the kernels' own offsets are untouched.
The harness is triton_interpreter.py here."""

from __future__ import annotations

import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_3d_spec")

# (layout, mode, C, K, spatial, filter, stride, pad, N, LIMIT, (images, chunks, aligned)).
# The limit is in elements: a tensor of that many or more is cut into chunks of the batch.
CASES_3D = [
    # One channel, 32 filters (3D U-Net's input layer): 3 uneven chunks, offsets of no
    # 256-byte step.
    ("NCDHW", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False)),
    ("NDHWC", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False)),
    # 16 channels and filters: every chunk's offset a multiple of 256 bytes (NDHWC: the
    # aligned channels-last objects).
    ("NDHWC", "conv", 16, 16, (2, 4, 4), 1, 1, 0, 3, 1100, (2, 2, True)),
    ("NCDHW", "conv", 16, 16, (2, 4, 4), 1, 1, 0, 3, 1100, (2, 2, True)),
    # 2x2x2/2 up-convolutions (transposed): the chunks cut the plain convolution's tensors.
    ("NCDHW", "trans", 2, 2, (2, 3, 3), 2, 2, 0, 3, 600, (2, 2, False)),
    ("NDHWC", "trans", 2, 2, (2, 3, 3), 2, 2, 0, 3, 600, (2, 2, False)),
]
# 3x3x3 with 16 channels: forward and backward data alone (the weights' partials of a split
# would pass the lowered limit).
CASES_3D_FB = [
    ("NDHWC", "conv", 16, 16, (4, 8, 8), 3, 1, 1, 3, 8200, (2, 2, True)),
]
# The 2-D solvers on a 1x1 NHWC layer and a transposed 3x3 NCHW one.
CASES_2D = [
    ("NHWC", "conv", 16, 16, (6, 6), 1, 1, 0, 3, 1200, (2, 2, True)),
    ("NCHW", "trans", 4, 8, (5, 5), 3, 1, 1, 8, 1200, (4, 2, False)),
]
# The chunk solvers over the relaid ones (then the relaid solver, ViaNdhwc for NCDHW, Padded
# for NDHWC, and whether the conv launches take the aligned object): 16 -> 3 channels (3D
# U-Net's output layer, padded to 16 filters) in both layouts.
CASES_RELAID = [
    ("NCDHW", "conv", 16, 3, (2, 4, 8), 1, 1, 0, 3, 2100, (2, 2, True), "ViaNdhwc", True),
    ("NDHWC", "conv", 16, 3, (2, 4, 8), 1, 1, 0, 3, 2100, (2, 2, True), "Padded", True),
]
# Forward and backward data alone (the weights' partials, 16 padded channels' worth, would
# pass the lowered limit): one channel padded to 16 and 32 filters (its input layer) in both
# layouts, uneven chunks at offsets of no 256-byte step (NCDHW: aligned all the same, both
# activations are copies in the workspace; NDHWC: y is the caller's); one channel and 8
# filters, chunked by the padded input's 16 channels (the caller's widest tensor, y, would fit
# 3 images a chunk).
CASES_RELAID_FB = [
    ("NCDHW", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False), "ViaNdhwc", True),
    ("NDHWC", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False), "Padded", False),
    ("NDHWC", "conv", 1, 8, (2, 4, 8), 3, 1, 1, 4, 2100, (2, 2, True), "Padded", True),
]
# The few-channel solvers' chunks (ConvTriton3dSmallCChunks, forward and backward weights): 3D
# U-Net's input layer in both layouts, 3 uneven chunks (the generic objects, which assume
# nothing, are all these solvers have).
CASES_SMALLC = [
    ("NCDHW", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False), "SmallC", False),
    ("NDHWC", "conv", 1, 32, (4, 5, 5), 3, 1, 1, 5, 6500, (2, 3, False), "SmallC", False),
]
# The 2-D padded solvers' chunks (ConvTritonImplicitGemmPaddedChunks, forward and backward
# weights): 16 -> 3 channels (ESRGAN's output, its 3 filters padded to 8) in NHWC; a 1x1 layer
# in chunks whose offsets keep the aligned object legal, a 3x3 one in chunks that take the
# generic object (forward: the padded weights' partials would pass the limit).
CASES_PADDED_2D = [
    ("NHWC", "conv", 16, 3, (8, 8), 1, 1, 0, 3, 2100, (2, 2, True), "Padded", True),
]
CASES_PADDED_2D_FB = [
    ("NHWC", "conv", 16, 3, (6, 6), 3, 1, 1, 3, 1200, (2, 2, False), "Padded", False),
]
TOLERANCE = 3e-3
#: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K, num_warps, num_stages on an sm80 target (small
#: tiles keep the interpreter quick); backward weights splits each chunk in two.
TILE = (32, 16, 16, 1, 1, 4, 2)

SCRIPT = HARNESS + textwrap.dedent('''
    from miopenkernels.solvers import SOLVERS
    from miopenkernels.solvers import triton_chunks

    SM80 = Target("sm80", 108)

    direction, cases, tile = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    errors = []
    for layout, mode, c, k, spatial, f, st, pad, n, limit, want, *relaid in cases:
        triton_chunks.LIMIT = limit
        triton_chunks.chunking.cache_clear()
        dims = len(spatial)
        p = ConvProblem(n=n, c=c, k=k, in_spatial=tuple(spatial), filter=(f,) * dims,
                        pad=(pad,) * dims, stride=(st,) * dims, direction=direction,
                        in_type="FP16", in_layout=layout, wei_layout=layout,
                        out_layout=layout, mode=mode)
        if relaid:
            family = f"ConvTriton3d{relaid[0]}Chunks" if dims == 3 else \
                f"ConvTritonImplicitGemm{relaid[0]}Chunks"
        else:
            family = "ConvTriton3dChunks" if dims == 3 else "ConvTritonImplicitGemmChunks"
        solver, = [s for s in SOLVERS if s.name.startswith(family) and
                   s.is_applicable(p, SM80)]
        # (A relaid one sizes its chunks by its copies too where they are the widest.)
        assert tuple(solver._chunking(p)) == tuple(want), (p.key(), want)
        params = tuple(tile[:4]) + (2 if direction == "W" else 1,) + tuple(tile[5:])
        assert solver.params_valid(p, SM80, params), params
        # The aligned channels-last object exactly where every chunk keeps it legal.
        job = solver.compile_job(p, params, SM80)
        aligned = any(o.startswith("--assume") for o in job.options)
        expect = relaid[1] if relaid else \
            want[2] and layout in ("NHWC", "NDHWC") and c % 16 == 0
        assert aligned == expect, job
        tensors, exact, output = layer_tensors(p, direction, "FP16", rng)
        main = solver.launch(p, params)
        workspace_parts(tensors, solver, p, params, main.workspace_bytes,
                        (np.float16, "float16"))
        parts = Parts(tensors, solver.workspace_slots(p, params))
        steps = [*solver.lead_ins(p, params, SM80), (job, main),
                 *solver.follow_ups(p, params, SM80)]
        conv_steps = [s for _, s in steps
                      if s.kernel_name.startswith("conv") and "reduce" not in s.kernel_name]
        assert len(conv_steps) == want[1], [s.kernel_name for _, s in steps]
        for job, step in steps:
            run(job_module(job), step, job, parts)
        ref = conv_reference(p, exact)
        got = to_host(tensors[output])
        errors.append(float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    print(json.dumps(errors))
''')


def _check(direction: str, cases: list) -> None:
    errors = interpreted(SCRIPT, [direction, cases, TILE], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE]  # a NaN left in the output fails too
    assert not bad, bad


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_3d_chunks_match_float64(direction: str) -> None:
    _check(direction, CASES_3D + (CASES_3D_FB if direction != "W" else []))


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_relaid_3d_chunks_match_float64(direction: str) -> None:
    _check(direction, CASES_RELAID + (CASES_RELAID_FB if direction != "W" else []))


@pytest.mark.parametrize("direction", ["F", "W"])
def test_interpreted_smallc_3d_chunks_match_float64(direction: str) -> None:
    _check(direction, CASES_SMALLC)


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_2d_chunks_match_float64(direction: str) -> None:
    _check(direction, CASES_2D)


@pytest.mark.parametrize("direction", ["F", "W"])
def test_interpreted_padded_2d_chunks_match_float64(direction: str) -> None:
    _check(direction, CASES_PADDED_2D + (CASES_PADDED_2D_FB if direction != "W" else []))
