"""The direct forward families on the FP32 units (solvers/triton_fma.py: few channels, few
filters): every object they ship compiles for sm90, gfx942 and gfx1100 as the builder does,
within each arch's limits (no VGPR spills, no scratch, no LDS), and their launches, run by
Triton's interpreter on the CPU, match the float64 reference (both layouts; stems at stride 1
and 2, dilation, odd sizes, partial tiles; outputs of 1-8 filters over channel counts off the
channel block; FP32)."""

from __future__ import annotations

import re
import textwrap

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

triton = pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_fma_spec")

from triton.backends.compiler import GPUTarget  # noqa: E402

# (N, C, H, W, K, filter, stride, pad, dilation)
STEMS = [(2, 3, 11, 9, 16, 3, 2, 1, 1), (1, 4, 8, 8, 24, 3, 1, 1, 1),
         (2, 3, 13, 12, 70, 7, 2, 3, 1), (1, 1, 9, 10, 8, 3, 1, 2, 2), (3, 2, 6, 7, 33, 2, 2, 0, 1)]

SCRIPT = HARNESS + textwrap.dedent('''
    stems = json.loads(sys.argv[1])
    solver = get_solver("ConvTritonFmaFwd")
    rng = np.random.default_rng(0)
    errors = []
    for layout in ("NCHW", "NHWC"):
        for n, c, h, w, k, f, st, pad, dil in stems:
            p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f), pad=(pad, pad),
                            stride=(st, st), dilation=(dil, dil), in_type="FP32",
                            in_layout=layout, wei_layout=layout, out_layout=layout)
            assert solver.is_applicable(p, SM90), p.key()
            params = solver.default_params(p, SM90)
            job = solver.compile_job(p, params, SM90)
            assert ("-DCHANNELS_LAST=1" in job.options) == (layout == "NHWC"), job.options
            tensors, exact, output = layer_tensors(p, "F", "FP32", rng)
            errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
    print(json.dumps(errors))
''')


def test_launches_match_float64() -> None:
    errors = interpreted(SCRIPT, STEMS, 2 * len(STEMS))
    assert all(e < 1e-6 for e in errors), errors


# (N, C, H, W, K, filter, stride, pad, dilation): the UNet's 320 -> 4 output (small), a VAE
# decoder's 128 -> 3, one filter at 1x1, 8 filters dilated at stride 2, 5 filters over 37
# channels (neither block full).
HEADS = [(2, 320, 6, 5, 4, 3, 1, 1, 1), (1, 128, 7, 9, 3, 3, 1, 1, 1),
         (3, 64, 5, 4, 1, 1, 1, 0, 1), (2, 40, 11, 10, 8, 3, 2, 2, 2),
         (2, 37, 6, 7, 5, 5, 1, 2, 1)]

HEADS_SCRIPT = HARNESS + textwrap.dedent('''
    heads = json.loads(sys.argv[1])
    solver = get_solver("ConvTritonFmaFewKFwd")
    rng = np.random.default_rng(1)
    errors = []
    for data_type in ("FP32",):
        for layout in ("NCHW", "NHWC"):
            for n, c, h, w, k, f, st, pad, dil in heads:
                p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f),
                                pad=(pad, pad), stride=(st, st), dilation=(dil, dil),
                                in_type=data_type, wei_type=data_type, out_type=data_type,
                                in_layout=layout, wei_layout=layout, out_layout=layout)
                assert solver.is_applicable(p, SM90), p.key()
                params = solver.default_params(p, SM90)
                assert params[1] >= k and solver.params_valid(p, SM90, params), params
                job = solver.compile_job(p, params, SM90)
                assert ("-DCHANNELS_LAST=1" in job.options) == (layout == "NHWC")
                tensors, exact, output = layer_tensors(p, "F", data_type, rng)
                errors.append(launches_error(solver, p, params, SM90, tensors, exact,
                                             output))
    print(json.dumps(errors))
''')


def test_few_filter_launches_match_float64() -> None:
    errors = interpreted(HEADS_SCRIPT, HEADS, 2 * len(HEADS))
    assert all(e < 1e-6 for e in errors), errors


WRW_SCRIPT = HARNESS + textwrap.dedent('''
    name, heads = json.loads(sys.argv[1])
    solver = get_solver(name)
    rng = np.random.default_rng(2)
    errors = []
    for layout in ("NCHW", "NHWC"):
        for n, c, h, w, k, f, st, pad, dil, split in heads:
            p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f), pad=(pad, pad),
                            stride=(st, st), dilation=(dil, dil), in_type="FP32",
                            in_layout=layout, wei_layout=layout, out_layout=layout,
                            direction="W")
            assert solver.is_applicable(p, SM90), p.key()
            params = solver.default_params(p, SM90)
            params = params[:4] + (split,) + params[5:]
            assert solver.params_valid(p, SM90, params), params
            assert len(solver.follow_ups(p, params, SM90)) == (split > 1)
            tensors, exact, output = layer_tensors(p, "W", "FP32", rng)
            workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                            (np.float32, "float32"))
            errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
    print(json.dumps(errors))
''')

# The heads above as backward weights, each at one part (dw written directly) or several (the
# partials and the reduce kernel; parts past the last position block write zeros).
WRW_HEADS = [(*head, split) for head, split in zip(HEADS, (1, 3, 7, 2, 64), strict=True)]


def test_few_filter_backward_weights_match_float64() -> None:
    errors = interpreted(WRW_SCRIPT, ["ConvTritonFmaFewKWrw", WRW_HEADS], 2 * len(WRW_HEADS))
    assert all(e < 1e-6 for e in errors), errors


# The stems above as backward weights (few channels): 16 filters at stride 2, 24 at stride 1,
# 70 filters under 7x7 (two filter blocks, five column blocks), 8 dilated, 33 at 2x2 stride
# 2, each at one part or several.
WRW_STEMS = [(*stem, split) for stem, split in zip(STEMS, (1, 4, 3, 1, 64), strict=True)]


def test_few_channel_backward_weights_match_float64() -> None:
    errors = interpreted(WRW_SCRIPT, ["ConvTritonFmaFewCWrw", WRW_STEMS], 2 * len(WRW_STEMS))
    assert all(e < 1e-6 for e in errors), errors


BWD_SCRIPT = HARNESS + textwrap.dedent('''
    name, layers = json.loads(sys.argv[1])
    solver = get_solver(name)
    rng = np.random.default_rng(3)
    errors = []
    for layout in ("NCHW", "NHWC"):
        for n, c, h, w, k, f, pad, dil, *stride in layers:
            st = tuple(stride[0]) if stride else (1, 1)
            fh, fw = (f, f) if isinstance(f, int) else f
            p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(fh, fw),
                            pad=(pad, pad), stride=st, dilation=(dil, dil), in_type="FP32",
                            in_layout=layout, wei_layout=layout, out_layout=layout,
                            direction="B")
            assert solver.is_applicable(p, SM90), p.key()
            params = solver.default_params(p, SM90)
            assert solver.params_valid(p, SM90, params), params
            tensors, exact, output = layer_tensors(p, "B", "FP32", rng)
            workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                            (np.float32, "float32"))
            launches = 1 + len(solver.follow_ups(p, params, SM90))
            assert launches == st[0] * st[1], (p.key(), launches)  # a launch a phase
            parts = Parts(tensors, solver.workspace_slots(p, params))
            errors.append(launches_error(solver, p, params, SM90, parts, exact, output))
    print(json.dumps(errors))
''')

# (N, C, H, W, K, filter, pad, dilation) at stride 1: the UNet's 4 -> 320 input (small), a
# 3-channel stem, one channel at 1x1, 8 channels dilated, 5 channels under a 5x5 filter
# padded less than it reaches (the forward's padding 4 - 1 = 3), odd sizes.
BWD_LAYERS = [(2, 4, 6, 5, 320, 3, 1, 1), (1, 3, 9, 7, 64, 3, 1, 1), (3, 1, 5, 4, 16, 1, 0, 1),
              (2, 8, 11, 10, 40, 3, 2, 2), (2, 5, 6, 7, 37, 5, 1, 1)]
# (..., stride) at strides over 1, a launch a phase of dx: a 7x7 stem at stride 2 (odd sizes:
# phases of unequal rows and taps), 3x3 at stride 2, a 4x4 stride-2 filter (even taps), 2x2
# at stride 2 (a tap a phase), 5x3 at strides 3 and 2 (six phases, unequal), 3x3 at stride 3
# (a tap a phase, the last phase's forward padding -1).
STRIDED_BWD_LAYERS = [(2, 3, 13, 11, 20, 7, 3, 1, (2, 2)), (1, 4, 9, 8, 24, 3, 1, 1, (2, 2)),
                      (2, 3, 10, 9, 16, 4, 1, 1, (2, 2)), (2, 8, 8, 7, 12, 2, 0, 1, (2, 2)),
                      (1, 5, 13, 11, 9, (5, 3), 1, 1, (3, 2)), (1, 4, 10, 11, 8, 3, 1, 1, (3, 3))]


def test_few_channel_backward_data_matches_float64() -> None:
    errors = interpreted(BWD_SCRIPT, ["ConvTritonFmaFewKBwd", BWD_LAYERS], 2 * len(BWD_LAYERS))
    assert all(e < 1e-6 for e in errors), errors


def test_strided_backward_data_by_phases_matches_float64() -> None:
    layers = STRIDED_BWD_LAYERS
    errors = interpreted(BWD_SCRIPT, ["ConvTritonFmaFewKBwd", layers], 2 * len(layers))
    assert all(e < 1e-6 for e in errors), errors
    # 1-4 filters: the few-channel forward's phases.
    stems = [(n, 40, h, w, 3, *rest) for n, _, h, w, _, *rest in layers[:3]]
    errors = interpreted(BWD_SCRIPT, ["ConvTritonFmaBwd", stems], 2 * len(stems))
    assert all(e < 1e-6 for e in errors), errors


# (N, C, H, W, K, filter, pad, dilation) at stride 1, 1-4 filters (the stem kernel's forward
# on dy): the UNet's 320 -> 4 output (small), 70 channels (two filter blocks of the forward),
# one filter at 1x1, 2 filters dilated, 4 under a 5x5 filter padded less than it reaches.
STEM_BWD_LAYERS = [(2, 320, 6, 5, 4, 3, 1, 1), (1, 70, 7, 9, 3, 3, 1, 1),
                   (3, 16, 5, 4, 1, 1, 0, 1), (2, 40, 11, 10, 2, 3, 2, 2),
                   (2, 37, 6, 7, 4, 5, 1, 1)]


def test_few_filter_backward_data_matches_float64() -> None:
    errors = interpreted(BWD_SCRIPT, ["ConvTritonFmaBwd", STEM_BWD_LAYERS],
                         2 * len(STEM_BWD_LAYERS))
    assert all(e < 1e-6 for e in errors), errors


CHUNKS_SCRIPT = HARNESS + textwrap.dedent('''
    from miopenkernels.solvers import triton_chunks

    cases = json.loads(sys.argv[1])
    rng = np.random.default_rng(4)
    errors = []
    for name, layout, n, c, h, w, k, f, pad, limit, chunks, *stride in cases:
        triton_chunks.LIMIT = limit
        triton_chunks.chunking.cache_clear()
        direction = {"Wrw": "W", "Bwd": "B"}.get(name[-3:], "F")
        st = (stride[0], stride[0]) if stride else (1, 1)
        p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f), pad=(pad, pad),
                        stride=st, in_type="FP32", in_layout=layout, wei_layout=layout,
                        out_layout=layout, direction=direction)
        solver = get_solver(name)
        assert solver.is_applicable(p, SM90) and solver._chunking(p)[1] == chunks, p.key()
        params = solver.default_params(p, SM90)
        assert solver.params_valid(p, SM90, params), params
        tensors, exact, output = layer_tensors(p, direction, "FP32", rng)
        main = solver.launch(p, params)
        workspace_parts(tensors, solver, p, params, main.workspace_bytes,
                        (np.float32, "float32"))
        parts = Parts(tensors, solver.workspace_slots(p, params))
        steps = [*solver.lead_ins(p, params, SM90), (solver.compile_job(p, params, SM90), main),
                 *solver.follow_ups(p, params, SM90)]
        kernels = [s.kernel_name for _, s in steps]
        # A launch of the inner solver's object a chunk, a phase (backward data's strides).
        assert kernels.count(main.kernel_name) == chunks * st[0] * st[1], kernels
        assert kernels.count("conv2d_bwd_weight_reduce") == (direction == "W"), kernels
        for job, step in steps:
            run(job_module(job), step, job, parts)
        errors.append(float(np.linalg.norm(to_host(tensors[output]) - conv_reference(p, exact))
                            / np.linalg.norm(conv_reference(p, exact))))
    print(json.dumps(errors))
''')

# (solver, layout, N, C, H, W, K, filter, pad, the chunking's limit in elements, chunks[,
# stride]): 5 images of 16 channels at 12x12 (2,304 elements an image of x) to 4 filters in
# chunks of two (a limit of 5,000: three chunks, the last of one image), and 3 to 8 filters in
# chunks of two. The limit stays above every chunk's partials together (3 x 2 x 576 and 2 x 2
# x 1,152 elements), each chunk's a multiple of 256 bytes, as backward weights' chunks need
# them. Backward data: of 3 filters (the few-channel forward on dy) and of 4 input channels
# (the few-filter forward), the first also at stride 2, whose phases write dx from an offset.
CHUNK_CASES = [(name, layout, *case) for name in ("ConvTritonFmaFewKChunksFwd",
                                                  "ConvTritonFmaFewKChunksWrw")
               for layout in ("NCHW", "NHWC")
               for case in ((5, 16, 12, 12, 4, 3, 1, 5000, 3), (3, 16, 12, 12, 8, 3, 1, 5000, 2))]
CHUNK_CASES += [(name, layout, *case) for name, cases in (
    ("ConvTritonFmaChunksBwd", ((5, 16, 12, 12, 3, 3, 1, 5000, 3),
                                (5, 16, 12, 12, 3, 3, 1, 5000, 3, 2))),
    ("ConvTritonFmaFewKChunksBwd", ((5, 4, 12, 12, 16, 3, 1, 5000, 3),)))
    for layout in ("NCHW", "NHWC") for case in cases]


def test_few_filter_batch_chunks_match_float64() -> None:
    errors = interpreted(CHUNKS_SCRIPT, CHUNK_CASES, len(CHUNK_CASES))
    assert all(e < 1e-6 for e in errors), errors


#: Each family's objects a target: tiles x both forms x types (backward weights: and the two
#: reduce objects; backward data: the few-filter forward's and the flip).
OBJECTS = {"ConvTritonFmaFwd": 3 * 2, "ConvTritonFmaFewKFwd": 3 * 2,
           "ConvTritonFmaFewKWrw": 3 * 2 + 2, "ConvTritonFmaFewCWrw": 3 * 2 + 2,
           "ConvTritonFmaFewKBwd": 3 * 2 + 1, "ConvTritonFmaBwd": 3 * 2 + 1}


@pytest.mark.parametrize("solver_name", sorted(OBJECTS))
def test_every_object_compiles_within_each_arch_s_limits(tmp_path, solver_name) -> None:  # noqa: ANN001
    from miopenkernels.builder.codeobject import verify_kdb
    from miopenkernels.codeobject import check_code_object, split_kdb_blob
    from miopenkernels.compiler import compile_job
    from miopenkernels.compiler.triton import TritonOptions, kernel_function, source_arguments
    from miopenkernels.config import scoped_env
    from miopenkernels.db.kerneldb import KernelDb
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target
    from triton.compiler import ASTSource

    for name, wave in (("sm90-132", 32), ("gfx942-304", 64), ("gfx1100-48", 32)):
        target = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            jobs = get_solver(solver_name).dynamic_jobs(target)
        assert len(jobs) == OBJECTS[solver_name]
        rows = []
        for job in jobs:
            blob = compile_job(job)
            code, meta = split_kdb_blob(blob)
            assert meta is not None and meta.kernel == job.kernel_name
            info = check_code_object(code, target.arch, job.kernel_name)
            assert info.kind == ("cubin" if target.vendor == "nvidia" else "hsaco")
            rows.append((job.kdb_name, job.kdb_args, blob))
            if target.vendor != "amd":
                continue
            opts = TritonOptions(job.options)
            fn = kernel_function(job.source_path, job.kernel_name)
            sig, cx, attrs = source_arguments(fn, opts.signature, opts.constexprs,
                                              opts.assumptions)
            notes = triton.compile(ASTSource(fn, sig, cx, attrs),
                                   target=GPUTarget("hip", target.arch, wave),
                                   options=dict(opts.compile)).asm["amdgcn"]

            def note(key: str, text: str = notes) -> list[int]:
                return [int(v) for v in re.findall(rf"\.{key}:\s+(\d+)", text)]

            # No VGPR spills or scratch; a few SGPRs may spill to VGPR lanes (CDNA: the stems'
            # 64 filters 2-6, the few-filter kernel's 256 positions 16), which costs no memory
            # traffic.
            assert note("vgpr_spill_count") == [0], job.options
            assert note("private_segment_fixed_size") == [0], job.options
            assert note("sgpr_spill_count")[0] <= 16, job.options
            assert note("group_segment_fixed_size") == [0]
            assert note("vgpr_count")[0] <= 256, job.options
        kdb = tmp_path / f"{target.basename}.kdb"
        with KernelDb(kdb, readonly=False) as db:
            db.store_many(rows)
        assert [c.error for c in verify_kdb(kdb) if not c.ok] == []
