"""The few-channel direct forward family (solvers/triton_fma.py): every object it ships compiles
for sm90, gfx942 and gfx1100 as the builder does, within each arch's limits (no VGPR spills,
no scratch, no LDS), and its launches, run by Triton's interpreter on the CPU, match the
float64 reference (FP32, both layouts, stems at stride 1 and 2, dilation, odd sizes, partial
tiles)."""

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


def test_every_object_compiles_within_each_arch_s_limits(tmp_path) -> None:  # noqa: ANN001
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
            jobs = get_solver("ConvTritonFmaFwd").dynamic_jobs(target)
        assert len(jobs) == 3 * 2  # three tiles, both forms, FP32
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

            # No VGPR spills or scratch; a few SGPRs may spill to VGPR lanes (CDNA, 64
            # filters: 2-6), which costs no memory traffic.
            assert note("vgpr_spill_count") == [0], job.options
            assert note("private_segment_fixed_size") == [0], job.options
            assert note("sgpr_spill_count")[0] <= 8, job.options
            assert note("group_segment_fixed_size") == [0]
            assert note("vgpr_count")[0] <= 256, job.options
        kdb = tmp_path / f"{target.basename}.kdb"
        with KernelDb(kdb, readonly=False) as db:
            db.store_many(rows)
        assert [c.error for c in verify_kdb(kdb) if not c.ok] == []
