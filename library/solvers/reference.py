"""numpy float64 references for every conv problem and primitive: what GPU results must match.

Logical arrays are (N, C, *spatial) for activations and (K, C/G, *filter) for weights
(transposed convolutions: (C, K/G, *filter)). `conv_reference` takes and returns arrays in the
problem's memory layouts (NHWC activations are (N, H, W, C) arrays, NHWC weights (K, H, W, C/G)),
which is what a GPU test copies to and from the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ProblemError
from ..problem import ConvProblem

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..backends.null import NullBackend

__all__ = [
    "compute_reference",
    "null_result",
    "SLOW_REFERENCE_MACS",
    "to_layout",
    "from_layout",
    "conv_fwd",
    "conv_bwd_data",
    "conv_bwd_weights",
    "conv_tensor_shapes",
    "conv_inputs",
    "conv_reference",
    "conv_output_name",
    "quantize",
    "tolerance",
    "activation",
    "bias_add",
    "batchnorm_inference",
    "softmax",
    "pooling",
]

Array = np.ndarray


def _channel_last(layout: str) -> bool:
    return layout in ("NHWC", "NDHWC")


def to_layout(arr: Array, layout: str) -> Array:
    """Logical (N, C, *spatial) -> the memory order of `layout` (a contiguous copy)."""
    if _channel_last(layout):
        return np.ascontiguousarray(np.moveaxis(arr, 1, -1))
    return np.ascontiguousarray(arr)


def from_layout(arr: Array, layout: str) -> Array:
    """Memory order of `layout` -> logical (N, C, *spatial)."""
    return np.moveaxis(arr, -1, 1) if _channel_last(layout) else arr


def _out_size(i: int, f: int, p: int, s: int, d: int) -> int:
    return (i + 2 * p - d * (f - 1) - 1) // s + 1


def _tap_slices(
    tap: Sequence[int], out: Sequence[int], stride: Sequence[int], dil: Sequence[int]
) -> tuple[slice, ...]:
    """Padded-input positions o*s + t*d for o in range(out), per spatial axis."""
    return (slice(None), slice(None)) + tuple(
        slice(t * d, t * d + s * (o - 1) + 1, s)
        for t, o, s, d in zip(tap, out, stride, dil, strict=True)
    )


def conv_fwd(
    x: Array, w: Array, pad: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
    groups: int = 1,
) -> Array:
    """y = x (*) w, cross-correlation as in every DL framework; logical float arrays."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    n, c = x.shape[:2]
    k, filt = w.shape[0], w.shape[2:]
    out = [_out_size(i, f, p, s, d)
           for i, f, p, s, d in zip(x.shape[2:], filt, pad, stride, dilation, strict=True)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    y = np.zeros((n, k, *out))
    cg, kg = c // groups, k // groups
    for tap in np.ndindex(*filt):
        patch = xp[_tap_slices(tap, out, stride, dilation)]
        for g in range(groups):
            y[:, g * kg:(g + 1) * kg] += np.einsum(
                "nc...,kc->nk...", patch[:, g * cg:(g + 1) * cg],
                w[(slice(g * kg, (g + 1) * kg), slice(None)) + tuple(tap)],
            )
    return y


def conv_bwd_data(
    dy: Array, w: Array, in_spatial: Sequence[int], pad: Sequence[int], stride: Sequence[int],
    dilation: Sequence[int], groups: int = 1,
) -> Array:
    """dx: the adjoint of `conv_fwd` with respect to x, for an input of size `in_spatial`."""
    dy = np.asarray(dy, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    n, k = dy.shape[:2]
    c = w.shape[1] * groups
    filt, out = w.shape[2:], dy.shape[2:]
    # Large enough for every tap position; a transposed conv's output padding can make the
    # input larger than the positions the filter reaches, which stay zero.
    size = [max(i + 2 * p, s * (o - 1) + d * (f - 1) + 1)
            for i, p, s, o, d, f in zip(in_spatial, pad, stride, out, dilation, filt, strict=True)]
    dxp = np.zeros((n, c, *size))
    cg, kg = c // groups, k // groups
    for tap in np.ndindex(*filt):
        sl = _tap_slices(tap, out, stride, dilation)
        for g in range(groups):
            contrib = np.einsum(
                "nk...,kc->nc...", dy[:, g * kg:(g + 1) * kg],
                w[(slice(g * kg, (g + 1) * kg), slice(None)) + tuple(tap)],
            )
            dxp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl[2:]] += contrib
    crop = tuple(slice(p, p + i) for p, i in zip(pad, in_spatial, strict=True))
    return dxp[(slice(None), slice(None)) + crop]


def conv_bwd_weights(
    x: Array, dy: Array, filter_size: Sequence[int], pad: Sequence[int], stride: Sequence[int],
    dilation: Sequence[int], groups: int = 1,
) -> Array:
    """dw: the adjoint of `conv_fwd` with respect to w."""
    x = np.asarray(x, dtype=np.float64)
    dy = np.asarray(dy, dtype=np.float64)
    c, k = x.shape[1], dy.shape[1]
    out = dy.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    cg, kg = c // groups, k // groups
    dw = np.zeros((k, cg, *filter_size))
    for tap in np.ndindex(*filter_size):
        patch = xp[_tap_slices(tap, out, stride, dilation)]
        for g in range(groups):
            dyg = dy[:, g * kg:(g + 1) * kg].reshape(dy.shape[0], kg, -1)
            xg = patch[:, g * cg:(g + 1) * cg].reshape(x.shape[0], cg, -1)
            dw[(slice(g * kg, (g + 1) * kg), slice(None)) + tuple(tap)] = np.einsum(
                "nkp,ncp->kc", dyg, xg
            )
    return dw


# ----------------------------------------------------------------------------- problems
def _names(problem: ConvProblem) -> tuple[str, str, str]:
    """(x-shaped, weight, y-shaped) tensor names for the problem's direction."""
    d = problem.direction
    return ("dx" if d == "B" else "x", "dw" if d == "W" else "w", "y" if d == "F" else "dy")


def conv_tensor_shapes(problem: ConvProblem) -> dict[str, tuple[int, ...]]:
    """Memory shapes of the problem's three tensors, keyed by their names for its direction
    (tensor.memory_shape of x, w and y)."""
    from ..tensor import memory_shape

    return dict(zip(_names(problem), (memory_shape(problem, r) for r in ("x", "w", "y")),
                    strict=True))


def conv_inputs(problem: ConvProblem, rng: np.random.Generator) -> dict[str, Array]:
    """Random inputs (uniform in [-1, 1), quantised to the problem's type) in memory layout."""
    shapes = conv_tensor_shapes(problem)
    output = conv_output_name(problem)
    return {
        name: quantize(rng.uniform(-1.0, 1.0, shape), problem.in_type)
        for name, shape in shapes.items() if name != output
    }


def conv_output_name(problem: ConvProblem) -> str:
    """The tensor the direction writes: y, dx or dw."""
    xn, wn, yn = _names(problem)
    return {"F": yn, "B": xn, "W": wn}[problem.direction]


def conv_reference(problem: ConvProblem, tensors: dict[str, Array]) -> Array:
    """The direction's output (memory layout, float64) from its inputs (memory layout).

    Forward takes x and w and returns y; backward data takes dy and w and returns dx;
    backward weights takes x and dy and returns dw. Transposed problems use the same names
    for the layer's own tensors.
    """
    p = problem
    xn, wn, yn = _names(p)
    wei_lay = p.wei_layout

    def act(name: str, layout: str) -> Array:
        if name not in tensors:
            raise ProblemError(f"conv_reference for {p.key()} needs tensor {name!r}")
        return from_layout(np.asarray(tensors[name], dtype=np.float64), layout)

    def wei() -> Array:
        return from_layout(np.asarray(tensors[wn], dtype=np.float64), wei_lay)

    geo = (p.pad, p.stride, p.dilation, p.groups)
    d = p.direction
    if p.mode == "conv":
        if d == "F":
            return to_layout(conv_fwd(act(xn, p.in_layout), wei(), *geo), p.out_layout)
        if d == "B":
            dx = conv_bwd_data(act(yn, p.out_layout), wei(), p.in_spatial, *geo)
            return to_layout(dx, p.in_layout)
        dw = conv_bwd_weights(act(xn, p.in_layout), act(yn, p.out_layout), p.filter, *geo)
        return to_layout(dw, wei_lay)
    # Transposed: the plain conv runs from the layer output (its "x") to the layer input.
    if d == "F":
        y = conv_bwd_data(act(xn, p.in_layout), wei(), p.out_spatial, *geo)
        return to_layout(y, p.out_layout)
    if d == "B":
        dx = conv_fwd(act(yn, p.out_layout), wei(), *geo)
        return to_layout(dx, p.in_layout)
    dw = conv_bwd_weights(act(yn, p.out_layout), act(xn, p.in_layout), p.filter, *geo)
    return to_layout(dw, wei_lay)


# ----------------------------------------------------------------------------- types
def quantize(arr: Array, data_type: str) -> Array:
    """Round float values to `data_type` (FP32/FP16/BF16, nearest even) and back to float64."""
    a = np.asarray(arr, dtype=np.float64)
    if data_type == "FP32":
        return a.astype(np.float32).astype(np.float64)
    if data_type == "FP16":
        return a.astype(np.float16).astype(np.float64)
    if data_type == "BF16":
        bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    raise ProblemError(f"no quantisation for data type {data_type!r}")


def tolerance(data_type: str, terms: int) -> float:
    """Absolute tolerance for a sum of `terms` products of values in [-1, 1] stored in the type.

    Accumulation is in FP32 everywhere; the output rounding dominates for FP16/BF16. "TF32" is
    FP32 data under the TF32 math mode: inputs rounded to a 10-bit mantissa, like FP16's. A
    long reduction in one FP32 chain (backward weights over 65,536 positions unsplit) adds a
    rounding of up to half an FP32 ulp of the partial sum (about sqrt(k) after k terms) per
    addition: some 3 * 2**-24 * terms at the largest of many outputs.
    """
    eps = {"FP32": 2.0**-23, "TF32": 2.0**-10, "FP16": 2.0**-10, "BF16": 2.0**-7}[data_type]
    magnitude = max(1.0, float(np.sqrt(terms)))
    return float(4.0 * eps * magnitude + 1e-5 * terms**0.5 + 3.0 * 2.0**-24 * terms)


# ----------------------------------------------------------------------------- primitives
def activation(x: Array, mode: str, alpha: float = 0.0) -> Array:
    """relu, leaky_relu (alpha slope), clipped_relu (ceiling alpha), tanh, sigmoid."""
    v = np.asarray(x, dtype=np.float64)
    if mode == "relu":
        return np.maximum(v, 0.0)
    if mode == "leaky_relu":
        return np.where(v > 0.0, v, alpha * v)
    if mode == "clipped_relu":
        return np.minimum(np.maximum(v, 0.0), alpha)
    if mode == "tanh":
        return np.tanh(v)
    if mode == "sigmoid":
        return 1.0 / (1.0 + np.exp(-v))
    raise ProblemError(f"unknown activation {mode!r}")


def _per_channel(vec: Array, ndim: int) -> Array:
    out: Array = np.asarray(vec, dtype=np.float64).reshape((1, -1) + (1,) * (ndim - 2))
    return out


def bias_add(x: Array, bias: Array) -> Array:
    """x + bias[c] on a logical (N, C, ...) array."""
    v = np.asarray(x, dtype=np.float64)
    out: Array = v + _per_channel(bias, v.ndim)
    return out


def batchnorm_inference(
    x: Array, scale: Array, bias: Array, mean: Array, var: Array, epsilon: float
) -> Array:
    """scale * (x - mean) / sqrt(var + epsilon) + bias per channel (logical array)."""
    v = np.asarray(x, dtype=np.float64)
    nd = v.ndim
    out: Array = (_per_channel(scale, nd) * (v - _per_channel(mean, nd))
                  / np.sqrt(_per_channel(var, nd) + epsilon) + _per_channel(bias, nd))
    return out


def softmax(x: Array, log: bool = False) -> Array:
    """Softmax (or log-softmax) over axis 1 of a logical array."""
    v = np.asarray(x, dtype=np.float64)
    shifted = v - v.max(axis=1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    out: Array = shifted - lse if log else np.exp(shifted - lse)
    return out


def pooling(
    x: Array, window: Sequence[int], pad: Sequence[int], stride: Sequence[int], mode: str
) -> Array:
    """Forward pooling of a logical array: max, avg (padding excluded), avg_in (included)."""
    v = np.asarray(x, dtype=np.float64)
    fill = -np.inf if mode == "max" else 0.0
    vp = np.pad(v, [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=fill)
    valid = np.pad(np.ones(v.shape[2:]), [(p, p) for p in pad])
    out = [(i + 2 * p - w) // s + 1 for i, w, p, s in zip(v.shape[2:], window, pad, stride,
                                                          strict=True)]
    taps = []
    counts = np.zeros(out)
    for tap in np.ndindex(*window):
        sl = _tap_slices(tap, out, stride, (1,) * len(window))
        taps.append(vp[sl])
        counts += valid[sl[2:]]
    stack = np.stack(taps)
    result: Array
    if mode == "max":
        result = stack.max(axis=0)
        return result
    total = stack.sum(axis=0)
    if mode == "avg":
        result = total / np.maximum(counts, 1.0)
        return result
    if mode == "avg_in":
        result = total / float(np.prod(window))
        return result
    raise ProblemError(f"unknown pooling mode {mode!r}")


# ---------------------------------------------------------------- the null backend's result
# MIOpen type -> numpy type the reference can read and write.
_NUMPY_TYPES = {"FP32": "float32", "FP16": "float16", "FP64": "float64"}
# Multiply-adds above which the float64 reference takes seconds on a CPU (a batch-128 ResNet
# layer, 15e9 of them, took 7-8 s on one core): said once, so a slow run is not taken for a
# hang.
SLOW_REFERENCE_MACS = 1_000_000_000


def compute_reference(backend: NullBackend, problem: Any, ptrs: dict[str, int]) -> bool:
    """Write the problem's output (float64 reference, cast to its type) into null-backend memory.

    `ptrs` maps the layer's roles (x, w, y) to device pointers. On the null backend no kernel
    runs, so this is what makes `Handle.run` give the right answer without a GPU. Returns False
    (and changes nothing) for problems the reference cannot compute: other types than
    FP32/FP16/FP64, or not a convolution.
    """
    from ._conv import macs

    types = {getattr(problem, a, None) for a in ("in_type", "wei_type", "out_type")}
    if not hasattr(problem, "filter") or not types <= set(_NUMPY_TYPES):
        return False
    names = dict(zip(("x", "w", "y"), _names(problem), strict=True))
    shapes = conv_tensor_shapes(problem)
    role_type = {"x": problem.in_type, "w": problem.wei_type, "y": problem.out_type}

    def view(role: str) -> np.ndarray:
        dtype = np.dtype(_NUMPY_TYPES[role_type[role]])
        shape = shapes[names[role]]
        nbytes = int(np.prod(shape)) * dtype.itemsize
        return backend._view(ptrs[role], nbytes).view(dtype).reshape(shape)

    work = macs(problem)
    if work > SLOW_REFERENCE_MACS and not backend.warned_slow_reference:
        backend.warned_slow_reference = True
        from .._log import get_logger

        get_logger().warning(
            "the null backend (no GPU) computes run()'s output with the float64 reference on "
            "the CPU: %s is %.1fe9 multiply-adds, seconds of work per run", problem.key(),
            work / 1e9)
    out_role = {"F": "y", "B": "x", "W": "w"}[problem.direction]
    tensors = {names[r]: view(r) for r in ("x", "w", "y") if r != out_role}
    out = view(out_role)
    out[...] = conv_reference(problem, tensors).astype(out.dtype)
    return True


def null_result(backend: Backend, problem: Any, ptrs: dict[str, int]) -> None:
    """No kernel ran: on the null backend, compute the output with the reference; where it
    cannot, say once that the output is left as it was."""
    from ..backends.null import NullBackend

    if not isinstance(backend, NullBackend) or compute_reference(backend, problem, ptrs):
        return
    if not backend.warned_no_result:
        backend.warned_no_result = True
        import warnings

        warnings.warn(f"the null backend (no GPU) launches nothing and the reference cannot "
                      f"compute {problem.key()}: its output is left as it was", stacklevel=5)
