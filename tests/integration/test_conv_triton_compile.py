"""The Triton convolution kernels compile ahead of time, on this CPU-only machine, to tensor-core
code: wgmma on sm_90, v_mfma on gfx942, v_wmma on gfx1100; shape-agnostic (sizes as run-time
arguments) and with the align16 assumption."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.integration

triton = pytest.importorskip("triton")

from miopenkernels.compiler.triton import source_arguments  # noqa: E402
from miopenkernels.kernels import conv_triton as ct  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

CFG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 4,
       "num_warps": 4, "num_stages": 2}
TARGETS = {"sm90": (GPUTarget("cuda", 90, 32), "ptx", "wgmma.mma_async"),
           "gfx942": (GPUTarget("hip", "gfx942", 64), "amdgcn", "v_mfma"),
           "gfx1100": (GPUTarget("hip", "gfx1100", 32), "amdgcn", "v_wmma")}


def _compile(kernel: str, dtype: str, target: GPUTarget, aligned: bool, channels_last: bool,
             precision: str = "ieee"):  # noqa: ANN202
    fn = ct.JIT[kernel]
    sig, cx = ct.triton_signature(kernel, dtype, CFG, channels_last, precision)
    aligned_args = ct.align16_args(kernel, channels_last) if aligned else ()
    sig, cx, attrs = source_arguments(fn, [(n, t) for n, t in sig.items() if t != "constexpr"],
                                      cx, [(a, 16) for a in aligned_args])
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=target,
                          options={"num_warps": CFG["num_warps"],
                                   "num_stages": CFG["num_stages"]})


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("kernel", ["conv2d_fwd", "conv2d_fwd_smallc", "conv2d_bwd_data",
                                    "conv2d_bwd_data_smallc", "conv2d_bwd_weight_smallc",
                                    "conv2d_bwd_weight"])
def test_matrix_instructions(kernel: str, target: str) -> None:
    tgt, asm, instr = TARGETS[target]
    aligned = ct.align16_variants(kernel)[0]  # few-channel kernels: the generic object only
    k = _compile(kernel, "FP16", tgt, aligned=aligned, channels_last=aligned)
    assert instr in k.asm[asm]
    assert k.metadata.name == kernel
    assert 0 < k.metadata.shared <= ct.TARGET_KINDS[ct.target_kind(target)]["smem"]


def test_fp32_is_ieee_unless_tf32_is_asked_for() -> None:
    tgt = TARGETS["sm90"][0]
    ieee = _compile("conv2d_fwd", "FP32", tgt, aligned=True, channels_last=True)
    tf32 = _compile("conv2d_fwd", "FP32", tgt, aligned=True, channels_last=True,
                    precision="tf32")
    assert "wgmma" not in ieee.asm["ptx"] and "fma.rn.f32" in ieee.asm["ptx"]
    assert "wgmma.mma_async" in tf32.asm["ptx"] and ".tf32" in tf32.asm["ptx"]


def test_tf32x3_is_three_tf32_products_per_product() -> None:
    """PRECISION tf32x3 (the three-product FP32 solvers) runs TF32 wgmma, three times as many
    as TF32 alone in the same loop."""
    tgt = TARGETS["sm90"][0]
    tf32 = _compile("conv2d_fwd", "FP32", tgt, aligned=True, channels_last=True,
                    precision="tf32")
    x3 = _compile("conv2d_fwd", "FP32", tgt, aligned=True, channels_last=True,
                  precision="tf32x3")
    once = tf32.asm["ptx"].count("wgmma.mma_async")
    assert once > 0 and ".tf32" in x3.asm["ptx"]
    assert x3.asm["ptx"].count("wgmma.mma_async") == 3 * once


def test_reduce_and_generic_variant() -> None:
    tgt = TARGETS["sm90"][0]
    k = _compile("conv2d_bwd_weight_reduce", "BF16", tgt, aligned=False, channels_last=False)
    assert k.metadata.name == "conv2d_bwd_weight_reduce"
    k = _compile("conv2d_fwd", "BF16", tgt, aligned=False, channels_last=False)
    assert "wgmma.mma_async" in k.asm["ptx"]


def test_mma_2_compiles_tf32_to_mma_sync_on_sm90_alone() -> None:
    """A TF32 job with --mma=2 gives an sm90 object of its own (mma.sync, through Triton's
    DISABLE_MMA_V3 for that compile alone); other targets refuse it."""
    import os

    from miopenkernels.compiler import compile_job
    from miopenkernels.compiler.triton import mma_env
    from miopenkernels.errors import CompileError
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    with mma_env(2):
        v2 = _compile("conv2d_bwd_weight", "FP32", TARGETS["sm90"][0], aligned=True,
                      channels_last=True, precision="tf32")
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in v2.asm["ptx"]
    assert "wgmma" not in v2.asm["ptx"]
    assert "DISABLE_MMA_V3" not in os.environ
    solver = get_solver("ConvTritonImplicitGemmTf32Wrw")
    problem = ConvProblem(n=8, c=64, k=64, in_spatial=(14, 14), filter=(1, 1), in_type="FP32",
                          in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC",
                          direction="W")
    sm90 = Target.parse("sm90-132")
    params = (64, 64, 32, 8, 1, 4, 2)
    own = compile_job(solver.compile_job(problem, params, sm90))
    sync = compile_job(solver.compile_job(problem, params + (2,), sm90))
    assert own != sync and "DISABLE_MMA_V3" not in os.environ
    with pytest.raises(CompileError, match="sm90 only"):
        compile_job(solver.compile_job(problem, params + (2,), Target.parse("sm80-108")))


def _job_asm(job, target: GPUTarget):  # noqa: ANN001, ANN202
    """The assembly texts of a solver's job (PTX, AMDGCN...), compiled from its own options
    as the builder would (the signature, constexprs and assumptions it spells)."""
    from miopenkernels.compiler.triton import TritonOptions, kernel_function

    opts = TritonOptions(job.options)
    fn = kernel_function(job.source_path, job.kernel_name)
    sig, cx, attrs = source_arguments(fn, opts.signature, opts.constexprs, opts.assumptions)
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=target,
                          options=dict(opts.compile)).asm


def _job_ptx(job):  # noqa: ANN001, ANN202
    """The PTX of a solver's job for sm_90 (`_job_asm`)."""
    return _job_asm(job, TARGETS["sm90"][0])["ptx"]


def test_winograd_and_1x1_gemm_jobs_run_on_tensor_cores() -> None:
    """Every object one call of the Winograd and 1x1 GEMM solvers runs compiles from its job
    for sm_90: the GEMMs on wgmma (three TF32 products per product in tf32x3, 16-bit in the 1x1
    GEMMs), the transforms and reductions without; `compile_job` (the builder's path) gives
    each an object with its launch metadata."""
    from dataclasses import replace

    from miopenkernels.codeobject import split_kdb_blob
    from miopenkernels.compiler import compile_job
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver, launch_jobs
    from miopenkernels.target import Target

    sm90 = Target.parse("sm90-132")
    w3 = ConvProblem(n=8, c=64, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1),
                     in_type="FP32", wei_type="FP32", out_type="FP32", direction="W")
    one = ConvProblem(n=8, c=64, k=128, in_spatial=(28, 28), filter=(1, 1), in_type="FP16",
                      wei_type="FP16", out_type="FP16")
    cases = [(get_solver("ConvTritonWinogradTf32x3Wrw"), w3),
             (get_solver("ConvTritonWinogradTf32Wrw"), w3)]
    cases += [(get_solver(f"ConvTritonGemm1x1{d}"), replace(one, direction=d[0]))
              for d in ("Fwd", "Bwd", "Wrw")]
    counts = {}
    for solver, problem in cases:
        params = solver.default_params(problem, sm90)
        main = solver.compile_job(problem, params, sm90)
        for job in launch_jobs(solver, problem, params, sm90):
            ptx = _job_ptx(job)
            gemm = job == main
            assert ("wgmma.mma_async" in ptx) == gemm, (solver.name, job.kernel_name)
            if gemm:
                counts[solver.name] = ptx.count("wgmma.mma_async")
                assert (".tf32" in ptx) == ("Winograd" in solver.name)
            _, meta = split_kdb_blob(compile_job(job))
            assert meta is not None and meta.kernel == job.kernel_name
    assert counts["ConvTritonWinogradTf32x3Wrw"] == 3 * counts["ConvTritonWinogradTf32Wrw"]


def _family_objects(family: str, target, kdb):  # noqa: ANN001, ANN202
    """The direct family's own objects for a target (`ConvTriton<family>`'s dynamic jobs but
    the implicit GEMM's reduce kernel), each compiled by `compile_job` as the builder does
    and checked: its launch metadata and a code object of the target's kind; then stored in
    the kdb at `kdb` (its name the target's basename), which `kdb verify`'s checks pass (AMD:
    no matrix instruction asked of these memory-bound kernels). Gives the jobs."""
    from miopenkernels.builder.codeobject import verify_kdb
    from miopenkernels.codeobject import check_code_object, split_kdb_blob
    from miopenkernels.compiler import compile_job
    from miopenkernels.config import scoped_env
    from miopenkernels.db.kerneldb import KernelDb
    from miopenkernels.solvers import get_solver

    with scoped_env("MIOPENKERNELS_TRITON", "1"):
        jobs = [j for d in ("Fwd", "Bwd", "Wrw")
                for j in get_solver(f"ConvTriton{family}{d}").dynamic_jobs(target)
                if j.kernel_file == "conv_triton_depthwise.py"]
    rows = []
    for job in jobs:
        blob = compile_job(job)
        code, meta = split_kdb_blob(blob)
        assert meta is not None and meta.kernel == job.kernel_name
        info = check_code_object(code, target.arch, job.kernel_name)
        assert info.kind == ("cubin" if target.vendor == "nvidia" else "hsaco")
        rows.append((job.kdb_name, job.kdb_args, blob))
    with KernelDb(kdb, readonly=False) as db:
        db.store_many(rows)
    assert [c.error for c in verify_kdb(kdb) if not c.ok] == []
    return jobs


def test_every_depthwise_object_compiles_for_sm90_and_gfx942(tmp_path) -> None:  # noqa: ANN001
    """Every object the depthwise family ships (its own kernels; the reduce kernel is the
    implicit GEMM's) compiles from its job for sm90 and gfx942 as the builder does, carries
    its launch metadata, and with the channels-last alignment assumption loads 16-byte
    vectors along channels (sm90's PTX)."""
    from miopenkernels.target import Target

    for target in (Target.parse("sm90-132"), Target.parse("gfx942-304")):
        jobs = _family_objects("Depthwise", target, tmp_path / f"{target.basename}.kdb")
        # Types x (NCHW, NHWC, NHWC aligned): forward and backward data (R and S at run time,
        # and 3x3, 5x5 and 7x7 unrolled), and backward weights at two filter width classes;
        # the channels-last forward also at its large tile (spec.LARGE_TILES), the
        # channels-last backward data also phased at 3x3, 5x5 and 7x7 (spec.PHASED_FILTERS);
        # the NHWC 3x3 objects (forward at both tiles, backward data raster and phased,
        # backward weights' width class 4) also pair-aligned (spec.PAIR_FILTERS).
        assert len(jobs) == 3 * (3 * (4 + 4 + 2) + 2 * 4 + 2 * 3) + 3 * (2 + 2 + 1)
        assert sum("-DPHASES=2" in job.options for job in jobs) == 3 * 2 * 3 + 3
        assert sum(_pairs(job) for job in jobs) == 3 * (2 + 2 + 1)
        for job in jobs:
            if target.vendor == "nvidia":
                _check_channel_loads(job)


def _pairs(job) -> bool:  # noqa: ANN001
    """A depthwise object assuming pairs of channels (conv_triton_depthwise_spec.PAIR_DIVISOR)."""
    return any(o.startswith("--assume=") and ",C:2," in o for o in job.options)


def _check_channel_loads(job) -> None:  # noqa: ANN001
    """sm90's PTX of a depthwise object loads what its assumption promises: vectors of 8 or 16
    bytes where aligned (the forward's 8x16 one-warp tile gives a thread 4 channels, 8 bytes
    in 16-bit types), channel pairs where pair-aligned (a 32-bit word of two 16-bit elements,
    a 2-vector of FP32), no vectors where unaligned."""
    ptx = _job_ptx(job)
    if _pairs(job):
        fp32 = any(o.startswith("--signature=") and ("src_ptr:*fp32" in o or "x_ptr:*fp32" in o)
                   for o in job.options)
        pair = r"\.v2\.(f32|b32)" if fp32 else r"\.b32"
        assert re.search(r"ld\.global(\.\w+)*" + pair, ptx), job.options
        assert not re.search(r"ld\.global(\.\w+)*\.v4\.", ptx), job.options
        return
    aligned = any(o.startswith("--assume=") for o in job.options)
    vectors = re.search(r"ld\.global(\.\w+)*\.v[24]\.", ptx)
    assert (vectors is not None) == aligned, job.options


def test_every_3d_depthwise_object_compiles_within_each_arch_s_limits(tmp_path) -> None:  # noqa: ANN001
    """Every object the 3-D depthwise family ships compiles from its job for sm90, gfx942
    (wave64) and gfx1100 (wave32) as the builder does and carries its launch metadata; sm90's
    channels-last aligned objects load vectors along channels, the others elements; on the
    AMD archs the kernel descriptor's notes show no VGPR spills, no scratch and no LDS."""
    import re

    from miopenkernels.target import Target

    for target in (Target.parse("sm90-132"), Target.parse("gfx942-304"),
                   Target.parse("gfx1100-48")):
        jobs = _family_objects("Depthwise3d", target, tmp_path / f"{target.basename}.kdb")
        # Types x (NCDHW, NDHWC, NDHWC aligned): forward and backward data (the plane's taps
        # at run time and 3x3 unrolled), backward weights at two filter width classes; NDHWC
        # backward data also phased at 3x3; the NDHWC 3x3 planes (backward
        # data raster and phased) and width class 4 also pair-aligned.
        assert len(jobs) == 3 * 3 * (2 + 2 + 2) + 3 * 2 + 3 * 4
        assert sum("-DPHASES=2" in job.options for job in jobs) == 3 * 2 + 3
        assert sum(_pairs(job) for job in jobs) == 3 * 4
        for job in jobs:
            if target.vendor == "nvidia":
                _check_channel_loads(job)
                continue
            wave = 64 if target.arch.startswith("gfx9") else 32
            notes = _job_asm(job, GPUTarget("hip", target.arch, wave))["amdgcn"]

            def note(key: str, text: str = notes) -> list[int]:
                return [int(v) for v in re.findall(rf"\.{key}:\s+(\d+)", text)]

            assert note("vgpr_spill_count") == [0], job.options
            assert note("private_segment_fixed_size") == [0], job.options  # no scratch
            assert note("group_segment_fixed_size") == [0], job.options
            assert 0 < note("vgpr_count")[0] <= 512, job.options


def test_every_grouped_object_compiles_for_sm90_gfx90a_and_gfx942(tmp_path) -> None:  # noqa: ANN001
    """Every object the grouped direct family ships compiles from its job for sm90, gfx90a
    and gfx942 as the builder does and carries its launch metadata; on the AMD archs the
    kernel descriptor's notes show no register spills, no LDS and VGPRs within a wave's 512
    (gfx90a and gfx942 measured 38-104 VGPRs)."""
    import re

    from miopenkernels.target import Target

    for target in (Target.parse("sm90-132"), Target.parse("gfx90a-104"),
                   Target.parse("gfx942-304")):
        jobs = _family_objects("Grouped", target, tmp_path / f"{target.basename}.kdb")
        # FP32 alone (16-bit: the packed kernels) x (NCHW, NHWC): forward, backward data, and
        # backward weights at two filter width classes; no alignment variants.
        assert len(jobs) == 1 * 2 * (1 + 1 + 2)
        for job in jobs if target.vendor == "amd" else ():
            notes = _job_asm(job, GPUTarget("hip", target.arch, 64))["amdgcn"]

            def note(key: str, text: str = notes) -> list[int]:
                return [int(v) for v in re.findall(rf"\.{key}:\s+(\d+)", text)]

            assert note("vgpr_spill_count") == [0] and note("sgpr_spill_count") == [0]
            assert note("group_segment_fixed_size") == [0]
            assert 0 < note("vgpr_count")[0] <= 512, job.options


def test_every_packed_object_compiles_within_each_arch_s_limits() -> None:
    """Every object of the implicit GEMM's packed kernels a package ships (16-bit; NCHW
    generic, NHWC generic and aligned; backward weights unsplit and split) compiles from its
    job as the builder does, for sm90, gfx942 (CDNA, wave64) and gfx1100 (RDNA, wave32), with
    its launch metadata. sm90: on wgmma, and the aligned objects' loads are vectors (forward
    and backward data: 16 bytes on their vector path) where the generic ones load elements.
    AMD: the kernel descriptor's notes show no VGPR spills and no scratch, LDS within the
    arch's 64 KiB and VGPRs within 512."""
    import re

    from miopenkernels.codeobject import split_kdb_blob
    from miopenkernels.compiler import compile_job
    from miopenkernels.config import scoped_env
    from miopenkernels.solvers import all_dynamic_jobs
    from miopenkernels.target import Target

    for name in ("sm90-132", "gfx942-304", "gfx1100-48"):
        target = Target.parse(name)
        with scoped_env("MIOPENKERNELS_TRITON", "1"):
            jobs = [j for j in all_dynamic_jobs(target) if j.kernel_name.endswith("_packed")]
        assert len(jobs) == 2 * 3 + 2 * 3 + 2 * 3 * 2, name
        for job in jobs:
            code, meta = split_kdb_blob(compile_job(job))
            assert meta is not None and meta.kernel == job.kernel_name
            if target.vendor == "nvidia":
                ptx = _job_ptx(job)
                assert "wgmma.mma_async" in ptx, job.options
                aligned = any(o.startswith("--assume=") for o in job.options)
                # 16 bytes (cg) along a tile's groups' channels, 8 (ca) along one group's.
                assert ("cp.async.c" in ptx) == aligned, job.options
                if aligned and not job.kernel_name.startswith("conv2d_bwd_weight"):
                    assert "cp.async.cg.shared.global" in ptx, job.options
                continue
            wave = 64 if target.arch.startswith("gfx9") else 32
            notes = _job_asm(job, GPUTarget("hip", target.arch, wave))["amdgcn"]

            def note(key: str, text: str = notes) -> list[int]:
                return [int(v) for v in re.findall(rf"\.{key}:\s+(\d+)", text)]

            # SGPRs may spill (into VGPR lanes: cheap, what builder/resources.py reports).
            assert note("vgpr_spill_count") == [0], job.options
            assert note("private_segment_fixed_size") == [0], job.options  # no scratch
            assert note("group_segment_fixed_size")[0] <= 65536, job.options
            assert 0 < note("vgpr_count")[0] <= 512, job.options
