"""What the compiler made of the Triton convolution kernels for sm_90, without a GPU.

For each case (`<type>-<direction>-<layout>`) the kernel of a ResNet-50 3x3 layer (or the
first layer with --first) is compiled ahead of time, as the builder does, with the case's most
frequent tuned configuration (kernels/conv_triton_tuned_sm90.json); Triton's own cuobjdump and
nvdisasm then report registers, spills, shared memory and, from the SASS, the tensor-core
instructions (HGMMA: wgmma; HMMA: mma.sync), the global loads by width (LDGSTS: cp.async into
shared memory; LDG: into registers) and the instructions of the main loop (one step of the
reduction; its run-time divisions counted by their MUFU.RCP). A 16-bit operand read with
16-byte LDGSTS is vectorised; a count of 2- or 4-byte loads marks the scalar gathers.

    python bench/triton_conv_sass.py [--first] [--json]
    PYTHONPATH=DIR python bench/triton_conv_sass.py --kernels kernels_before.conv_triton
        (DIR/kernels_before: another tree's kernels folder)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# ResNet-50's 3x3 stride-1 layer at 28x28 (C=K=128, batch 32) and the first layer.
LAYER = {"N": 32, "C": 128, "H": 28, "W": 28, "K": 128, "P": 28, "Q": 28, "R": 3, "S": 3,
         "G": 1, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1, "dil_h": 1, "dil_w": 1}
FIRST = {"N": 32, "C": 3, "H": 224, "W": 224, "K": 64, "P": 112, "Q": 112, "R": 7, "S": 7,
         "G": 1, "stride_h": 2, "stride_w": 2, "pad_h": 3, "pad_w": 3, "dil_h": 1, "dil_w": 1}


def loop_body(sass: str) -> Counter:
    """The instructions of the innermost loop that holds the tensor-core instructions (the
    shortest span from a label to a branch back to it with an HGMMA or HMMA in it), by
    opcode."""
    labels = {m.group(1): m.start() for m in re.finditer(r"^\.L_x_(\d+):", sass, re.M)}
    body = ""
    for m in re.finditer(r"BRA\s+(?:\S+\s+)?`?\(?\.L_x_(\d+)", sass):
        start = labels.get(m.group(1))
        if start is not None and start < m.start():
            span = sass[start:m.end()]
            if ("HGMMA" in span or "HMMA" in span) and (not body or len(span) < len(body)):
                body = span
    return Counter(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)",
                              body, re.M))


def disassemble(cubin: bytes) -> tuple[str, str]:
    """(SASS, resource usage) of a cubin, by the nvdisasm and cuobjdump Triton ships."""
    import triton

    bindir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        res = subprocess.run([str(bindir / "cuobjdump"), "--dump-resource-usage", str(path)],
                             capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([str(bindir / "nvdisasm"), str(path)], capture_output=True,
                              text=True, check=True).stdout
    return sass, res


def opcodes(sass: str) -> Counter:
    """Each SASS instruction's opcode (predicates dropped), counted."""
    return Counter(m.group(1) for m in re.finditer(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?"
                                                   r"([A-Z][A-Z0-9_.]+)", sass, re.M))


def report(case: str, sizes: dict[str, int], module: str = "") -> dict:
    import importlib

    import triton
    from miopenkernels.compiler.triton import source_arguments

    ct = importlib.import_module(module or "miopenkernels.kernels.conv_triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    t, d, lay = case.split("-")
    dtype = "FP32" if t == "TF32" else t
    kernel = ct.kernel_for(d, sizes)
    cfg = ct.tuned_config("sm90", case, sizes) or ct.default_config(kernel, dtype)
    cl = lay == "NHWC"
    aligned = sizes["C"] % 16 == 0
    fn = ct.JIT[kernel]
    sig, cx = ct.triton_signature(kernel, dtype, cfg, cl, "tf32" if t == "TF32" else "ieee")
    aligned_args = ct.align16_args(kernel, cl) if aligned else ()
    sig, cx, attrs = source_arguments(fn, [(n, t) for n, t in sig.items() if t != "constexpr"],
                                      cx, [(a, 16) for a in aligned_args])
    k = triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]})
    sass, res = disassemble(k.asm["cubin"])
    regs = re.search(r"REG:(\d+)", res)
    ops = opcodes(sass)

    def count(prefix: str) -> int:
        return sum(n for op, n in ops.items() if op.startswith(prefix))

    loads = {op: n for op, n in sorted(ops.items()) if op.startswith(("LDG", "LDGSTS"))}
    loop = loop_body(sass)
    return {"case": case, "kernel": kernel, "config": cfg, "aligned": aligned,
            "loop_instructions": sum(loop.values()), "loop_divisions": loop["MUFU"],
            "registers": int(regs.group(1)) if regs else None,
            "spills": "STL" in ops or "LDL" in ops, "shared": k.metadata.shared,
            "hgmma": count("HGMMA"), "hmma": count("HMMA"), "ffma": count("FFMA"),
            "loads": loads}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", action="store_true", help="the first layer (C=3, 7x7) instead")
    ap.add_argument("--cases", default="", help="comma-separated cases (default: all 24)")
    ap.add_argument("--kernels", default="", metavar="MODULE",
                    help="the conv_triton module to compile (default the package's; e.g. a "
                         "copy of another tree's kernels folder on PYTHONPATH)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = FIRST if args.first else LAYER
    cases = [c for c in args.cases.split(",") if c] or [
        f"{t}-{d}-{lay}" for t in ("FP16", "BF16", "FP32", "TF32") for d in "FBW"
        for lay in ("NHWC", "NCHW")]
    rows = [report(c, sizes, args.kernels) for c in cases]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| case | kernel | tile | regs | spills | shared | HGMMA | HMMA | FFMA | global loads "
          "| loop instructions (divisions) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["config"]
        tile = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']}s{c['num_stages']}"
        loads = " ".join(f"{op}:{n}" for op, n in r["loads"].items())
        print(f"| {r['case']} | {r['kernel']} | {tile} | {r['registers']} | "
              f"{'yes' if r['spills'] else 'no'} | {r['shared']} | {r['hgmma']} | {r['hmma']} | "
              f"{r['ffma']} | {loads} | {r['loop_instructions']} ({r['loop_divisions']}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
