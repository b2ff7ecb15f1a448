"""bench/align8_ptx.py without compiling: the variants it compiles and what it counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from miopenkernels.solvers import CompileJob
from miopenkernels.target import Target

BENCH = Path(__file__).resolve().parents[2] / "bench"

PTX = [
    "mov.u32 %r1, %ctaid.x;",
    "@%p3 cp.async.cg.shared.global [ %r5 + 0 ], [ %rd7 + 0 ], 0x10, %r9;",
    "@!%p4 cp.async.ca.shared.global [ %r5 + 0 ], [ %rd7 + 0 ], 0x4, %r9;",
    "ld.global.L1::evict_last.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];",
    "st.global.b16 [ %rd2 + 0 ], %rs1;",
    "selp.b32 %r3, 16, 0, %p1;",
    "$L__BB0_2:",
    ".reg .pred %p<5>;",
    "}",
]


def _module() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_align8_ptx", BENCH / "align8_ptx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_variants_change_the_assumption_alone() -> None:
    bench = _module()
    job = CompileJob("conv_triton.py", ("--kernel=conv2d_bwd_data", "-DCHANNELS_LAST=1",
                                        "--assume=x_ptr:16,C:8,K:8,syw:8"),
                     "conv2d_bwd_data", Target("sm90", 132))
    sixteen = bench.assuming_16(job)
    assert "--assume=x_ptr:16,C:16,K:16,syw:16" in sixteen.options
    assert set(sixteen.options) - set(job.options) == {"--assume=x_ptr:16,C:16,K:16,syw:16"}
    generic = bench.generic(job)
    assert not any(o.startswith("--assume=") for o in generic.options)
    assert len(generic.options) == len(job.options) - 1


def test_16_byte_operations_and_opcodes_are_counted() -> None:
    bench = _module()
    # The 16-byte cp.async (predicated) and the v4 load with a cache hint; not the 4-byte copy.
    assert len(bench._VECTOR["ptx"].findall("\n".join(PTX))) == 2
    counts = bench.opcodes(PTX)
    assert counts == {"mov.u32": 1, "cp.async.cg.shared.global": 1,
                      "cp.async.ca.shared.global": 1, "ld.global.L1::evict_last.v4.b32": 1,
                      "st.global.b16": 1, "selp.b32": 1}
    assert len(bench._VECTOR["amdgcn"].findall("global_load_dwordx4 v[0:3], v[4:5], off\n"
                                               "global_load_dword v1, v[4:5], off")) == 1
