"""The warp-specialised trial kernels of bench/ws_conv.py (bench/_ws_kernel.py), run by
Triton's interpreter on the CPU (TRITON_INTERPRET=1), against the float64 reference: the
zero-bordered copy and the shift convolution forward, backward data and backward weights
(its parts summed here) in FP16 NHWC, a program a tile and persistent programs, channel
counts not multiples of the box's (so a box runs past the channels into the next tap's
columns), dilation, a 5x5 filter and a 1x1 one; and gemm_ws on a GEMM whose sizes are not
multiples of its tile. The interpreter runs the loop unspecialised: what it checks is the
indexing (the shifts, the reflected taps, the border, the rows not stored); the GPU run
(bench/ws_conv.py) checks every result against cuDNN's."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")

BENCH = Path(__file__).resolve().parents[2] / "bench"

# (direction, N, C, H, W, K, filter, pad, dilation)
CASES = [
    ("F", 2, 24, 9, 7, 40, 3, 1, 1),
    ("F", 1, 16, 6, 5, 8, 5, 2, 1),
    ("F", 2, 8, 10, 9, 24, 3, 2, 2),
    ("F", 1, 8, 5, 6, 16, 1, 0, 1),
    ("B", 2, 24, 9, 7, 40, 3, 1, 1),
    ("B", 1, 16, 6, 5, 8, 5, 2, 1),
    ("B", 2, 8, 10, 9, 24, 3, 2, 2),
    ("B", 2, 16, 7, 7, 16, 3, 0, 1),
    ("W", 2, 24, 9, 7, 40, 3, 1, 1),
    ("W", 1, 16, 6, 5, 8, 5, 2, 1),
    ("W", 2, 8, 10, 9, 24, 3, 2, 2),
    ("W", 3, 8, 5, 6, 16, 1, 0, 1),
    ("W", 4, 8, 14, 14, 16, 3, 1, 1),  # 1,024 rows: 4 parts
]

SCRIPT = HARNESS + textwrap.dedent('''
    import math
    cases, bench = json.loads(sys.argv[1])
    sys.path.insert(0, bench)
    import _ws_kernel as kern
    import _ws_launch as ws_conv

    rng = np.random.default_rng(0)
    errors, parts_seen = [], []
    for direction, n, c, h, w, k, f, pad, dil in cases:
        p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f), pad=(pad, pad),
                        stride=(1, 1), dilation=(dil, dil), direction=direction,
                        in_type="FP16", in_layout="NHWC", wei_layout="NHWC",
                        out_layout="NHWC")
        assert ws_conv.eligible(p), p
        g = ws_conv.geometry(p)
        tensors, exact, output = layer_tensors(p, direction, "FP16", rng)
        rows = g["N"] * g["Hp"] * g["Wp"]
        xp = _HostTensor(np.full(rows * g["C_in"], np.nan, np.float16), "float16")
        cfg = (32, 16, 16, 4, 2, 0)  # boxes narrower than the channels
        if direction == "W":  # parts of 16 steps: several where the rows are many
            dyp = _HostTensor(np.full(rows * g["C_out"], np.nan, np.float16), "float16")
            n_parts, _ = ws_conv.parts(g, cfg)
            size = n_parts * int(np.prod(tensors["dw"].array.shape))
            ws = _HostTensor(np.full(size, np.nan, np.float32), "float32")
            pad_fn, conv_fn, _ = ws_conv.launches_w(kern, g, tensors["x"], tensors["dy"],
                                                     tensors["dw"], xp, dyp, ws, cfg)
            pad_fn()
            conv_fn()
            got = ws.array.reshape(n_parts, *tensors["dw"].array.shape).sum(axis=0)
            parts_seen.append(n_parts)
        else:  # a program a tile, then persistent programs walking the tiles
            got = []
            for c in (cfg, cfg + (1,)):
                tensors[output].array[...] = np.nan
                pad_fn, conv_fn = ws_conv.launches(kern, g, tensors["x" if direction == "F"
                                                                    else "dy"], tensors["w"],
                                                    tensors[output], xp, c, direction == "B")
                pad_fn()
                conv_fn()
                got.append(to_host(tensors[output]))
        ref = conv_reference(p, exact)
        for out in got if isinstance(got, list) else [got]:
            errors.append(float(np.linalg.norm(out - ref) / np.linalg.norm(ref)))
    m, n_cols, red = 70, 40, 48
    a = rng.standard_normal((m, red))
    b = rng.standard_normal((n_cols, red))
    ta, tb = to_device(a, "FP16"), to_device(b, "FP16")
    ref = to_host(ta) @ to_host(tb).T
    for grid, programs in (((math.ceil(m / 32) * math.ceil(n_cols / 16),), 0), ((4,), 4)):
        out = to_device(np.full((m, n_cols), np.nan), "FP16")
        kern.gemm_ws[grid](ta, tb, out, m, n_cols, red, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16,
                           GROUP_M=2, WS=False, PROGRAMS=programs)
        errors.append(float(np.linalg.norm(to_host(out) - ref) / np.linalg.norm(ref)))
    assert max(parts_seen) > 1, parts_seen  # a split backward weights among the cases
    print(json.dumps(errors))
''')


def test_interpreted_ws_kernels_match_float64() -> None:
    cases = [(*case, launch) for case in CASES
             for launch in (("parts",) if case[0] == "W" else ("tiles", "persistent"))]
    cases += [("gemm_ws", "tiles"), ("gemm_ws", "persistent")]
    errors = interpreted(SCRIPT, [CASES, str(BENCH)], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < 2e-3]  # a NaN left in the output (a row not written) fails too
    assert not bad, bad


def test_geometry_padding_and_eligibility() -> None:
    sys.path.insert(0, str(BENCH))
    import _ws_launch as ws_conv
    from miopenkernels.problem import ConvProblem

    def problem(direction: str, f: int, pad: int, dil: int = 1, stride: int = 1,
                c: int = 16) -> ConvProblem:
        return ConvProblem(n=2, c=c, k=32, in_spatial=(14, 12), filter=(f, f),
                           pad=(pad, pad), stride=(stride, stride), dilation=(dil, dil),
                           direction=direction, in_type="FP16", in_layout="NHWC",
                           wei_layout="NHWC", out_layout="NHWC")

    g = ws_conv.geometry(problem("F", 3, 1))
    assert (g["Hp"], g["Wp"], g["Ho"], g["Wo"], g["C_in"], g["C_out"]) == (16, 14, 14, 12, 16, 32)
    g = ws_conv.geometry(problem("B", 3, 0, dil=2))  # dy 10x8 bordered by 4: dx 14x12
    assert (g["H"], g["W"], g["top"], g["Hp"], g["Ho"], g["Wo"]) == (10, 8, 4, 18, 14, 12)
    assert (g["C_in"], g["C_out"]) == (32, 16)
    assert not ws_conv.eligible(problem("F", 3, 1, stride=2))
    assert not ws_conv.eligible(problem("F", 3, 1, c=12))  # 24-byte rows: no TMA
    assert not ws_conv.eligible(problem("B", 1, 1))  # a border of -1 on dy
    assert ws_conv.eligible(problem("B", 3, 1))
