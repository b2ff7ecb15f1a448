"""Torch tensors -> the ConvProblem they pose: sizes, memory layout and data type.

A tensor in `torch.channels_last` (`channels_last_3d`) memory format poses an NHWC (NDHWC)
problem, any other an NCHW (NCDHW) one; all three tensors of a call take the layout of the
input. Data types are those the solvers compute: FP32, FP16 and BF16.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..errors import ProblemError
from ..problem import ConvProblem

__all__ = ["DATA_TYPES", "conv_problem", "data_type", "is_channels_last", "memory_format",
           "out_spatial"]

DATA_TYPES = {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16"}
_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}
_LAYOUTS = {(4, False): "NCHW", (4, True): "NHWC", (5, False): "NCDHW", (5, True): "NDHWC"}


def is_channels_last(x: torch.Tensor) -> bool:
    """Whether `x` is laid out channels last (and not also plain contiguous: a tensor of one
    channel or one pixel is both, and counts as NCHW)."""
    fmt = _CHANNELS_LAST.get(x.dim())
    return fmt is not None and not x.is_contiguous() and x.is_contiguous(memory_format=fmt)


def memory_format(dims: int, channels_last: bool) -> torch.memory_format:
    """The torch memory format of a problem's tensors of `dims` dimensions."""
    return _CHANNELS_LAST[dims] if channels_last else torch.contiguous_format


def data_type(x: torch.Tensor, weight: torch.Tensor) -> str:
    """The MIOpen type name of a call's tensors, which must agree."""
    if x.dtype != weight.dtype:
        raise ProblemError(f"input is {x.dtype} and weight {weight.dtype}: convolutions here "
                           "take one type; cast one of them (or run under torch.autocast)")
    name = DATA_TYPES.get(x.dtype)
    if name is None:
        raise ProblemError(f"{x.dtype} convolutions are not computed here (float32, float16, "
                           "bfloat16); cast the tensors or use torch.nn.functional")
    return name


def out_spatial(in_spatial: Sequence[int], filt: Sequence[int], padding: Sequence[int],
                stride: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int]) -> list[int]:
    """Output sizes for the fake (meta) implementations, where sizes may be symbolic; real
    calls take them from the ConvProblem, and opcheck holds the two to the same answer."""
    if transposed:
        return [(i - 1) * s - 2 * p + d * (f - 1) + op + 1 for i, f, p, s, d, op in
                zip(in_spatial, filt, padding, stride, dilation, output_padding, strict=True)]
    return [(i + 2 * p - d * (f - 1) - 1) // s + 1 for i, f, p, s, d in
            zip(in_spatial, filt, padding, stride, dilation, strict=True)]


def conv_problem(x_size: Sequence[int], w_size: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int,
                 transposed: bool, output_padding: Sequence[int], *, direction: str,
                 channels_last: bool, type_name: str) -> ConvProblem:
    """The problem of a layer with input sizes `x_size` (N, C, *spatial) and weight sizes
    `w_size` (K, C/G, *filter; transposed: C, K/G, *filter), checked as torch checks them."""
    dims = len(x_size)
    if dims not in (4, 5) or len(w_size) != dims:
        raise ProblemError(f"input of {dims} dimensions and weight of {len(w_size)}: "
                           "2D convolutions take 4, 3D ones 5 (batch, channels, spatial)")
    n, c = int(x_size[0]), int(x_size[1])
    if groups < 1:
        raise ProblemError(f"groups must be at least 1, got {groups}")
    if transposed:
        if int(w_size[0]) != c:
            raise ProblemError(f"input has {c} channels; the transposed weight {tuple(w_size)} "
                               f"expects {w_size[0]}")
        k = int(w_size[1]) * groups
        for op, s, d in zip(output_padding, stride, dilation, strict=True):
            if op >= max(s, d):
                raise ProblemError(f"output padding {tuple(output_padding)} must be smaller "
                                   f"than the stride {tuple(stride)} or dilation "
                                   f"{tuple(dilation)}")
    else:
        if int(w_size[1]) * groups != c:
            raise ProblemError(f"input has {c} channels; the weight {tuple(w_size)} with "
                               f"{groups} groups expects {int(w_size[1]) * groups}")
        k = int(w_size[0])
    return ConvProblem(n=n, c=c, k=k, in_spatial=tuple(int(v) for v in x_size[2:]),
                       filter=tuple(int(v) for v in w_size[2:]), pad=tuple(padding),
                       stride=tuple(stride), dilation=tuple(dilation), groups=groups,
                       direction=direction, in_layout=_LAYOUTS[(dims, channels_last)],
                       in_type=type_name, mode="trans" if transposed else "conv",
                       trans_output_pad=tuple(output_padding) if transposed else ())
