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
    python bench/triton_conv_sass.py --first --cases FP16-F-NHWC,BF16-F-NHWC \\
        --tiles 256x64x16w4s3,128x32x16w4s3 --both --json   (few-channel objects, both kinds)
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


def _args(sizes: dict[str, int], direction: str, dtype: str, layout: str) -> dict[str, int]:
    """The kernel arguments the runtime passes for packed tensors of `sizes` in a layout
    (`solvers.triton_common.problem_view`, as it decides which object a problem takes)."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.triton_common import problem_view

    z = sizes
    p = ConvProblem(n=z["N"], c=z["C"], k=z["K"], in_spatial=(z["H"], z["W"]),
                    filter=(z["R"], z["S"]), pad=(z["pad_h"], z["pad_w"]),
                    stride=(z["stride_h"], z["stride_w"]), dilation=(z["dil_h"], z["dil_w"]),
                    direction=direction, in_type=dtype, wei_type=dtype, out_type=dtype,
                    in_layout=layout, wei_layout=layout, out_layout=layout)
    return problem_view(p)[1]


def _tile(text: str) -> dict[str, int]:
    """A BMxBNxBKwWARPSsSTAGES tile as a configuration (GROUP_M 8, SPLIT_K 1)."""
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)w(\d+)s(\d+)", text)
    if m is None:
        raise SystemExit(f"triton_conv_sass: tile {text!r} is not BMxBNxBKwWsS "
                         "(e.g. 256x64x16w4s3)")
    bm, bn, bk, w, st = (int(v) for v in m.groups())
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SPLIT_K": 1,
            "num_warps": w, "num_stages": st}


def report(case: str, sizes: dict[str, int], module: str = "", tile: str = "",
           generic: bool = False) -> dict:
    """What the compiler made of the object the runtime takes for a packed problem of `sizes`
    in `case` (aligned where the problem meets its assumption; the generic one with
    `generic`), at the case's tuned tile or `tile`."""
    import importlib

    import triton
    from miopenkernels.compiler.triton import source_arguments

    ct = importlib.import_module(module or "miopenkernels.kernels.conv_triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    t, d, lay = case.split("-")
    dtype = "FP32" if t == "TF32" else t
    kernel = ct.kernel_for(d, sizes)
    cfg = _tile(tile) if tile else \
        ct.tuned_config("sm90", case, sizes) or ct.default_config(kernel, dtype)
    cl = lay == "NHWC"
    spec = importlib.import_module("miopenkernels.kernels.conv_triton_spec")
    args = _args(sizes, d, dtype, lay)
    aligned = not generic and True in ct.align16_variants(kernel, cl, dtype) and \
        bool(ct.meets_align16(args, cl, dtype, kernel))
    fn = ct.JIT[kernel]
    sig, cx = ct.triton_signature(kernel, dtype, cfg, cl, "tf32" if t == "TF32" else "ieee")
    assume = list(spec.align_assumptions(kernel, dtype, cl)) if aligned else []
    sig, cx, attrs = source_arguments(fn, [(n, t) for n, t in sig.items() if t != "constexpr"],
                                      cx, assume)
    k = triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]})
    sass, res = disassemble(k.asm["cubin"])
    regs = re.search(r"REG:(\d+)", res)
    ops = opcodes(sass)

    def count(prefix: str) -> int:
        return sum(n for op, n in ops.items() if op.startswith(prefix))

    loads = {op: n for op, n in sorted(ops.items()) if op.startswith(("LDG", "LDGSTS"))}
    stores = {op: n for op, n in sorted(ops.items()) if op.startswith("STG")}
    loop = loop_body(sass)
    return {"case": case, "kernel": kernel, "config": cfg, "aligned": aligned,
            "loop_instructions": sum(loop.values()), "loop_divisions": loop["MUFU"],
            "registers": int(regs.group(1)) if regs else None,
            "spills": "STL" in ops or "LDL" in ops,
            "spill_stores": sum(n for op, n in ops.items() if op.startswith("STL")),
            "shared": k.metadata.shared,
            "hgmma": count("HGMMA"), "hmma": count("HMMA"), "ffma": count("FFMA"),
            "loads": loads, "stores": stores}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", action="store_true", help="the first layer (C=3, 7x7) instead")
    ap.add_argument("--cases", default="", help="comma-separated cases (default: all 24)")
    ap.add_argument("--kernels", default="", metavar="MODULE",
                    help="the conv_triton module to compile (default the package's; e.g. a "
                         "copy of another tree's kernels folder on PYTHONPATH)")
    ap.add_argument("--tiles", default="", help="comma-separated tiles BMxBNxBKwWsS to "
                    "compile each case at (default: the case's tuned tile)")
    ap.add_argument("--both", action="store_true",
                    help="also each case's generic object where the runtime takes an aligned one")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = FIRST if args.first else LAYER
    cases = [c for c in args.cases.split(",") if c] or [
        f"{t}-{d}-{lay}" for t in ("FP16", "BF16", "FP32", "TF32") for d in "FBW"
        for lay in ("NHWC", "NCHW")]
    tiles = [t for t in args.tiles.split(",") if t] or [""]
    rows = [report(c, sizes, args.kernels, tile) for c in cases for tile in tiles]
    if args.both:
        rows += [report(r["case"], sizes, args.kernels, tile, generic=True)
                 for r, tile in zip(rows, [t for _ in cases for t in tiles], strict=True)
                 if r["aligned"]]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| case | kernel | aligned | tile | regs | spills | shared | HGMMA | HMMA | FFMA | "
          "global loads | global stores | loop instructions (divisions) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["config"]
        tile = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']}s{c['num_stages']}"
        loads = " ".join(f"{op}:{n}" for op, n in r["loads"].items())
        stores = " ".join(f"{op}:{n}" for op, n in r["stores"].items())
        spills = f"yes ({r['spill_stores']} STL)" if r["spills"] else "no"
        print(f"| {r['case']} | {r['kernel']} | {'yes' if r['aligned'] else 'no'} | {tile} | "
              f"{r['registers']} | {spills} | {r['shared']} | {r['hgmma']} | {r['hmma']} | "
              f"{r['ffma']} | {loads} | {stores} | {r['loop_instructions']} "
              f"({r['loop_divisions']}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
