"""Triton objects on the GPU without Triton: compiled once here (where Triton is installed),
then launched by a child process in which `import triton` fails.

The child checks every direction against the float64 reference, that nothing was compiled
(every object came from the kernel cache), that an object using more than 48 KiB of dynamic
shared memory runs (cuFuncSetAttribute opt-in), and that an output that is not 16-byte aligned
runs the variant compiled without the alignment assumption and still gives the right answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# 256x256 tiles, BLOCK_K 64, 3 stages of FP16: 192 KiB of shared memory on sm90 (Triton 3.6).
BIG = (256, 256, 64, 8, 1, 8, 3)


def cases() -> list[tuple[str, str, tuple[int, ...] | None, bool]]:
    """(FindDb key, solver, params or None for the defaults, output misaligned)."""
    from miopenkernels.problem import ConvProblem

    nhwc = dict(in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")
    fp16 = dict(in_type="FP16", wei_type="FP16", out_type="FP16")
    base = dict(n=2, c=32, k=64, in_spatial=(14, 14), filter=(3, 3), pad=(1, 1))
    out = []
    for d, suffix in (("F", "Fwd"), ("B", "Bwd"), ("W", "Wrw")):
        p = ConvProblem(**base, direction=d, **nhwc, **fp16)  # type: ignore[arg-type]
        out.append((p.key(), f"ConvTritonImplicitGemm{suffix}", None, False))
    p = ConvProblem(**base, **nhwc, **fp16)  # type: ignore[arg-type]
    out.append((p.key(), "ConvTritonImplicitGemmFwd", BIG, False))
    out.append((out[0][0], out[0][1], None, True))
    return out


CHILD = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from conftest import TritonBlocker
    sys.meta_path.insert(0, TritonBlocker())
    try:
        import triton  # noqa: F401
        sys.exit("triton imported despite the blocker")
    except ImportError:
        pass
    import numpy as np
    from miopenkernels.backends.base import Buffer
    from miopenkernels.compiler.triton import available
    from miopenkernels.find import Invoker, make_invoker
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver, reference as ref
    from test_triton_runtime import cases
    assert not available()
    h = Handle()
    be = h.backend
    out = []
    for i, (key, solver, params, shift) in enumerate(cases()):
        p = ConvProblem.from_key(key)
        inputs = ref.conv_inputs(p, np.random.default_rng(i))
        name = ref.conv_output_name(p)
        host = {n: a.astype(np.float16) for n, a in inputs.items()}
        host[name] = np.full(ref.conv_tensor_shapes(p)[name], np.nan, np.float16)
        role = {"F": "y", "B": "x", "W": "w"}[p.direction]
        layer = {"x": host.get("x", host.get("dx")), "w": host.get("w", host.get("dw")),
                 "y": host.get("y", host.get("dy"))}
        bufs = {r: be.alloc(a.nbytes + 256) for r, a in layer.items()}
        # One FP16 element into a 256-byte aligned buffer: not 16-byte aligned.
        ptrs = {r: bufs[r].ptr + (2 if shift and r == role else 0) for r in layer}
        for r, a in layer.items():
            be.copy_in(Buffer(ptrs[r], a.nbytes, None), np.ascontiguousarray(a))
        inv = make_invoker(h, p, get_solver(solver), params=tuple(params) if params else None)
        # A split launch (small problems split their reduction) needs its partials' space.
        ptrs["workspace"] = be.alloc(inv.workspace_bytes).ptr if inv.workspace_bytes else 0
        inv(ptrs)
        be.synchronize()
        got = np.empty_like(layer[role])
        be.copy_out(got, Buffer(ptrs[role], got.nbytes, None))
        want = ref.conv_reference(p, inputs)
        used = inv.unaligned if shift else inv
        out.append({"key": key, "solver": solver, "shift": shift,
                    "err": float(np.nanmax(np.abs(got.astype(np.float64) - want))),
                    "nan": int(np.isnan(got).sum()), "shared": used.launch.shared,
                    "variant_ran": isinstance(inv.unaligned, Invoker)})
    print(json.dumps({"cases": out, "stats": h.stats.to_dict()}))
''')


@pytest.fixture()
def dbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var, sub in (("MIOPEN_SYSTEM_DB_PATH", "sys"), ("MIOPEN_USER_DB_PATH", "user"),
                     ("MIOPEN_CUSTOM_CACHE_DIR", "cache")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("MIOPEN_DISABLE_CACHE", raising=False)
    return tmp_path


def test_triton_objects_launch_without_triton(dbs: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("miopenkernels.kernels.conv_triton_spec")
    from miopenkernels.find import make_invoker
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.solvers import reference as ref

    h = Handle()
    for key, solver, params, _ in cases():  # compile every object the child needs, both variants
        p, s = ConvProblem.from_key(key), get_solver(solver)
        inv = make_invoker(h, p, s, params=params)
        if inv.alignment:
            make_invoker(h, p, s, params=params, unaligned=True)
    assert h.stats.jit >= 4
    h.close()
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here), os.environ.get(
        "PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(here)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=1))
    assert report["stats"]["jit"] == 0 and report["stats"]["user_kdb"] >= 4
    for case in report["cases"]:
        p = ConvProblem.from_key(case["key"])
        terms = p.k * 9 if p.direction == "B" else p.c * 9 if p.direction == "F" else 2 * 196
        assert case["nan"] == 0, case
        assert case["err"] <= ref.tolerance("FP16", terms), case
    assert any(c["shared"] > 48 * 1024 for c in report["cases"])
    assert report["cases"][-1]["shift"] and report["cases"][-1]["variant_ran"]
