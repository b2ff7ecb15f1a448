"""What a launch of the Triton convolution kernels (kernels/conv_triton.py) needs, as plain data.

This module and those it gathers import nothing but the standard library, so the runtime,
which never imports Triton, can read them. `conv_triton.py` re-exports everything here.

The three directions share ONE argument list (`CONV_ARGS`): the pointers are always
(x, w, y, ws) whatever is read or written, followed by the sizes, the geometry and the strides
of the three tensors in element units, in (n, c, h, w) / (k, c, r, s) / (n, k, h, w) order:

- forward           (`conv2d_fwd`, `conv2d_fwd_smallc`, `conv2d_fwd_packed`): reads x and w,
  writes y.
- backward data     (`conv2d_bwd_data`, `conv2d_bwd_data_smallc`, `conv2d_bwd_data_packed`):
  reads y (dy) and w, writes x (dx).
- backward weights  (`conv2d_bwd_weight`, `conv2d_bwd_weight_smallc`,
  `conv2d_bwd_weight_packed`): reads x and y (dy), writes w (dw).

The packed kernels (kernels/conv_triton_packed.py) serve grouped problems of few channels and
filters a group (`packed`): a tile holds several groups, its weight tile block-diagonal.

With SPLIT_K > 1 (backward weights; forward and backward data where `split_applies`) a kernel
writes FP32 partial sums to `ws` (`workspace_bytes`) instead of its output, and
`conv2d_bwd_weight_reduce` (its own argument list, `REDUCE_ARGS`, values from `reduce_args`)
sums them into the output. The split is the launch's (the grid's third axis): one object,
compiled at SPLIT_K = SPLIT_OBJECT, serves every split of a tile, and the reduce takes the
split as a run-time argument; channels-last objects write the forward's and backward data's
partials in the output's memory order. `kernel_for` picks the kernel of a direction;
`tuned_config` gives the configuration measured fastest on the H100
(kernels/conv_triton_tuned_sm90.json).

`C` and `K` are channels PER GROUP; `G` is the group count (x has G*C channels, y G*K, w has G*K
filters of C channels). NCHW and NHWC are the same kernels: the strides say where the elements
are, and the constexpr CHANNELS_LAST=1 promises that the channel stride of x, w and y is 1 (NHWC
tensors, KRSC/"channels-last" weights), which lets the compiler vectorise along channels (the
channel-stride arguments are then ignored). CHANNELS_LAST=0 works for ANY strides.

Nothing about the problem's sizes is compiled in: every configuration is shape-agnostic. A
compiled object may carry the assumption that some arguments are multiples of 16 (Triton's
`tt.divisibility=16` on the pointers and on `ALIGN16_ARGS`): only a problem for which
`meets_align16(...)` holds may use such an object; any other problem takes a variant compiled
without it (same source, same constexprs). Offsets are 32-bit: every tensor must hold fewer
than 2**31 elements (`fits_int32`).

Numerics: the accumulator is FP32. For FP32 data the constexpr PRECISION picks the dot's input
precision: "ieee" (the default, plain FP32 arithmetic), "tf32" (TF32 math mode, only when asked
for) or "tf32x3" (three TF32 products, close to FP32). FP16/BF16 ignore PRECISION.

The data is kept in five modules; this one holds the alignment assumptions, the argument
values and signatures and the transposes' tiles, and re-exports the others' names (`__all__`):
`conv_triton_kernels_spec` (argument lists, `KERNELS`, target kinds' legal spaces),
`conv_triton_grid_spec` (grids, GEMM sizes, splits and workspace, the kernel and packed tile a
problem takes), `conv_triton_via_spec` (the Via tables) and `conv_triton_tuned_spec` (the tuned
tables and their rules). A function reads the names of its own module: a test that replaces a
table or function sets it there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_grid_spec import (
    MAX_SPLIT,
    PACKED_BELOW,
    PACKED_KIND_TILES,
    PACKED_TILES,
    SPLIT_BY_DEFAULT,
    SPLIT_WAVES,
    filling_split,
    gemm_dims,
    grid,
    kernel_for,
    packed,
    packed_groups,
    packed_tile,
    reduce_args,
    reduction_steps,
    split_applies,
    split_for,
    tile_efficiency,
    workspace_bytes,
)
from .conv_triton_kernels_spec import (
    ALIGN16_ARGS,
    CONV_ARGS,
    CONV_TUPLES,
    ELEMENT_BYTES,
    ELEMENT_TYPES,
    FEW_ALIGN_ARGS,
    FEW_ALIGN_TYPES,
    KERNEL_SPLITS,
    KERNELS,
    NO_MATRIX_KERNELS,
    OUTPUT_OF,
    PACKED_ALIGN_ARGS,
    REDUCE_ARGS,
    REDUCE_BLOCK,
    REDUCE_WARPS,
    REDUCE_WIDE,
    REDUCE_WIDE_MIN_SPLIT,
    TARGET_KINDS,
    TF32X3_KINDS,
    TRANSPOSE_ARGS,
    TRANSPOSE_NARROW,
    TRANSPOSE_THIN,
    TRANSPOSE_TILES,
    TRANSPOSE_WARPS,
    accumulators_per_lane,
    cdiv,
    is_legal,
    legal_space,
    shared_bytes,
    splits_of,
    target_kind,
    wide_reduce,
)
from .conv_triton_tuned_spec import (
    RULE_MOST,
    TUNED_FILES,
    WrwRule,
    measured,
    rule_tile,
    rule_tiles,
    shape_key,
    shape_sizes,
    small_grid_rule,
    small_grid_split,
    tile_rule,
    tile_terms,
    tuned_config,
    tuned_table,
    usual_config,
    wrw_rule,
    wrw_split,
    wrw_tiles,
)
from .conv_triton_via_spec import (
    VIA_NCHW,
    VIA_NCHW_FEW_C,
    VIA_NHWC,
    VIA_NHWC_MIN_C,
    VIA_NHWC_ONE_TAP,
    VIA_NHWC_PACKED,
    VIA_NHWC_STRIDED_FROM,
    VIA_NHWC_STRIDED_ONE_TAP,
    via_cases,
    via_other_layout,
)

__all__ = [
    # this module
    "ALIGN8_KERNELS", "align_divisor", "align_assumptions", "meets_align16", "fits_int32",
    "conv_args", "default_config", "arg_list", "transpose_tile", "transpose_is_identity",
    "transpose_fits", "SPLIT_OBJECT", "split_object", "triton_signature", "typed_signature",
    "align16_variants", "align16_args",
    # conv_triton_kernels_spec
    "CONV_TUPLES", "CONV_ARGS", "REDUCE_ARGS", "REDUCE_BLOCK", "REDUCE_WARPS", "NO_MATRIX_KERNELS",
    "REDUCE_WIDE", "REDUCE_WIDE_MIN_SPLIT", "wide_reduce",
    "TRANSPOSE_ARGS", "TRANSPOSE_TILES", "TRANSPOSE_THIN", "TRANSPOSE_NARROW", "TRANSPOSE_WARPS",
    "ALIGN16_ARGS", "FEW_ALIGN_ARGS", "FEW_ALIGN_TYPES", "PACKED_ALIGN_ARGS", "ELEMENT_TYPES",
    "ELEMENT_BYTES", "KERNELS",
    "TF32X3_KINDS", "TARGET_KINDS", "target_kind", "shared_bytes", "is_legal", "KERNEL_SPLITS",
    "splits_of",
    "accumulators_per_lane", "legal_space", "cdiv", "OUTPUT_OF",
    # conv_triton_grid_spec
    "grid", "packed_groups", "gemm_dims", "tile_efficiency", "split_applies", "reduce_args",
    "SPLIT_BY_DEFAULT", "MAX_SPLIT", "SPLIT_WAVES", "reduction_steps", "filling_split", "split_for",
    "workspace_bytes", "PACKED_BELOW", "packed", "kernel_for", "PACKED_TILES", "PACKED_KIND_TILES",
    "packed_tile",
    # conv_triton_via_spec
    "VIA_NHWC", "VIA_NHWC_MIN_C", "VIA_NHWC_ONE_TAP", "VIA_NHWC_PACKED",
    "VIA_NHWC_STRIDED_FROM", "VIA_NHWC_STRIDED_ONE_TAP", "VIA_NCHW", "VIA_NCHW_FEW_C", "via_cases",
    "via_other_layout",
    # conv_triton_tuned_spec
    "TUNED_FILES", "RULE_MOST", "shape_key", "tuned_table", "tuned_config", "small_grid_rule",
    "WrwRule",
    "wrw_rule", "wrw_split", "wrw_tiles", "small_grid_split", "shape_sizes", "usual_config",
    "tile_rule", "tile_terms", "measured", "rule_tile", "rule_tiles",
]


#: The implicit GEMM kernels whose 16-bit channels-last aligned objects assume multiples of 8
#: (`align_divisor`): each loads and stores along channels.
ALIGN8_KERNELS = frozenset({"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weight"})


def align_divisor(dtype: str | None, channels_last: bool, kernel: str = "conv2d_fwd") -> int:
    """What an aligned object assumes each ALIGN16_ARGS value a multiple of: 16 elements, or 8
    for a 16-bit channels-last object of ALIGN8_KERNELS or a packed kernel, whose loads along
    channels need 16 bytes. On the H100 the forward assuming 8 took 0.999-1.005 of the time of
    one assuming 16 over ResNet-50's layers, and 0.29-0.44 of the generic object's on the
    zoo's layers of 8k channels (bench/results/align_variants*_h100.json); NCHW objects keep
    16 (1.03-1.09). The backward kernels' objects assuming 8 keep the memory instructions of
    those assuming 16, the same 16-byte vectors, about half of them with a few more mask
    instructions (bench/results/align8_backward_ptx.json); on the H200 they took 0.25 (backward
    data) and 0.24 (backward weights) of the generic objects' time over the zoo's 72 layers of
    8k channels in FP16 NHWC (bench/results/align8_backward_h200.json).
    The packed kernels' 16-bit channels-last objects assume 8 too: a group of 8 channels
    meets it, and their loads along a tile's groups' channels are then 16-byte vectors. The
    few-channel kernels' (FEW_ALIGN_ARGS) assume 16 bytes of the type (8 or 4 elements)."""
    if channels_last and kernel in FEW_ALIGN_ARGS and dtype is not None:
        return 16 // ELEMENT_BYTES.get(dtype, 1)  # 16 bytes of y's (dy's) row
    if channels_last and (kernel in ALIGN8_KERNELS or KERNELS[kernel].get("packed")) and \
            dtype is not None and ELEMENT_BYTES.get(dtype) == 2:
        return 8
    return 16


def align_assumptions(kernel: str, dtype: str, channels_last: bool
                      ) -> tuple[tuple[str, int], ...]:
    """(argument, divisor) an aligned object of `kernel` assumes: pointers 16-byte aligned,
    ALIGN16_ARGS multiples of `align_divisor`."""
    divisor = align_divisor(dtype, channels_last, kernel)
    ptrs = {n for n, k in arg_list(kernel) if k.startswith("ptr")}
    part = PACKED_ALIGN_ARGS[channels_last] if KERNELS[kernel].get("packed") else {}
    return tuple((n, 16 if n in ptrs else divisor // part.get(n, 1))
                 for n in align16_args(kernel, channels_last))


def meets_align16(args: Mapping[str, int], channels_last: bool, dtype: str | None = None,
                  kernel: str = "conv2d_fwd") -> bool:
    """Whether a problem may use an aligned object of `kernel` (element type `dtype`; None:
    the 16-element assumption): every ALIGN16_ARGS value a multiple of `align_divisor` and
    channels-last strides where promised. Pointers must also be 16-byte aligned (the caller
    checks its addresses)."""
    if channels_last and not (args["sxc"] == 1 and args["swc"] == 1 and args["syk"] == 1):
        return False
    divisor = align_divisor(dtype, channels_last, kernel)
    if KERNELS[kernel].get("few_channels"):
        return kernel in FEW_ALIGN_ARGS and dtype in FEW_ALIGN_TYPES and \
            all(int(args[a]) % divisor == 0 for a in FEW_ALIGN_ARGS[kernel])
    if KERNELS[kernel].get("packed"):
        return all(int(args[a]) % (divisor // part) == 0
                   for a, part in PACKED_ALIGN_ARGS[channels_last].items())
    return all(int(args[a]) % divisor == 0 for a in ALIGN16_ARGS[channels_last])


def fits_int32(sizes: Mapping[str, int]) -> bool:
    """Whether 32-bit offsets hold: x, w and y each below 2**31 elements. A SPLIT_K > 1 launch
    also needs its workspace (workspace_bytes / 4) below 2**31 elements."""
    z = sizes
    g = z["G"]
    elems = (z["N"] * g * z["C"] * z["H"] * z["W"], g * z["K"] * z["C"] * z["R"] * z["S"],
             z["N"] * g * z["K"] * z["P"] * z["Q"])
    return max(elems) < 2**31


def conv_args(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
              ) -> dict[str, int]:
    """The i32 arguments of CONV_ARGS from sizes (N C H W K P Q R S G stride_h stride_w pad_h
    pad_w dil_h dil_w) and element strides of x (n,c,h,w), w (k,c,r,s), y (n,k,h,w)."""
    out = {k: int(sizes[k]) for k in ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "G",
                                      "stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}
    for t, names in (("x", ("sxn", "sxc", "sxh", "sxw")), ("w", ("swk", "swc", "swr", "sws")),
                     ("y", ("syn", "syk", "syh", "syw"))):
        for name, v in zip(names, strides[t], strict=True):
            out[name] = int(v)
    return out


def default_config(kernel: str, dtype: str) -> dict[str, int]:
    """A configuration that is legal everywhere (the fallback before tuning); a packed
    kernel's channels-last tile at two stages."""
    del dtype
    if KERNELS[kernel].get("packed"):
        return {**PACKED_TILES[(KERNELS[kernel]["direction"], True)], "num_stages": 2}
    return {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1,
            "num_warps": 4, "num_stages": 2}


def arg_list(kernel: str) -> tuple[tuple[str, str], ...]:
    """The (name, kind) argument list of a kernel."""
    return {"REDUCE_ARGS": REDUCE_ARGS, "TRANSPOSE_ARGS": TRANSPOSE_ARGS}.get(
        KERNELS[kernel]["args"], CONV_ARGS)


def transpose_tile(r: int, s: int, element_bytes: int) -> tuple[int, int]:
    """(BLOCK_R, BLOCK_S) of `transpose_021` over a [b][r][s] tensor of elements of
    `element_bytes` (TRANSPOSE_TILES): tall for few pixels, wide for few rows; otherwise
    square in 32-bit types, and in 16-bit ones wide up to TRANSPOSE_NARROW rows, else tall."""
    square, tall, wide = TRANSPOSE_TILES
    if s <= TRANSPOSE_THIN and s <= r:
        return tall
    if r <= TRANSPOSE_THIN:
        return wide
    if element_bytes >= 4:
        return square
    return wide if r <= TRANSPOSE_NARROW and r < s else tall


def transpose_is_identity(r: int, s: int) -> bool:
    """Whether a packed [b][r][s] tensor and its [b][s][r] transpose are the same bytes."""
    return r == 1 or s == 1


def transpose_fits(b: int, r: int, s: int, element_bytes: int, padded_b: int | None = None,
                   padded_r: int | None = None) -> bool:
    """Whether `transpose_021` takes a packed [b][r][s] tensor and its [b][s][r] transpose,
    or its [padded_b][s][padded_r] padded copy (a Via solver copies a tensor one way and its
    output back the other): grid limits with the tile each way takes, 32-bit offsets."""
    pb, pr = padded_b or b, padded_r or r

    def rows_fit(r: int, s: int) -> bool:
        return cdiv(r, transpose_tile(r, s, element_bytes)[0]) <= 65535

    return 0 < b <= pb <= 65535 and 0 < r <= pr and s > 0 and pb * pr * s < 2**31 and \
        rows_fit(pr, s) and rows_fit(s, pr)


#: The SPLIT_K constexpr of the one object per tile that serves every split above 1: its
#: kernels read the parts from the grid (`conv_triton_common.part_range`), so a package holds
#: two objects per tile (SPLIT_K 1 and this) however many splits its records name.
SPLIT_OBJECT = 2


def split_object(split: int) -> int:
    """The SPLIT_K constexpr of the object a SPLIT_K = `split` launch runs: 1, or SPLIT_OBJECT
    for every split."""
    return 1 if split <= 1 else SPLIT_OBJECT


def triton_signature(kernel: str, dtype: str, config: Mapping[str, int],
                     channels_last: bool = False, precision: str = "ieee",
                     ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) for `triton.compiler.ASTSource` of one configuration: pointer
    types from the element type, i32 sizes, and the constexpr values. num_warps and
    num_stages are compile options, not constexprs."""
    values: dict[str, Any] = {
        "BLOCK_M": config.get("BLOCK_M"), "BLOCK_N": config.get("BLOCK_N"),
        "BLOCK_K": config.get("BLOCK_K"), "GROUP_M": config.get("GROUP_M", 8),
        "SPLIT_K": split_object(int(config.get("SPLIT_K", 1))),
        "CHANNELS_LAST": int(channels_last),
        "PRECISION": precision, "BLOCK": config.get("BLOCK", REDUCE_BLOCK),
        "PARTS": config.get("PARTS", 1),
        "BLOCK_R": config.get("BLOCK_R"), "BLOCK_S": config.get("BLOCK_S"),
    }
    return typed_signature(arg_list(kernel), dtype, values)


def typed_signature(args: tuple[tuple[str, str], ...], dtype: str, values: Mapping[str, Any]
                    ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of an argument list: "ptr" arguments point to the element type,
    "ptr_fp32" ones to FP32, "i32" ones are 32-bit integers, and each "constexpr" takes its
    value from `values`. The kernel files' specs share it."""
    sig: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for name, kind in args:
        if kind == "constexpr":
            sig[name] = "constexpr"
            constexprs[name] = values[name]
        else:
            sig[name] = {"ptr": f"*{ELEMENT_TYPES[dtype]}", "ptr_fp32": "*fp32",
                         "i32": "i32"}[kind]
    return sig, constexprs


def align16_variants(kernel: str, channels_last: bool | None = None, dtype: str | None = None
                     ) -> tuple[bool, ...]:
    """The align16 settings a kernel's objects of element type `dtype` are built with: both,
    or only the generic one for a packed kernel in NCHW (`channels_last` False) and a
    few-channel one but the channels-last FEW_ALIGN_TYPES objects of FEW_ALIGN_ARGS: their
    problems never meet the assumption (fewer than 16 channels a group)."""
    if KERNELS[kernel].get("few_channels"):
        return (True, False) if channels_last and kernel in FEW_ALIGN_ARGS and \
            dtype in FEW_ALIGN_TYPES else (False,)
    if KERNELS[kernel].get("packed") and channels_last is False:
        return (False,)
    return (True, False)


def align16_args(kernel: str, channels_last: bool) -> tuple[str, ...]:
    """Arguments an align16 object assumes multiples of 16 (pointers: 16-byte aligned)."""
    names = [n for n, k in arg_list(kernel) if k.startswith("ptr")]
    if KERNELS[kernel].get("few_channels"):
        names += list(FEW_ALIGN_ARGS.get(kernel, ()) if channels_last else ())
    elif KERNELS[kernel].get("packed"):
        names += list(PACKED_ALIGN_ARGS[channels_last])
    elif KERNELS[kernel]["args"] == "CONV_ARGS":
        names += list(ALIGN16_ARGS[channels_last])
    return tuple(names)
