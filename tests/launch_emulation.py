"""Launches of the 2-D implicit GEMM (unsplit) and of the split reduce read as their kernels
read their arguments (pointers with byte offsets, sizes, strides), in float64 on the host: what
the solvers that move pointers and strides (the planes and depth-taps solvers) hand the GPU,
checked against the reference without one."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from miopenkernels.problem import ConvProblem
from miopenkernels.solvers.base import Launch, split_offset
from miopenkernels.solvers.reference import conv_output_name, conv_reference

__all__ = ["run_launches"]

_DIRECTION = {"conv2d_fwd": "F", "conv2d_bwd_data": "B"}


def _view(flat: np.ndarray, offset: int, shape: tuple[int, ...],
          strides: tuple[int, ...]) -> np.ndarray:
    """The elements a kernel addresses from element `offset` at element `strides` (writable),
    refusing any that fall outside the buffer."""
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    assert offset >= 0 and last < flat.size, (offset, last, flat.size)
    step = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape=shape,
                                           strides=tuple(s * step for s in strides))


def _buffer(buffers: dict[str, np.ndarray], slots: dict[str, int], tensor: str
            ) -> tuple[np.ndarray, int]:
    """(flat buffer, element offset) of a pointer argument's tensor ("dx@4096", "ws_p1")."""
    name, offset = split_offset(tensor)
    if name in slots:
        return buffers["workspace"], (slots[name] + offset) // 4
    return buffers[name], offset // 4


def _conv(launch: Launch, buffers: dict[str, np.ndarray], slots: dict[str, int]) -> None:
    v = launch.scalars()
    direction = next(d for k, d in _DIRECTION.items() if launch.kernel_name.startswith(k))
    g = int(v["G"])
    problem = ConvProblem(n=int(v["N"]), c=g * int(v["C"]), k=g * int(v["K"]),
                          in_spatial=(int(v["H"]), int(v["W"])),
                          filter=(int(v["R"]), int(v["S"])),
                          pad=(int(v["pad_h"]), int(v["pad_w"])),
                          stride=(int(v["stride_h"]), int(v["stride_w"])),
                          dilation=(int(v["dil_h"]), int(v["dil_w"])), groups=g,
                          direction=direction)
    assert problem.out_spatial == (int(v["P"]), int(v["Q"]))
    names = {"F": {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y"},
             "B": {"x_ptr": "dx", "w_ptr": "w", "y_ptr": "dy"}}[direction]
    shapes = {"x_ptr": ((problem.n, problem.c, *problem.in_spatial), ("sxn", "sxc", "sxh", "sxw")),
              "w_ptr": ((problem.k, int(v["C"]), *problem.filter), ("swk", "swc", "swr", "sws")),
              "y_ptr": ((problem.n, problem.k, *problem.out_spatial),
                        ("syn", "syk", "syh", "syw"))}
    views = {}
    for arg in launch.args:
        if arg.name in shapes:
            shape, strides = shapes[arg.name]
            flat, offset = _buffer(buffers, slots, arg.tensor)
            views[names[arg.name]] = _view(flat, offset, shape, tuple(int(v[s]) for s in strides))
    out = conv_output_name(problem)
    views[out][...] = conv_reference(problem, {n: np.array(a) for n, a in views.items()
                                               if n != out})


def _reduce(launch: Launch, buffers: dict[str, np.ndarray], slots: dict[str, int]) -> None:
    v = launch.scalars()
    total, split = int(v["TOTAL"]), int(v["SPLIT_K"])
    dims = (total // (int(v["C"]) * int(v["R"]) * int(v["S"])), int(v["C"]), int(v["R"]),
            int(v["S"]))
    ptrs = {a.name: a.tensor for a in launch.args if a.is_pointer}
    flat, offset = _buffer(buffers, slots, ptrs["ws_ptr"])
    parts = flat[offset:offset + split * total].reshape(split, total) if split else \
        np.zeros((0, total))
    out_flat, out_offset = _buffer(buffers, slots, ptrs["w_ptr"])
    out = _view(out_flat, out_offset, dims, tuple(int(v[s]) for s in ("swk", "swc", "swr", "sws")))
    out[...] = parts.sum(axis=0).reshape(dims)


def run_launches(launches: Iterable[Launch], buffers: dict[str, np.ndarray],
                 slots: dict[str, int]) -> None:
    """Run `launches` in order on `buffers` (the caller's tensors by name, flat float64, and
    "workspace"), the workspace's named parts at `slots` (byte offsets)."""
    for launch in launches:
        if launch.kernel_name == "conv2d_bwd_weight_reduce":
            _reduce(launch, buffers, slots)
        else:
            _conv(launch, buffers, slots)
