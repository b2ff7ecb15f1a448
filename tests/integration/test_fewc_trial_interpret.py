"""The few-channel forward trial kernels of bench/fewc_fwd_2d.py (`fwd_smallc_tma`: y stored
by TMA; `fwd_smallc_fma`: a direct convolution on the FP32 units), run by Triton's interpreter
on the CPU against the float64 reference: FP32 and FP16, NHWC and (the direct kernel) NCHW,
3x3 at stride 2, 3x3 at stride 1 on 4 channels and a 7x7 stem at stride 2, the last row tile
and the last filter tile partial. The GPU run (bench/gpu_trials.sh) checks every result
against cuDNN's and times them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from triton_interpreter import HARNESS, interpreted

pytestmark = pytest.mark.integration

pytest.importorskip("triton")

BENCH = Path(__file__).resolve().parents[2] / "bench"

# (N, C, H, W, K, filter, stride, pad)
STEMS = [(2, 3, 11, 9, 16, 3, 2, 1), (1, 4, 8, 8, 24, 3, 1, 1), (2, 3, 13, 12, 8, 7, 2, 3)]
# (kernel, channels last)
VARIANTS = [("fwd_smallc_tma", 1), ("fwd_smallc_fma", 1), ("fwd_smallc_fma", 0)]

SCRIPT = HARNESS + textwrap.dedent('''
    import math
    stems, variants, bench = json.loads(sys.argv[1])
    sys.path.insert(0, bench)
    import fewc_fwd_2d as trial

    rng = np.random.default_rng(0)
    errors = []
    for data_type in ("FP32", "FP16"):
        for n, c, h, w, k, f, st, pad in stems:
            p_out, q_out = (h + 2 * pad - f) // st + 1, (w + 2 * pad - f) // st + 1
            x = rng.standard_normal((n, c, h, w))
            wt = rng.standard_normal((k, c, f, f)) / math.sqrt(c * f * f)
            p = ConvProblem(n=n, c=c, k=k, in_spatial=(h, w), filter=(f, f), pad=(pad, pad),
                            stride=(st, st), direction="F", in_type=data_type)
            for name, last in variants:
                order = (0, 2, 3, 1) if last else (0, 1, 2, 3)
                tx = to_device(x.transpose(order), data_type)
                tw = to_device(wt.transpose(order), data_type)
                y_shape = (n, p_out, q_out, k) if last else (n, k, p_out, q_out)
                ty = to_device(np.full(y_shape, np.nan), data_type)

                def nchw_strides(t):  # the kernels take (n, c, h, w) strides
                    s = t.stride()
                    return (s[0], s[3], s[1], s[2]) if last else s
                exact = {"x": to_host(tx).transpose(np.argsort(order)),
                         "w": to_host(tw).transpose(np.argsort(order))}
                strides = nchw_strides(tx) + nchw_strides(tw) + nchw_strides(ty)
                bm, bn = 32, 8
                grid = (math.ceil(n * p_out * q_out / bm) * math.ceil(k / bn), 1, 1)
                getattr(trial, name)[grid](
                    tx, tw, ty, ty, (n, c, h, w, k, p_out, q_out, f, f, 1),
                    (st, st, pad, pad, 1, 1), strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=16,
                    GROUP_M=8, SPLIT_K=1, CHANNELS_LAST=last, PRECISION="ieee")
                got = to_host(ty)
                if last:
                    got = got.transpose(0, 3, 1, 2)
                ref = conv_reference(p, exact)
                errors.append(float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    print(json.dumps(errors))
''')


def test_interpreted_fewc_trials_match_float64() -> None:
    cases = [(t, s, v) for t in ("FP32", "FP16") for s in STEMS for v in VARIANTS]
    errors = interpreted(SCRIPT, [STEMS, VARIANTS, str(BENCH)], len(cases))
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < {"FP32": 1e-6, "FP16": 2e-3}[case[0]]]  # NaN (unwritten) fails too
    assert not bad, bad
