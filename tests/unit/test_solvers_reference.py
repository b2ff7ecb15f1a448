"""The numpy references against plain loops on tiny shapes, and their adjoint identities."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers import reference as ref


def naive_conv(x, w, pad, stride, dil, groups):
    """Seven nested loops (any spatial rank): y[n,k,o] = sum x[n,c,o*s-p+f*d] w[k,c,f]."""
    n, c = x.shape[:2]
    k = w.shape[0]
    filt = w.shape[2:]
    out = [(i + 2 * p - d * (f - 1) - 1) // s + 1
           for i, f, p, s, d in zip(x.shape[2:], filt, pad, stride, dil, strict=True)]
    y = np.zeros((n, k, *out))
    cg, kg = c // groups, k // groups
    for b, kk in itertools.product(range(n), range(k)):
        g = kk // kg
        for o in itertools.product(*map(range, out)):
            acc = 0.0
            for cc in range(cg):
                for f in itertools.product(*map(range, filt)):
                    pos = [oi * s - p + fi * d
                           for oi, s, p, fi, d in zip(o, stride, pad, f, dil, strict=True)]
                    if all(0 <= q < size for q, size in zip(pos, x.shape[2:], strict=True)):
                        acc += x[(b, g * cg + cc, *pos)] * w[(kk, cc, *f)]
            y[(b, kk, *o)] = acc
    return y


CASES = [
    # in_spatial, filter, pad, stride, dilation, c, k, groups
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 3, 4, 1),
    ((7, 5), (3, 2), (0, 1), (2, 1), (1, 2), 4, 6, 2),
    ((6, 6), (1, 1), (0, 0), (2, 2), (1, 1), 4, 4, 4),
    ((4, 5, 5), (3, 3, 2), (1, 0, 1), (1, 2, 1), (1, 1, 2), 2, 3, 1),
]


@pytest.mark.parametrize("case", CASES)
def test_forward_matches_loops(case):
    sp, f, pad, stride, dil, c, k, g = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, c, *sp))
    w = rng.standard_normal((k, c // g, *f))
    np.testing.assert_allclose(ref.conv_fwd(x, w, pad, stride, dil, g),
                               naive_conv(x, w, pad, stride, dil, g), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_backward_directions_are_adjoints(case):
    """<conv(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_weights(x, dy)>."""
    sp, f, pad, stride, dil, c, k, g = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, c, *sp))
    w = rng.standard_normal((k, c // g, *f))
    y = naive_conv(x, w, pad, stride, dil, g)
    dy = rng.standard_normal(y.shape)
    dx = ref.conv_bwd_data(dy, w, sp, pad, stride, dil, g)
    dw = ref.conv_bwd_weights(x, dy, f, pad, stride, dil, g)
    assert dx.shape == x.shape and dw.shape == w.shape
    lhs = float((y * dy).sum())
    assert lhs == pytest.approx(float((x * dx).sum()), rel=1e-10)
    assert lhs == pytest.approx(float((w * dw).sum()), rel=1e-10)


def test_bwd_data_matches_gradient_by_loops():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 4, 4))
    w = rng.standard_normal((3, 2, 2, 2))
    dy = rng.standard_normal((1, 3, 2, 2))
    dx = ref.conv_bwd_data(dy, w, (4, 4), (0, 0), (2, 2), (1, 1), 1)
    # d<conv(x), dy>/dx by finite differences (exact: the map is linear in x).
    for idx in itertools.product(*map(range, x.shape)):
        e = np.zeros_like(x)
        e[idx] = 1.0
        grad = (naive_conv(e, w, (0, 0), (2, 2), (1, 1), 1) * dy).sum()
        assert dx[idx] == pytest.approx(grad, abs=1e-12)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_conv_reference_handles_layouts(layout, direction):
    p = ConvProblem(n=2, c=4, k=6, in_spatial=(5, 5), filter=(3, 3), pad=(1, 1), groups=2,
                    direction=direction, in_layout=layout)
    rng = np.random.default_rng(3)
    inputs = ref.conv_inputs(p, rng)
    out = ref.conv_reference(p, inputs)
    assert out.shape == ref.conv_tensor_shapes(p)[ref.conv_output_name(p)]
    # The same numbers through the NCHW path.
    q = ConvProblem(n=2, c=4, k=6, in_spatial=(5, 5), filter=(3, 3), pad=(1, 1), groups=2,
                    direction=direction)
    back = {}
    for name, arr in inputs.items():
        lay = layout
        back[name] = ref.to_layout(ref.from_layout(arr, lay), "NCHW")
    expect = ref.conv_reference(q, back)
    np.testing.assert_allclose(ref.from_layout(out, layout), expect, atol=1e-12)


def test_transposed_forward_is_backward_data_of_the_plain_conv():
    t = ConvProblem(n=1, c=3, k=2, in_spatial=(3, 4), filter=(3, 3), pad=(1, 1), stride=(2, 2),
                    mode="trans", trans_output_pad=(1, 0))
    rng = np.random.default_rng(4)
    x = rng.standard_normal(t.in_shape)
    w = rng.standard_normal(t.wei_shape)  # (C, K/G, 3, 3)
    y = ref.conv_reference(t, {"x": x, "w": w})
    assert y.shape == t.out_shape == (1, 2, 6, 7)
    # Adjoint identity with the plain conv from y-shaped to x-shaped tensors.
    z = rng.standard_normal(y.shape)
    plain = ref.conv_fwd(z, w, t.pad, t.stride, t.dilation, 1)
    assert float((y * z).sum()) == pytest.approx(float((x * plain).sum()), rel=1e-10)


def test_quantize_rounds_to_the_type():
    v = np.array([1.0 + 2.0**-9, 1.0 + 2.0**-12, 3.14159])
    assert ref.quantize(v, "BF16")[0] == 1.0  # 2^-9 is below bf16's half-ulp (2^-8)
    assert ref.quantize(v, "FP16")[1] == 1.0
    assert ref.quantize(v, "BF16")[2] == pytest.approx(3.140625)
    # Ties go to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
    assert ref.quantize(np.array([1.0 + 2.0**-8]), "BF16")[0] == 1.0


def test_activation_modes():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    assert list(ref.activation(x, "relu")) == [0, 0, 0, 0.5, 3.0]
    assert list(ref.activation(x, "leaky_relu", 0.1)) == pytest.approx([-0.2, -0.05, 0, 0.5, 3])
    assert list(ref.activation(x, "clipped_relu", 1.0)) == [0, 0, 0, 0.5, 1.0]
    assert ref.activation(x, "sigmoid")[2] == 0.5
    assert ref.activation(x, "tanh")[4] == pytest.approx(np.tanh(3.0))


def test_softmax_sums_to_one_over_channels():
    x = np.random.default_rng(5).standard_normal((2, 5, 3, 3)) * 50
    s = ref.softmax(x)
    np.testing.assert_allclose(s.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(ref.softmax(x, log=True)), s, rtol=1e-12)


def test_batchnorm_and_bias():
    x = np.ones((1, 2, 2, 2))
    y = ref.batchnorm_inference(x, [2.0, 1.0], [0.5, 0.0], [1.0, 0.0], [3.0, 0.0], 1.0)
    assert y[0, 0, 0, 0] == pytest.approx(0.5)  # 2 * 0 / 2 + 0.5
    assert y[0, 1, 1, 1] == pytest.approx(1.0)  # 1 * 1 / 1 + 0
    assert ref.bias_add(x, [1.0, -1.0])[0, 1, 0, 0] == 0.0


def naive_pool(x, window, pad, stride, mode):
    out = [(i + 2 * p - w) // s + 1
           for i, w, p, s in zip(x.shape[2:], window, pad, stride, strict=True)]
    y = np.zeros((*x.shape[:2], *out))
    for b, c in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*map(range, out)):
            vals = []
            for f in itertools.product(*map(range, window)):
                pos = [oi * s - p + fi for oi, s, p, fi in zip(o, stride, pad, f, strict=True)]
                if all(0 <= q < n for q, n in zip(pos, x.shape[2:], strict=True)):
                    vals.append(x[(b, c, *pos)])
            if mode == "max":
                y[(b, c, *o)] = max(vals)
            elif mode == "avg":
                y[(b, c, *o)] = sum(vals) / len(vals)
            else:
                y[(b, c, *o)] = sum(vals) / np.prod(window)
    return y


@pytest.mark.parametrize("mode", ["max", "avg", "avg_in"])
@pytest.mark.parametrize("shape,window,pad,stride", [
    ((5, 6), (3, 3), (1, 1), (2, 2)),
    ((4, 4), (2, 2), (0, 0), (2, 2)),
    ((3, 4, 4), (2, 3, 3), (0, 1, 1), (1, 2, 1)),
])
def test_pooling_matches_loops(mode, shape, window, pad, stride):
    x = np.random.default_rng(6).standard_normal((2, 3, *shape))
    np.testing.assert_allclose(ref.pooling(x, window, pad, stride, mode),
                               naive_pool(x, window, pad, stride, mode), atol=1e-12)
