"""Primitives on the GPU against the float64 references: every primitive, type and layout."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from miopenkernels.pooling import PoolProblem
from miopenkernels.primitives import (
    ActivationProblem,
    BatchNormProblem,
    BiasProblem,
    SoftmaxProblem,
    TensorShape,
)
from miopenkernels.solvers import reference as ref

TYPES = ("FP32", "FP16", "BF16")
LAYOUTS = ("NCHW", "NHWC")
EPS = {"FP32": 1e-5, "FP16": 2e-3, "BF16": 1.6e-2}


def host(arr: np.ndarray, t: str) -> np.ndarray:
    if t == "FP32":
        return arr.astype(np.float32)
    if t == "FP16":
        return arr.astype(np.float16)
    return (arr.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def back(arr: np.ndarray, t: str) -> np.ndarray:
    if t == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def mem(logical: np.ndarray, layout: str) -> np.ndarray:
    return ref.to_layout(logical, layout)


def run(handle, name, problem, out_shape, t, **inputs):  # noqa: ANN001, ANN003, ANN201
    """Run with the output poisoned (NaN) on the device; return it as float64 (memory layout)."""
    from miopenkernels.tensor import as_device

    nan = np.full(out_shape, 0xFFFF, np.uint16) if t == "BF16" else host(
        np.full(out_shape, np.nan), t)
    y = as_device(nan, handle.backend)
    handle.primitive(name, problem, outputs=(), y=y, **inputs)
    handle.backend.synchronize()
    got = np.empty_like(nan)
    handle.backend.copy_out(got, y.buffer)
    y.release()
    out = back(got, t)
    assert not np.isnan(out).any(), f"{np.isnan(out).sum()} outputs unwritten"
    return out


@pytest.fixture(scope="module")
def handle():  # noqa: ANN201
    from miopenkernels.handle import Handle

    return Handle()


def q(rng, shape, t, lo=-2.0, hi=2.0):  # noqa: ANN001, ANN201
    return ref.quantize(rng.uniform(lo, hi, shape), t)


@pytest.mark.parametrize(("t", "layout", "mode"), list(itertools.product(
    TYPES, LAYOUTS, ["relu", "leaky_relu", "clipped_relu", "tanh", "sigmoid"])))
def test_activation(handle, rng, t, layout, mode) -> None:  # noqa: ANN001
    shape = TensorShape(3, 5, (7, 9), layout, t)
    x = q(rng, shape.shape, t)
    prob = ActivationProblem(shape, mode, 0.1 if mode == "leaky_relu" else 1.5)
    got = run(handle, "Activation", prob, mem(x, layout).shape, t, x=host(mem(x, layout), t))
    want = mem(ref.activation(x, mode, prob.alpha), layout)
    np.testing.assert_allclose(got, want, rtol=EPS[t], atol=EPS[t])


@pytest.mark.parametrize(("t", "layout"), list(itertools.product(TYPES, LAYOUTS)))
def test_bias_and_batchnorm(handle, rng, t, layout) -> None:  # noqa: ANN001
    shape = TensorShape(2, 6, (5, 4), layout, t)
    x = q(rng, shape.shape, t)
    bias = q(rng, (6,), t)
    got = run(handle, "BiasAdd", BiasProblem(shape), mem(x, layout).shape, t,
              x=host(mem(x, layout), t), bias=host(bias, t))
    np.testing.assert_allclose(got, mem(ref.bias_add(x, bias), layout), rtol=EPS[t],
                               atol=EPS[t])
    scale, beta, mean = (rng.uniform(-1, 1, 6).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2.0, 6).astype(np.float32)
    got = run(handle, "BatchNormInference", BatchNormProblem(shape, 1e-5),
              mem(x, layout).shape, t, x=host(mem(x, layout), t), scale=scale, bias=beta,
              mean=mean, var=var)
    want = ref.batchnorm_inference(x, scale, beta, mean, var, 1e-5)
    np.testing.assert_allclose(got, mem(want, layout), rtol=2 * EPS[t], atol=2 * EPS[t])


@pytest.mark.parametrize(("t", "layout", "log"), list(itertools.product(TYPES, LAYOUTS,
                                                                         [False, True])))
def test_softmax(handle, rng, t, layout, log) -> None:  # noqa: ANN001
    shape = TensorShape(3, 37, (3, 5), layout, t)
    x = q(rng, shape.shape, t, -4, 4)
    got = run(handle, "Softmax", SoftmaxProblem(shape, log), mem(x, layout).shape, t,
              x=host(mem(x, layout), t))
    np.testing.assert_allclose(got, mem(ref.softmax(x, log), layout), rtol=2 * EPS[t],
                               atol=2 * EPS[t])


@pytest.mark.parametrize(("t", "layout", "mode"), list(itertools.product(
    TYPES, LAYOUTS, ["max", "avg", "avg_in"])))
def test_pooling(handle, rng, t, layout, mode) -> None:  # noqa: ANN001
    prob = PoolProblem(n=2, c=5, in_spatial=(11, 10), window=(3, 3), pad=(1, 1),
                       stride=(2, 2), mode=mode, layout=layout, data_type=t)
    x = q(rng, (2, 5, 11, 10), t)
    out_shape = mem(np.zeros((2, 5, *prob.out_spatial)), layout).shape
    got = run(handle, "Pooling", prob, out_shape, t, x=host(mem(x, layout), t))
    want = ref.pooling(x, prob.window, prob.pad, prob.stride, mode)
    np.testing.assert_allclose(got, mem(want, layout), rtol=EPS[t], atol=EPS[t])
