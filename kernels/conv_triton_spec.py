"""What a launch of the Triton convolution kernels (kernels/conv_triton.py) needs, as plain data.

This module imports nothing but the standard library, so the runtime, which never imports Triton,
can read it. `conv_triton.py` re-exports everything here.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

#: The i32 arguments of the convolution kernels in three groups: sizes, geometry and the
#: strides of x, w and y. Each group is one tuple argument of the kernels (Triton passes a
#: tuple's members as separate kernel parameters, in order); launches, kdb options and spec
#: tables name the members alone (`compiler.triton` builds the tuples when it compiles).
CONV_TUPLES: dict[str, tuple[str, ...]] = {
    "dims": ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "G"),
    "conv": ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w"),
    "strides": ("sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws", "syn", "syk", "syh",
                "syw"),
}
#: The argument list shared by the six convolution kernels: (name, kind). Kinds: "ptr" (a
#: pointer to the tensor's element type; "ptr_fp32" always FP32), "i32", "constexpr".
CONV_ARGS: tuple[tuple[str, str], ...] = (
    ("x_ptr", "ptr"), ("w_ptr", "ptr"), ("y_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
    *((name, "i32") for names in CONV_TUPLES.values() for name in names),
    ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"),
    ("GROUP_M", "constexpr"), ("SPLIT_K", "constexpr"), ("CHANNELS_LAST", "constexpr"),
    ("PRECISION", "constexpr"),
)

#: `conv2d_bwd_weight_reduce`: sums SPLIT_K FP32 partials ([SPLIT_K][TOTAL], contiguous) into a
#: 4-D output of any strides and the output's element type; TOTAL = I0*C*R*S with the output's
#: dims named (i0, C, R, S) in the partials' order: w (G*K, C, R, S), y (N, G*K, P, Q) or, after
#: a channels-last object, (N, P, Q, G*K), x (N, G*C, H, W) or (N, H, W, G*C). The values come
#: from `reduce_args`. Grid: (cdiv(TOTAL, BLOCK),).
REDUCE_ARGS: tuple[tuple[str, str], ...] = (
    ("ws_ptr", "ptr_fp32"), ("w_ptr", "ptr"),
    ("TOTAL", "i32"), ("C", "i32"), ("R", "i32"), ("S", "i32"),
    ("swk", "i32"), ("swc", "i32"), ("swr", "i32"), ("sws", "i32"),
    ("SPLIT_K", "i32"), ("BLOCK", "constexpr"),
)
#: 256 values a program on 2 warps: small outputs (batch 1) still spread over many SMs
#: (bench/reduce_kernel.py: 2.1 us against 2.6 at 1024 on 4 warps for 25k values on an H100).
REDUCE_BLOCK = 256
REDUCE_WARPS = 2
#: Kernels that run no matrix instruction by design (a sum of partials, a transpose): a
#: matrix-core target's object of one is right without v_mfma/v_wmma (builder/codeobject.py).
NO_MATRIX_KERNELS = frozenset({"conv2d_bwd_weight_reduce", "transpose_021"})

#: `transpose_021`: [B][R][S] -> [B][S][R] in the element type (NCHW <-> NHWC activations,
#: KCRS <-> KRSC weights) for the solvers that compute an NCHW problem with the NHWC kernels
#: (`VIA_NHWC`), the source's rows SRC_S apart and the destination [DST_B][S][DST_R], zero
#: beyond B and R (a channel-padded NHWC copy, or one read back: SRC_S the padded channels).
#: Grid: `grid` over the destination (sizes B = DST_B, R = DST_R); tile: `transpose_tile`, one
#: object per tile of TRANSPOSE_TILES. A tensor whose R or S is 1 and that no padding changes
#: is its own transpose: nothing runs.
TRANSPOSE_ARGS: tuple[tuple[str, str], ...] = (
    ("src_ptr", "ptr"), ("dst_ptr", "ptr"), ("B", "i32"), ("R", "i32"), ("S", "i32"),
    ("SRC_S", "i32"), ("DST_B", "i32"), ("DST_R", "i32"),
    ("BLOCK_R", "constexpr"), ("BLOCK_S", "constexpr"),
)
#: (BLOCK_R, BLOCK_S): square, tall (few pixels per row: a 3x3 filter's 9 taps per row of KCRS
#: weights) and wide (few rows: 3 input channels). `transpose_tile` picks one by shape and
#: element size, as measured on the H100 over the 36 tensors the Via solvers transpose on
#: ResNet-50 at batch 32 (bench/transpose.py, bench/results/transpose_h100.json): the picked
#: tile's time over the fastest tile's, geomean 1.011 in FP16 and 1.029 in FP32, where the
#: square tile alone took 1.475 and 1.349 (up to 5.4x and 5.6x: on 3x3 weights and the first
#: layer's 3x224x224 input).
TRANSPOSE_TILES: tuple[tuple[int, int], ...] = ((64, 64), (128, 16), (16, 128))
TRANSPOSE_THIN = 16  # R or S at most this: the tall or wide tile
TRANSPOSE_NARROW = 64  # 16-bit: R at most this, and below S, takes the wide tile
TRANSPOSE_WARPS = 4

#: i32 arguments that an "align16" object assumes to be multiples of 16 (8 for the 16-bit
#: channels-last implicit GEMM objects: `align_divisor`) besides the pointers, by CHANNELS_LAST.
#: Channels-last: the channel counts and every stride but the unit channel stride (this is
#: what lets loads along channels be 16-byte vectors). Otherwise the channel counts alone
#: (masks along channels then hold for whole vectors).
ALIGN16_ARGS: dict[bool, tuple[str, ...]] = {
    True: ("C", "K", "sxn", "sxh", "sxw", "swk", "swr", "sws", "syn", "syh", "syw"),
    False: ("C", "K"),
}

#: What the packed kernels' aligned objects assume instead, as a fraction of `align_divisor`
#: (channels-last 16-bit: 8): the activations' strides whole multiples of it, a group's channel
#: and filter counts and the weights' strides multiples of half of it (4 a group meets that).
#: The kernels' vector path (`conv_triton_packed._dense`) starts each tile at a multiple of its
#: width and bounds it by sxw and syw, so its activation loads and stores are 16-byte vectors;
#: the weights' block-diagonal loads then gather 4 at a time.
PACKED_ALIGN_ARGS: dict[bool, dict[str, int]] = {
    True: {"sxn": 1, "sxh": 1, "sxw": 1, "syn": 1, "syh": 1, "syw": 1, "C": 2, "K": 2,
           "swk": 2, "swr": 2, "sws": 2},
    False: {"C": 1, "K": 1}}

#: Triton signature type of an element type (the "ptr" kind).
ELEMENT_TYPES = {"FP16": "fp16", "BF16": "bf16", "FP32": "fp32"}
ELEMENT_BYTES = {"FP16": 2, "BF16": 2, "FP32": 4}

#: Per kernel: function name in conv_triton.py, direction it computes, tensors it reads/writes,
#: which tunables matter, how its grid is computed (see `grid`), and when it applies.
#: "few_channels": `kernel_for` picks it for C < 16 alone, which never meets align16 (C is one
#: of ALIGN16_ARGS), so no align16 object of it is ever launched (`align16_variants`).
KERNELS: dict[str, dict[str, Any]] = {
    "conv2d_fwd": {
        "direction": "F", "reads": ("x", "w"), "writes": ("y",), "args": "CONV_ARGS",
        "gemm": "M = N*P*Q output pixels, N = K filters, reduction = R*S taps (outside) x C "
                "channels (inside, BLOCK_K at a time)",
        "grid": ("cdiv(N*P*Q, BLOCK_M) * cdiv(K, BLOCK_N)", "G", "SPLIT_K"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                     "num_stages"),
        "fixed": {},
        "workspace": "SPLIT_K > 1 (for few output tiles, e.g. 7x7 outputs): SPLIT_K*N*G*K*P*Q*4 "
                     "bytes of FP32 partials at ws_ptr, then conv2d_bwd_weight_reduce over y "
                     "(reduce_args); SPLIT_K == 1: none",
        "applies": "any problem; channels below BLOCK_K waste MACs (use conv2d_fwd_smallc)",
    },
    "conv2d_fwd_smallc": {
        "few_channels": True,
        "direction": "F", "reads": ("x", "w"), "writes": ("y",), "args": "CONV_ARGS",
        "gemm": "M = N*P*Q, N = K, reduction = R filter rows (outside) x S*C flattened "
                "(inside, BLOCK_K at a time): for few input channels (the first layer, C=3 "
                "7x7: 21 of 32 per row)",
        "grid": ("cdiv(N*P*Q, BLOCK_M) * cdiv(K, BLOCK_N)", "G", "1"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"),
        "fixed": {"SPLIT_K": 1},
        "applies": "any problem; faster than conv2d_fwd where C < 16",
    },
    "conv2d_bwd_data": {
        "direction": "B", "reads": ("y", "w"), "writes": ("x",), "args": "CONV_ARGS",
        "gemm": "per stride phase (h % stride_h, w % stride_w): M = N*cdiv(H,stride_h)*"
                "cdiv(W,stride_w) input pixels, N = C, reduction = the taps that reach the phase "
                "(outside) x K (inside); no MAC is spent on taps that miss",
        "grid": ("cdiv(N*cdiv(H,stride_h)*cdiv(W,stride_w), BLOCK_M) * cdiv(C, BLOCK_N)", "G",
                 "stride_h*stride_w*SPLIT_K"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                     "num_stages"),
        "fixed": {},
        "workspace": "SPLIT_K > 1: SPLIT_K*N*G*C*H*W*4 bytes of FP32 partials at ws_ptr, then "
                     "conv2d_bwd_weight_reduce over x (reduce_args); SPLIT_K == 1: none. "
                     "SPLIT_K > 1 only where split_applies() (every stride phase has a tap: "
                     "not 1x1 stride 2, whose split variant gave wrong results on the H100)",
        "applies": "any problem; writes every element of x (zeros where no tap reaches); "
                   "BLOCK_N = 16 suits few input channels. Groups: program axis 1, the "
                   "group's filters (w is (G*K, C, R, S)) at g*K; checked under Triton's "
                   "interpreter (tests/integration/test_conv_triton_grouped_interpret.py)",
    },
    "conv2d_bwd_data_smallc": {
        "few_channels": True,
        "direction": "B", "reads": ("y", "w"), "writes": ("x",), "args": "CONV_ARGS",
        "gemm": "all stride phases at once: M = N*cdiv(H,stride_h)*cdiv(W,stride_w), N = "
                "stride_h*stride_w*C (phase, channel), reduction = the offsets of dy "
                "(outside, cdiv-ish R/stride_h x S/stride_w of them) x K (inside)",
        "grid": ("cdiv(N*cdiv(H,stride_h)*cdiv(W,stride_w), BLOCK_M) * "
                 "cdiv(stride_h*stride_w*C, BLOCK_N)", "G", "1"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"),
        "fixed": {"SPLIT_K": 1},
        "applies": "dilation 1; faster than conv2d_bwd_data where C < 16 and the stride is "
                   "above 1 (kernel_for), where one phase at a time fills few of a tile's "
                   "columns. Writes every element of x",
    },
    "conv2d_bwd_weight": {
        "direction": "W", "reads": ("x", "y"), "writes": ("w", "ws"), "args": "CONV_ARGS",
        "gemm": "per tap (r, s): M = K, N = C, reduction = N*P*Q pixels, cut in SPLIT_K parts",
        "grid": ("cdiv(K, BLOCK_M) * cdiv(C, BLOCK_N)", "G*R*S", "SPLIT_K"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                     "num_stages"),
        "fixed": {},
        "workspace": "SPLIT_K > 1: SPLIT_K*G*K*C*R*S*4 bytes of FP32 at ws_ptr (need not be "
                     "zeroed), then conv2d_bwd_weight_reduce; SPLIT_K == 1: none (ws_ptr unused, "
                     "pass any pointer)",
        "applies": "any problem with G*R*S <= 65535",
    },
    "conv2d_bwd_weight_smallc": {
        "few_channels": True,
        "direction": "W", "reads": ("x", "y"), "writes": ("w", "ws"), "args": "CONV_ARGS",
        "gemm": "per filter row r: M = K, N = S*C flattened (a whole row of taps per "
                "program), reduction = N*P*Q pixels cut in SPLIT_K parts: for few input "
                "channels (the first layer: 21 of 32 columns)",
        "grid": ("cdiv(K, BLOCK_M) * cdiv(S*C, BLOCK_N)", "G*R", "SPLIT_K"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                     "num_stages"),
        "fixed": {},
        "workspace": "as conv2d_bwd_weight (same partial layout, same reduce kernel)",
        "applies": "any problem with G*R <= 65535; faster than conv2d_bwd_weight where C < 16",
    },
    # Grouped problems of fewer than 16 channels and filters a group (conv_triton_packed.py):
    # a tile holds several groups, its weight tile block-diagonal (`packed_groups`).
    "conv2d_fwd_packed": {
        "packed": True,
        "direction": "F", "reads": ("x", "w"), "writes": ("y",), "args": "CONV_ARGS",
        "gemm": "M = N*P*Q, N = the filters of GB = BLOCK_N // K groups, reduction = taps x "
                "their GB*C channels (a block-diagonal weight tile)",
        "grid": ("cdiv(N*P*Q, BLOCK_M) * cdiv(G, GB)", "1", "1"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"),
        "fixed": {"SPLIT_K": 1},
        "applies": "groups of 1-15 channels and filters (kernel_for)",
    },
    "conv2d_bwd_data_packed": {
        "packed": True,
        "direction": "B", "reads": ("y", "w"), "writes": ("x",), "args": "CONV_ARGS",
        "gemm": "per stride phase: M = N*cdiv(H,stride_h)*cdiv(W,stride_w), N = the channels "
                "of GB = BLOCK_N // C groups, reduction = the phase's taps x their GB*K filters",
        "grid": ("cdiv(N*cdiv(H,stride_h)*cdiv(W,stride_w), BLOCK_M) * cdiv(G, GB)", "1",
                 "stride_h*stride_w"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"),
        "fixed": {"SPLIT_K": 1},
        "applies": "groups of 1-15 channels and filters (kernel_for); writes every element of x",
    },
    "conv2d_bwd_weight_packed": {
        "packed": True,
        "direction": "W", "reads": ("x", "y"), "writes": ("w", "ws"), "args": "CONV_ARGS",
        "gemm": "per tap: M = the filters of GB groups, N = their channels, GB = min(BLOCK_M "
                "// K, BLOCK_N // C); reduction = N*P*Q pixels cut in SPLIT_K parts; the "
                "diagonal blocks are kept",
        "grid": ("cdiv(G, GB)", "R*S", "SPLIT_K"),
        "tunables": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps",
                     "num_stages"),
        "fixed": {},
        "workspace": "as conv2d_bwd_weight (same partial layout, same reduce kernel)",
        "applies": "groups of 1-15 channels and filters (kernel_for), R*S <= 65535",
    },
    "conv2d_bwd_weight_reduce": {
        "direction": "W", "reads": ("ws",), "writes": ("w",), "args": "REDUCE_ARGS",
        "grid": ("cdiv(G*K*C*R*S, BLOCK)", "1", "1"),
        "tunables": (), "fixed": {"BLOCK": REDUCE_BLOCK, "num_warps": REDUCE_WARPS,
                                  "num_stages": 1},
        "applies": "after any kernel launched with SPLIT_K > 1, its SPLIT_K a run-time argument "
                   "(one object per element type); its other i32 arguments come from "
                   "reduce_args (the name is kept for compatibility: it reduces the partials "
                   "of every direction)",
    },
    "transpose_021": {
        "direction": "", "reads": ("src",), "writes": ("dst",), "args": "TRANSPOSE_ARGS",
        "grid": ("cdiv(S, BLOCK_S)", "cdiv(DST_R, BLOCK_R)", "DST_B"),
        "tunables": (), "fixed": {"num_warps": TRANSPOSE_WARPS, "num_stages": 1},
        "applies": "tensors with R or S above 1 or padded (DST_B, DST_R above B, R), DST_B "
                   "and cdiv(DST_R, BLOCK_R) at most 65535, either side below 2**31 "
                   "elements; BLOCK_R x BLOCK_S from transpose_tile",
    },
}

#: Legal tunable values and the memory a configuration may use, per target kind. "smem" is the
#: most dynamic shared memory / LDS one workgroup may take (bytes); `shared_bytes` counts
#: num_stages operand tiles (what Triton 3.6 allocates for sm90, an upper bound elsewhere).
#: num_stages 1 on sm90 is for 32-bit operands that are not K-major (TF32 in NCHW backward
#: data and forward, NHWC backward weights): wgmma reads 32-bit operands K-major only, and
#: Triton's cp.async pipeline copies such a tile into shared memory 4 bytes at a time, while
#: one stage loads it into registers 16 bytes at a time and stores it transposed. On the H100,
#: over the 22 ResNet-50 layers with C >= 64 at batch 32, the fastest one-stage tile took a
#: geomean 0.68x of the fastest pipelined one in TF32-B-NCHW, 0.78x in TF32-F-NCHW, 0.76x in
#: TF32-W-NHWC, 0.89-0.92x in TF32-B-NHWC and -W-NCHW, 1.10x in TF32-F-NHWC
#: (bench/results/triton_kernels_tf32_h100.json) and 0.96x in IEEE FP32-F-NCHW
#: (triton_kernels_fp32_f_nchw_h100.json); tests/unit/test_conv_triton_spec.py reads them.
#: "MMA" picks the matrix instruction where a kind has two: 0 is the target's own (wgmma on
#: sm90), 2 the previous generation's mma.sync (Triton's DISABLE_MMA_V3), which takes its
#: operands from registers whatever their order in memory. On the H100, over the same 22
#: layers, the fastest mma.sync tile took a geomean 0.50x of the fastest wgmma one (one stage
#: included) in TF32-W-NHWC and 0.66x in TF32-B-NHWC, and 1.11-1.47x in the other TF32 cases
#: (bench/results/triton_kernels_tf32_mma_h100.json). Only FP32 (TF32) configurations offer it.
#: Kinds whose FP32 problems also get the three-TF32-product solvers (PRECISION "tf32x3",
#: FP32 accuracy on TF32 tensor cores): measured on the H100 alone
#: (bench/results/triton_kernels_fp32x3_h100.json); Triton compiles it for every NVIDIA kind,
#: and AMD's backend has no such precision.
TF32X3_KINDS = ("sm90",)
_SPLITS = (1, 2, 4, 8, 16, 32, 64)
_N = (16, 32, 64, 128, 256)
TARGET_KINDS: dict[str, dict[str, Any]] = {
    "sm90": {"smem": 232448, "warp": 32, "BLOCK_M": (64, 128, 256), "BLOCK_N": _N,
             "BLOCK_K": (16, 32, 64, 128), "num_warps": (4, 8), "num_stages": (1, 2, 3, 4, 5),
             "GROUP_M": (1, 8), "SPLIT_K": _SPLITS, "MMA": (0, 2)},
    # sm86 and sm89 run sm80's objects (dbs/targets.toml) and allow 99 KiB of shared memory
    # a block where the A100 allows 163: the kind takes the smaller.
    "sm80": {"smem": 101376, "warp": 32, "BLOCK_M": (32, 64, 128, 256), "BLOCK_N": _N,
             "BLOCK_K": (16, 32, 64), "num_warps": (4, 8), "num_stages": (2, 3, 4),
             "GROUP_M": (1, 8), "SPLIT_K": _SPLITS},
    "sm100": {"smem": 232448, "warp": 32, "BLOCK_M": (64, 128, 256), "BLOCK_N": _N,
              "BLOCK_K": (16, 32, 64, 128), "num_warps": (4, 8), "num_stages": (2, 3, 4),
              "GROUP_M": (1, 8), "SPLIT_K": _SPLITS},
    "sm120": {"smem": 101376, "warp": 32, "BLOCK_M": (32, 64, 128), "BLOCK_N": _N[:4],
              "BLOCK_K": (16, 32, 64), "num_warps": (4, 8), "num_stages": (2, 3),
              "GROUP_M": (1, 8), "SPLIT_K": _SPLITS},
    # CDNA: gfx90a/gfx942 64 KiB LDS, gfx950 160 KiB; wave64.
    "cdna": {"smem": 65536, "warp": 64, "BLOCK_M": (32, 64, 128, 256), "BLOCK_N": _N,
             "BLOCK_K": (16, 32, 64), "num_warps": (4, 8), "num_stages": (1, 2),
             "GROUP_M": (1, 8), "SPLIT_K": _SPLITS},
    "cdna4": {"smem": 163840, "warp": 64, "BLOCK_M": (32, 64, 128, 256), "BLOCK_N": _N,
              "BLOCK_K": (16, 32, 64, 128), "num_warps": (4, 8), "num_stages": (1, 2),
              "GROUP_M": (1, 8), "SPLIT_K": _SPLITS},
    # RDNA 3/3.5/4 (gfx11xx, gfx12xx): 64 KiB LDS per workgroup, wave32, v_wmma. At 64
    # sums a lane (128x64 on 4 warps, 128x128 on 8) the 2-D and 3-D objects spilled up to
    # 940 and 1,312 bytes a lane to scratch (bench/results/full_build-2cpu.json, the build's
    # `resources`, tree c14ba8a; 304 and 252 since); ACC_PER_LANE caps the tile.
    "rdna": {"smem": 65536, "warp": 32, "BLOCK_M": (32, 64, 128), "BLOCK_N": _N[:4],
             "BLOCK_K": (16, 32, 64), "num_warps": (4, 8), "num_stages": (1, 2),
             "GROUP_M": (1, 8), "SPLIT_K": _SPLITS, "ACC_PER_LANE": 32},
}


def target_kind(target: str) -> str:
    """The TARGET_KINDS key of a target name: "sm90", "sm_90a", "gfx942", "gfx1100"..."""
    t = target.lower().replace("_", "").rstrip("a")
    if t.startswith("sm"):
        cc = int(t[2:])
        return "sm90" if cc == 90 else "sm100" if cc in (100, 101, 103) else \
            "sm120" if cc >= 120 else "sm80"
    if t.startswith("gfx"):
        if t.startswith("gfx95"):
            return "cdna4"
        if t.startswith("gfx9"):
            return "cdna"
        if t.startswith(("gfx11", "gfx12")):
            return "rdna"
    raise ValueError(f"no tensor-core kernel kind for target {target!r}")


def shared_bytes(config: Mapping[str, int], dtype: str) -> int:
    """Estimated shared memory / LDS of a configuration: the operand tiles in flight."""
    tile = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * ELEMENT_BYTES[dtype]
    return max(1, int(config["num_stages"])) * tile


def is_legal(config: Mapping[str, int], dtype: str, kind: str, kernel: str = "conv2d_fwd") -> bool:
    """Whether a configuration is in the legal space of a target kind for an element type."""
    space = TARGET_KINDS[kind]
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "GROUP_M"):
        if config.get(key) not in space[key]:
            return False
    split = config.get("SPLIT_K", 1)
    if split != 1 and (kernel not in OUTPUT_OF or split not in space["SPLIT_K"]):
        return False
    mma = config.get("MMA", 0)
    if mma != 0 and (dtype != "FP32" or mma not in space.get("MMA", (0,))):
        return False
    if dtype == "FP32" and config["BLOCK_K"] > 64:
        return False
    if "ACC_PER_LANE" in space and accumulators_per_lane(config, kind) > space["ACC_PER_LANE"]:
        return False
    return bool(shared_bytes(config, dtype) <= space["smem"])


def accumulators_per_lane(config: Mapping[str, int], kind: str) -> int:
    """The FP32 sums of a BLOCK_M x BLOCK_N tile that each lane of its warps holds."""
    lanes = int(config["num_warps"]) * int(TARGET_KINDS[kind]["warp"])
    return -(-int(config["BLOCK_M"]) * int(config["BLOCK_N"]) // lanes)


def legal_space(kind: str, dtype: str, kernel: str = "conv2d_fwd") -> list[dict[str, int]]:
    """Every legal configuration of a kernel on a target kind (the tuning search space)."""
    space = TARGET_KINDS[kind]
    splits = space["SPLIT_K"] if kernel in OUTPUT_OF else (1,)
    mmas = space.get("MMA", (0,)) if dtype == "FP32" else (0,)
    out = []
    for bm in space["BLOCK_M"]:
        for bn in space["BLOCK_N"]:
            for bk in space["BLOCK_K"]:
                for nw in space["num_warps"]:
                    for ns in space["num_stages"]:
                        for gm in space["GROUP_M"]:
                            for sk in splits:
                                for mma in mmas:
                                    c = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                         "num_warps": nw, "num_stages": ns, "GROUP_M": gm,
                                         "SPLIT_K": sk}
                                    if mma:
                                        c["MMA"] = mma
                                    if is_legal(c, dtype, kind, kernel):
                                        out.append(c)
    return out


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def grid(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> tuple[int, int, int]:
    """Launch grid (x, y, z) of a kernel. `sizes`: N C H W K P Q R S G stride_h stride_w
    (C, K per group), `config`: the constexprs (BLOCK_M, BLOCK_N, SPLIT_K). x counts the
    BLOCK_M x BLOCK_N tiles of the kernel's GEMM (`gemm_dims`)."""
    z = sizes
    if kernel == "conv2d_bwd_weight_reduce":
        return cdiv(z["G"] * z["K"] * z["C"] * z["R"] * z["S"], REDUCE_BLOCK), 1, 1
    if kernel == "transpose_021":
        return cdiv(z["S"], config["BLOCK_S"]), cdiv(z["R"], config["BLOCK_R"]), z["B"]
    split = int(config.get("SPLIT_K", 1))
    if KERNELS[kernel].get("packed"):
        gb = packed_groups(kernel, z, config)
        if kernel == "conv2d_bwd_weight_packed":
            return cdiv(z["G"], gb), z["R"] * z["S"], split
        m = gemm_dims(kernel, z)[0]
        return cdiv(m, config["BLOCK_M"]) * cdiv(z["G"], gb), 1, \
            (z["stride_h"] * z["stride_w"] if kernel == "conv2d_bwd_data_packed" else 1)
    m, n, _ = gemm_dims(kernel, z)
    tiles = cdiv(m, config.get("BLOCK_M", 0)) * cdiv(n, config.get("BLOCK_N", 0))
    if kernel == "conv2d_fwd":
        return tiles, z["G"], split
    if kernel == "conv2d_fwd_smallc":
        return tiles, z["G"], 1
    if kernel == "conv2d_bwd_data":
        return tiles, z["G"], z["stride_h"] * z["stride_w"] * split
    if kernel == "conv2d_bwd_data_smallc":
        return tiles, z["G"], 1
    if kernel == "conv2d_bwd_weight":
        return tiles, z["G"] * z["R"] * z["S"], split
    return tiles, z["G"] * z["R"], split  # conv2d_bwd_weight_smallc (gemm_dims rejected the rest)


def packed_groups(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """GB, the groups one tile of a packed kernel holds: BLOCK_N // K (forward), BLOCK_N // C
    (backward data), min(BLOCK_M // K, BLOCK_N // C) (backward weights); at least 1."""
    z, bm, bn = sizes, int(config["BLOCK_M"]), int(config["BLOCK_N"])
    gb = bn // max(1, z["K"]) if kernel == "conv2d_fwd_packed" else \
        bn // max(1, z["C"]) if kernel == "conv2d_bwd_data_packed" else \
        min(bm // max(1, z["K"]), bn // max(1, z["C"]))
    return max(1, gb)


def gemm_dims(kernel: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(M, N, inner) of a kernel's implicit GEMM: the rows and columns its programs tile by
    BLOCK_M x BLOCK_N, and the length of the loop it steps by BLOCK_K (per filter tap; per
    filter row over (s, c) in the few-channel forward; backward weights' N per filter row too);
    backward data per stride phase, or all phases at once for few channels."""
    z = sizes
    if kernel == "conv2d_fwd":
        return z["N"] * z["P"] * z["Q"], z["K"], z["C"]
    if kernel == "conv2d_fwd_smallc":
        return z["N"] * z["P"] * z["Q"], z["K"], z["S"] * z["C"]
    if kernel == "conv2d_bwd_data":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["C"], z["K"]
    if kernel == "conv2d_bwd_data_smallc":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["stride_h"] * z["stride_w"] * z["C"], z["K"]
    if kernel == "conv2d_bwd_weight":
        return z["K"], z["C"], z["N"] * z["P"] * z["Q"]
    if kernel == "conv2d_bwd_weight_smallc":
        return z["K"], z["S"] * z["C"], z["N"] * z["P"] * z["Q"]
    # Packed: the useful GEMM of one group (tile_efficiency counts its blocks' share).
    if kernel == "conv2d_fwd_packed":
        return z["N"] * z["P"] * z["Q"], z["K"], z["C"]
    if kernel == "conv2d_bwd_data_packed":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["C"], z["K"]
    if kernel == "conv2d_bwd_weight_packed":
        return z["K"], z["C"], z["N"] * z["P"] * z["Q"]
    raise KeyError(kernel)


def tile_efficiency(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real: how much of each BLOCK_M x BLOCK_N
    tile and each BLOCK_K step falls inside the problem (a cost-model input)."""
    if KERNELS[kernel].get("packed"):  # GB diagonal blocks of a GB x GB block tile
        return 1.0 / packed_groups(kernel, sizes, config)
    out = 1.0
    for dim, block in zip(gemm_dims(kernel, sizes),
                          (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]), strict=True):
        dim = max(int(dim), 1)
        out *= dim / (cdiv(dim, int(block)) * int(block))
    return out


#: Which tensor a direction's kernel writes: the reduce kernel's output after a split launch.
OUTPUT_OF = {"conv2d_fwd": "y", "conv2d_bwd_data": "x", "conv2d_bwd_weight": "w",
             "conv2d_bwd_weight_smallc": "w", "conv2d_bwd_weight_packed": "w"}


def split_applies(kernel: str, sizes: Mapping[str, int]) -> bool:
    """Whether SPLIT_K > 1 may be used. Backward data: only where every stride phase receives
    at least one filter tap (stride 1, or stride <= the dilated filter's extent with dilation
    1); its split variant was measured wrong for 1x1 stride-2 problems, where three of the four
    phases have none, and is not used there."""
    if kernel not in OUTPUT_OF:
        return False
    if kernel != "conv2d_bwd_data":
        return True
    z = sizes
    return all(
        all(any((ph + pad - r * dil) % st == 0 for r in range(taps)) for ph in range(st))
        for st, pad, dil, taps in ((z["stride_h"], z["pad_h"], z["dil_h"], z["R"]),
                                   (z["stride_w"], z["pad_w"], z["dil_w"], z["S"])))


def reduce_args(kernel: str, args: Mapping[str, int], channels_last: bool = False
                ) -> dict[str, int]:
    """The i32 arguments of conv2d_bwd_weight_reduce (TOTAL C R S swk swc swr sws) that finish a
    SPLIT_K > 1 launch of `kernel`, from the CONV_ARGS values of the output's tensor (`args`).
    `channels_last`: the launch's object is a CHANNELS_LAST one, whose forward and backward
    data partials are in the output's channels-last memory order ((n, p, q, k), (n, h, w, c));
    the reduce then walks them in that order, so its stores are contiguous too. Its grid is
    (cdiv(TOTAL, REDUCE_BLOCK), 1, 1)."""
    a = args
    out = OUTPUT_OF[kernel]
    if out == "y" and channels_last:
        dims, strides = (a["N"], a["P"], a["Q"], a["G"] * a["K"]), ("syn", "syh", "syw", "syk")
    elif out == "y":
        dims, strides = (a["N"], a["G"] * a["K"], a["P"], a["Q"]), ("syn", "syk", "syh", "syw")
    elif out == "x" and channels_last:
        dims, strides = (a["N"], a["H"], a["W"], a["G"] * a["C"]), ("sxn", "sxh", "sxw", "sxc")
    elif out == "x":
        dims, strides = (a["N"], a["G"] * a["C"], a["H"], a["W"]), ("sxn", "sxc", "sxh", "sxw")
    else:
        dims, strides = (a["G"] * a["K"], a["C"], a["R"], a["S"]), ("swk", "swc", "swr", "sws")
    res = {"TOTAL": dims[0] * dims[1] * dims[2] * dims[3], "C": dims[1], "R": dims[2],
           "S": dims[3]}
    res.update(zip(("swk", "swc", "swr", "sws"), (int(a[k]) for k in strides), strict=True))
    return res


#: Kernels whose reduction a launch may cut in SPLIT_K parts by default (`split_for`): backward
#: weights, whose output (K x C x R x S) has few tiles and whose reduction (every pixel) is long;
#: forward and backward data where their output tiles leave most of the GPU idle (small images,
#: small batches).
SPLIT_BY_DEFAULT = ("conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weight",
                    "conv2d_bwd_weight_smallc", "conv2d_bwd_weight_packed")

#: The fewest BLOCK_K steps each part of a split keeps, per kernel (others: 8).
_MIN_SPLIT_STEPS = {"conv2d_fwd": 4, "conv2d_bwd_data": 4}
#: The largest default split, per kernel (others: 64): forward and backward data reductions
#: (taps x channels) are short, so a package ships their splits up to 16 only.
MAX_SPLIT = {"conv2d_fwd": 16, "conv2d_bwd_data": 16}
#: The waves of programs a default split may fill, per kernel (others: 2). The packed backward
#: weights at twice the two-wave split took less time on 79 of the 104 layer cases of
#: bench/results/grouped_packed_h100.json (its 64x64x64 tile, H100).
SPLIT_WAVES = {"conv2d_bwd_weight_packed": 4}


def reduction_steps(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """BLOCK_K steps of one program's reduction: taps x channel blocks (forward), taps of the
    fullest stride phase x filter blocks (backward data), pixel blocks (backward weights)."""
    z = sizes
    bk = int(config["BLOCK_K"])
    if kernel == "conv2d_fwd":
        return z["R"] * z["S"] * cdiv(z["C"], bk)
    if kernel == "conv2d_bwd_data":
        return cdiv(z["R"], z["stride_h"]) * cdiv(z["S"], z["stride_w"]) * cdiv(z["K"], bk)
    return cdiv(z["N"] * z["P"] * z["Q"], bk)


def filling_split(programs: int, steps: int, sms: int, least: int, most: int, waves: int = 2
                  ) -> int:
    """The split of a reduction of `steps` steps over a launch of `programs` programs that
    fills a GPU of `sms` multiprocessors: doubled from 1 while the launch stays within `waves`
    waves and each part keeps at least `least` steps, at most `most`. The families' split_for
    rules share it."""
    split = 1
    while split < most and programs * split * 2 <= waves * sms and \
            steps // (split * 2) >= least:
        split *= 2
    return split


def split_for(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
              waves: int | None = None, least: int | None = None) -> int:
    """The SPLIT_K that fills a GPU of `sms` multiprocessors (CUs): doubled from 1 while the
    launch stays within two waves of programs (`waves`) and each part keeps at least 8 BLOCK_K
    steps of its reduction (4 for forward and backward data; `least`), at most 64 (MAX_SPLIT);
    1 for kernels not in SPLIT_BY_DEFAULT or problems `split_applies` rejects."""
    if kernel not in SPLIT_BY_DEFAULT or not split_applies(kernel, sizes):
        return 1
    gx, gy, gz = grid(kernel, sizes, {**config, "SPLIT_K": 1})
    tiles = gx * gy * gz
    steps = reduction_steps(kernel, sizes, config)
    return filling_split(tiles, steps, sms,
                         least if least is not None else _MIN_SPLIT_STEPS.get(kernel, 8),
                         MAX_SPLIT.get(kernel, 64),
                         waves if waves is not None else SPLIT_WAVES.get(kernel, 2))


def workspace_bytes(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """FP32 workspace a launch needs (SPLIT_K > 1: the partial sums), else 0."""
    split = int(config.get("SPLIT_K", 1))
    if split == 1 or kernel not in OUTPUT_OF:
        return 0
    z = sizes
    g = z["G"]
    elems = {"y": z["N"] * g * z["K"] * z["P"] * z["Q"], "x": z["N"] * g * z["C"] * z["H"] * z["W"],
             "w": g * z["K"] * z["C"] * z["R"] * z["S"]}[OUTPUT_OF[kernel]]
    return split * elems * 4


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
    meets it, and their loads along a tile's groups' channels are then 16-byte vectors."""
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


#: Grouped problems with fewer channels and fewer filters a group than this take the packed
#: kernels (several groups to a tile).
PACKED_BELOW = 16


def packed(sizes: Mapping[str, int]) -> bool:
    """Whether a problem takes the packed kernels: two or more groups, each of fewer than
    PACKED_BELOW channels and filters, not depthwise (one of each: the depthwise family's, and
    a packed tile would be all but one of its blocks zeros)."""
    if sizes.get("G", 1) < 2:
        return False
    c, k = sizes["C"], sizes["K"]
    return c < PACKED_BELOW and k < PACKED_BELOW and (c, k) != (1, 1)


def kernel_for(direction: str, sizes: Mapping[str, int]) -> str:
    """The main kernel of a direction for a problem: grouped problems of few channels and
    filters a group take the packed kernels (`packed`); otherwise few input channels (C < 16)
    take their own in forward and backward weights, and in backward data with a stride
    (dilation 1)."""
    if packed(sizes):
        return {"F": "conv2d_fwd_packed", "B": "conv2d_bwd_data_packed",
                "W": "conv2d_bwd_weight_packed"}[direction]
    if direction == "F":
        return "conv2d_fwd_smallc" if sizes["C"] < 16 else "conv2d_fwd"
    if direction == "W":
        return "conv2d_bwd_weight_smallc" if sizes["C"] < 16 else "conv2d_bwd_weight"
    if direction == "B" and sizes["C"] < 16 and sizes["stride_h"] * sizes["stride_w"] > 1 \
            and sizes["dil_h"] == sizes["dil_w"] == 1:
        return "conv2d_bwd_data_smallc"
    return {"B": "conv2d_bwd_data"}[direction]


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


def _packed_tile(m: int, n: int, k: int, group_m: int) -> dict[str, int]:
    return {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group_m, "SPLIT_K": 1,
            "num_warps": 4, "num_stages": 3}


#: The packed kernels' tile per direction and layout (NHWC: channels last): the tile of
#: bench/grouped_packed.py's candidates with the least geomean time against cuDNN over the
#: zoo's grouped layers of 4 and 8 channels a group at batch 32 on the H100, FP16 and BF16
#: (bench/results/grouped_packed_h100.json). Three stages where the kind allows them
#: (`packed_tile`): two cost 6-9% in channels-last forward and backward weights there.
PACKED_TILES: dict[tuple[str, bool], dict[str, int]] = {
    ("F", True): _packed_tile(128, 32, 32, 8), ("F", False): _packed_tile(128, 16, 16, 8),
    ("B", True): _packed_tile(128, 32, 32, 8), ("B", False): _packed_tile(128, 16, 16, 8),
    ("W", True): _packed_tile(64, 64, 64, 1), ("W", False): _packed_tile(64, 64, 64, 1),
}


#: Per target kind, what of a packed tile changes there, per direction: RDNA's wave32 objects of
#: the tiles above spilled 75-201 VGPRs to scratch (gfx1100: the channels-last forward and
#: backward data on 4 warps, backward weights at 64x64x64); 8 warps, and backward weights at
#: 64x32x32, spill none (tests/integration/test_conv_triton_compile.py checks every object).
PACKED_KIND_TILES: dict[str, dict[str, dict[str, int]]] = {
    "rdna": {"F": {"num_warps": 8}, "B": {"num_warps": 8},
             "W": {"BLOCK_N": 32, "BLOCK_K": 32}},
}


def packed_tile(kind: str, kernel: str, channels_last: bool) -> dict[str, int]:
    """A packed kernel's tile on a target kind (PACKED_TILES, with the kind's PACKED_KIND_TILES
    changes), at the most stages the kind allows up to the tile's."""
    direction = KERNELS[kernel]["direction"]
    tile = {**PACKED_TILES[(direction, channels_last)],
            **PACKED_KIND_TILES.get(kind, {}).get(direction, {})}
    tile["num_stages"] = min(tile["num_stages"], max(TARGET_KINDS[kind]["num_stages"]))
    return tile


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
        "PRECISION": precision, "BLOCK": REDUCE_BLOCK,
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


def align16_variants(kernel: str, channels_last: bool | None = None) -> tuple[bool, ...]:
    """The align16 settings a kernel's objects are built with: both, or only the generic one
    for a few-channel kernel and for a packed one in NCHW (`channels_last` False): their
    problems never meet the assumption (fewer than 16 channels a group)."""
    if KERNELS[kernel].get("few_channels") or (
            KERNELS[kernel].get("packed") and channels_last is False):
        return (False,)
    return (True, False)


def align16_args(kernel: str, channels_last: bool) -> tuple[str, ...]:
    """Arguments an align16 object assumes multiples of 16 (pointers: 16-byte aligned)."""
    names = [n for n, k in arg_list(kernel) if k.startswith("ptr")]
    if KERNELS[kernel].get("packed"):
        names += list(PACKED_ALIGN_ARGS[channels_last])
    elif KERNELS[kernel]["args"] == "CONV_ARGS":
        names += list(ALIGN16_ARGS[channels_last])
    return tuple(names)


#: Per target kind, the NCHW cases (`<type>-<direction>`, type FP16/BF16/FP32/TF32) that the
#: NHWC kernels compute faster, with the operands transposed into the workspace around them,
#: than the NCHW kernels, each with the fewest filter taps (R*S) it holds for: the Via solvers
#: apply there alone (`via_other_layout`), from VIA_NHWC_MIN_C channels per group up.
#: sm90, on the H100: the NHWC kernels took 0.35-0.67 of the NCHW kernels' time in these cases
#: (geomean over the 23 ResNet-50 layers at batch 32, bench/results/kernels_h100-ec37f22.json),
#: before the transposes; FP32 forward (1.18) and TF32 backward weights (1.82: TF32 tensor cores
#: read 32-bit operands K-major, as the NCHW kernel has them there) stay on the NCHW kernels.
#: With the transposes, against the NCHW kernels: backward (kernels_h100-8f40ce6.json against
#: the ec37f22 run, batch 32) 0.38-0.59 on the 3x3 layers, 0.64-0.68 on the 1x1 layers in FP32
#: but 1.05-1.18 in the others, 1.30 on the first layer (C=3); forward (kernels_h100-b1b1a34-*
#: against kernels_h100-35f27da.json) on the 3x3 layers 0.64 in TF32 (batch 32), 0.71 in FP16
#: and 0.70 in BF16 (batch 64). tests/unit/test_triton_relayout.py checks the table against
#: these files. 1x1 filters: see VIA_NHWC_ONE_TAP.
VIA_NHWC: dict[str, dict[str, int]] = {
    "sm90": {"FP16-F": 2, "FP16-B": 2, "FP16-W": 2, "BF16-F": 2, "BF16-B": 2, "BF16-W": 2,
             "FP32-B": 1, "FP32-W": 1, "TF32-F": 2, "TF32-B": 2},
}
VIA_NHWC_MIN_C = 16
#: Per target kind, NCHW cases whose 1x1 layers (one filter tap) go through the NHWC kernels
#: where the convolution's output (dy in backward) has at most this many pixels per image:
#: there the weights need no transpose (KCRS is KRSC) and the activations are small beside
#: them. sm90, on the H100: the Via solvers' times against the NCHW kernels' in dbs/sm9084's
#: batch-32 records of the 15 ResNet-50 1x1 layers (run 18 in its PROVENANCE.md): backward data
#: at 28x28 and below 0.33-1.05 in FP16 and BF16 (56x56: 1.04-1.60), in TF32 at 14x14 and below
#: 0.63-0.82; backward weights at 14x14 and below 0.49-1.05 (28x28: 0.78-1.11); forward at 7x7
#: 0.73-1.00 (14x14: 0.94-1.24), TF32 forward 0.94-1.08 there: not listed.
VIA_NHWC_ONE_TAP: dict[str, dict[str, int]] = {
    "sm90": {"FP16-F": 49, "BF16-F": 49, "FP16-B": 784, "BF16-B": 784, "TF32-B": 196,
             "FP16-W": 196, "BF16-W": 196},
}
#: The same for NHWC problems that run faster on the NCHW kernels, transposed. sm90: TF32
#: backward weights, whose NCHW kernel took 0.37 of the NHWC kernel's time on the 3x3 layers
#: and 0.65 on the 1x1 layers (bench/results/kernels_h100-ec37f22.json, batch 32).
VIA_NCHW: dict[str, dict[str, int]] = {
    "sm90": {"TF32-W": 2},
}
#: NHWC problems with fewer than VIA_NHWC_MIN_C channels per group (the first layer) that run
#: faster on the NCHW kernels, transposed. sm90: backward weights of the first layer, one filter
#: row per program, took 0.60 (FP16), 0.59 (BF16) and 0.53 (TF32) of the NHWC kernel's time in
#: NCHW (bench/results/triton_kernels_first_layer_w_h100.json); the transposes read and write
#: dy and x, 61 MB each way in FP16. With them, against the NHWC kernel (dbs/sm9084's batch-32
#: records, run 18): 0.77 in FP16 and BF16, 0.97 in TF32 (not listed). FP32 with three TF32
#: products (0.89 before the transposes) stays. FP16 backward data of those layers (dx of 3
#: channels) at a stride, whose kernel is the few-channel one (stride 1 takes the padded
#: solvers): the NCHW kernel took 0.34 of the NHWC kernel's time over the 19 zoo stems both
#: ran it on (bench/results/zoo_h200-nchw-57b2c95.json against zoo_h200-nhwc-57b2c95.json, H200,
#: batch 32); the transposes read and write dy and dx once each. Forward (0.77, the patchify
#: and 4-channel layers the other way) stays.
VIA_NCHW_FEW_C: dict[str, dict[str, int]] = {
    "sm90": {"FP16-W": 2, "BF16-W": 2, "FP16-B": 2},
}


def via_cases(kind: str, layout: str) -> dict[str, int]:
    """{case: fewest filter taps} of problems in `layout` that a target kind computes in the
    other layout (VIA_NHWC and VIA_NHWC_ONE_TAP for NCHW problems, VIA_NCHW and VIA_NCHW_FEW_C
    for NHWC ones)."""
    if layout == "NCHW":
        return {**dict.fromkeys(VIA_NHWC_ONE_TAP.get(kind, {}), 1), **VIA_NHWC.get(kind, {})}
    return {**VIA_NCHW_FEW_C.get(kind, {}), **VIA_NCHW.get(kind, {})}


def via_other_layout(kind: str, layout: str, case: str, sizes: Mapping[str, int]) -> bool:
    """Whether a problem in `layout` (NCHW or NHWC) of `case` (`FP16-B`, `TF32-W`...) with
    `sizes` runs faster on the other layout's kernels, transposed, on a target kind: from
    VIA_NHWC_MIN_C channels per group by VIA_NHWC / VIA_NCHW (and NCHW 1x1 filters by
    VIA_NHWC_ONE_TAP's output pixels), below that by VIA_NCHW_FEW_C; never for the packed
    kernels' grouped problems, whose tables these are not."""
    if packed(sizes):
        return False
    if sizes["C"] >= VIA_NHWC_MIN_C:
        taps = (VIA_NHWC if layout == "NCHW" else VIA_NCHW).get(kind, {}).get(case)
    elif layout == "NHWC" and KERNELS[kernel_for(case[-1], sizes)].get("few_channels"):
        taps = VIA_NCHW_FEW_C.get(kind, {}).get(case)  # measured on the few-channel kernels
    else:
        taps = None
    if taps is not None and sizes["R"] * sizes["S"] >= taps:
        return True
    pixels = VIA_NHWC_ONE_TAP.get(kind, {}).get(case) if layout == "NCHW" else None
    return pixels is not None and sizes["R"] * sizes["S"] == 1 and \
        sizes["C"] >= VIA_NHWC_MIN_C and sizes["P"] * sizes["Q"] <= pixels


#: Tile configurations measured fastest per ResNet-50 layer on a target kind (written by
#: bench/triton_conv.py --tuned from its committed results): starting points and search space
#: for tuning, keyed `<type>-<direction>-<layout>` (type FP16/BF16/FP32/TF32, or FP32X3 for the
#: three-TF32-product solvers), then shape_key.
TUNED_FILES = {"sm90": "conv_triton_tuned_sm90.json"}


def shape_key(sizes: Mapping[str, int]) -> str:
    """A problem's sizes as one string (C, K per group): the key of the tuned tables."""
    z = sizes
    return (f"n{z['N']}c{z['C']}h{z['H']}w{z['W']}k{z['K']}r{z['R']}s{z['S']}g{z['G']}"
            f"u{z['stride_h']}v{z['stride_w']}p{z['pad_h']}q{z['pad_w']}"
            f"l{z['dil_h']}j{z['dil_w']}")


@cache
def tuned_table(kind: str) -> dict[str, Any] | None:
    """A kind's tuned table ({"configs": {case: {shape_key: config}}, "defaults": {case:
    config}, ...}), read once per process; None for a kind without one."""
    name = TUNED_FILES.get(kind)
    if name is None:
        return None
    import json  # here: the runtime's start-up reads no tuning table

    table: dict[str, Any] = json.loads(Path(__file__).with_name(name).read_text())
    return table


def tuned_config(kind: str, case: str, sizes: Mapping[str, int], kernel: str = ""
                 ) -> dict[str, int] | None:
    """The measured best configuration of `case` (e.g. "FP16-F-NHWC") for a problem on a
    target kind: the layer's own where it was measured, else the case's usual winner
    (`usual_config`, for `kernel` where given); None where nothing was measured for the kind
    or case."""
    table = tuned_table(kind)
    packed_kernel = bool(kernel) and bool(KERNELS[kernel].get("packed"))
    if table is None:
        return usual_config(kind, case, kernel) if packed_kernel else None
    own = table["configs"].get(case, {}).get(shape_key(sizes))
    return dict(own) if own else usual_config(kind, case, kernel)


def small_grid_rule(kind: str, case: str) -> tuple[dict[str, int], float, int] | None:
    """A forward case's small-grid rule on a target kind (the tuned table's `small_grid`,
    fitted by bench/small_grid_fit.py): (tile configuration, what the reduce launch of a split
    costs in BLOCK_K steps, how many of the tile's programs an SM runs at once; see
    `small_grid_split`), or None where the table has none."""
    table = tuned_table(kind)
    rule = ((table or {}).get("small_grid") or {}).get("rules", {}).get(case)
    if not rule:
        return None
    return (dict(rule["config"]), float(rule["reduce_steps"]),
            int(rule.get("programs_per_sm", 1)))


class WrwRule(NamedTuple):
    """A backward-weights case's tile and split rule on a target kind (the tuned table's
    `wrw_rule`, fitted by bench/split_fit.py on bench/split_sweep.py's timings): problems
    whose per-group C and K are both at least `large_channels` take the `large` tile, the
    others the case's usual one; each splits by `split_for` with its own `waves` and `least`
    steps a part."""

    large_channels: int
    large: tuple[tuple[str, int], ...]
    large_waves: int
    large_least: int
    waves: int
    least: int

    def tile(self, sizes: Mapping[str, int], usual: Mapping[str, int]
             ) -> tuple[dict[str, int], int, int]:
        """(tile configuration, waves, least) of a problem."""
        if min(int(sizes["C"]), int(sizes["K"])) >= self.large_channels:
            return dict(self.large), self.large_waves, self.large_least
        return dict(usual), self.waves, self.least


def wrw_rule(kind: str, case: str, kernel: str = "conv2d_bwd_weight") -> WrwRule | None:
    """A backward-weights case's rule on a target kind (`WrwRule`), or None where the tuned
    table has none or `kernel` is not the one it was fitted on (conv2d_bwd_weight)."""
    if kernel != "conv2d_bwd_weight":
        return None
    table = tuned_table(kind)
    rule = ((table or {}).get("wrw_rule") or {}).get("rules", {}).get(case)
    if not rule:
        return None
    return WrwRule(int(rule["large_channels"]), tuple(sorted(rule["large"].items())),
                   int(rule["large_waves"]), int(rule["large_least"]), int(rule["waves"]),
                   int(rule["least"]))


def wrw_split(kind: str, case: str, kernel: str, sizes: Mapping[str, int],
              usual: Mapping[str, int], sms: int) -> dict[str, int]:
    """A backward-weights problem's tile and SPLIT_K: the rule's (`wrw_rule`) where the kind
    has one for the case, else the usual tile split by `split_for`'s defaults."""
    rule = wrw_rule(kind, case, kernel)
    tile, waves, least = rule.tile(sizes, usual) if rule else (dict(usual), None, None)
    return {**tile, "SPLIT_K": int(split_for(kernel, sizes, tile, sms, waves, least))}


def wrw_tiles(kind: str, case: str, kernel: str, usual: Mapping[str, int]
              ) -> list[dict[str, int]]:
    """The tiles `wrw_split` may give a case's problems (the package ships each at every
    split)."""
    rule = wrw_rule(kind, case, kernel)
    return [dict(usual)] + ([dict(rule.large)] if rule else [])


def small_grid_split(programs: int, steps: int, sms: int, reduce_steps: float,
                     most: int = 16, per_sm: int = 1) -> int:
    """The SPLIT_K (a power of two up to `most`) of a small-grid forward launch of `programs`
    tiles and `steps` BLOCK_K steps each that costs least, a cost being the steps each part
    runs times the waves its programs take (`per_sm` programs on each of `sms` SMs at once),
    plus `reduce_steps` for the reduce launch of any split. A split keeps at least 2 steps per
    part and 4 programs an SM at most (what bench/serial_split.py and
    bench/split_in_model.py measure)."""
    slots = sms * max(1, per_sm)
    best, best_cost = 1, float(steps) * cdiv(programs, slots)
    split = 2
    while split <= most and steps >= 2 * split and programs * split <= 4 * sms:
        cost = cdiv(steps, split) * cdiv(programs * split, slots) + reduce_steps
        if cost < best_cost:
            best, best_cost = split, cost
        split *= 2
    return best


@cache
def _shape_key_pattern() -> Any:
    """The compiled pattern of shape_key (made on first use: start-up compiles none)."""
    import re

    return re.compile(r"n(\d+)c(\d+)h(\d+)w(\d+)k(\d+)r(\d+)s(\d+)g(\d+)"
                      r"u(\d+)v(\d+)p(\d+)q(\d+)l(\d+)j(\d+)")


def shape_sizes(key: str) -> dict[str, int] | None:
    """The sizes a shape_key names (N C H W K R S G stride pad dilation), or None."""
    m = _shape_key_pattern().fullmatch(key)
    if m is None:
        return None
    names = ("N", "C", "H", "W", "K", "R", "S", "G", "stride_h", "stride_w", "pad_h", "pad_w",
             "dil_h", "dil_w")
    return dict(zip(names, (int(v) for v in m.groups()), strict=True))


def usual_config(kind: str, case: str, kernel: str = "") -> dict[str, int] | None:
    """A case's usual winner on a target kind: for a few-channel kernel, the most frequent
    configuration among the case's measured layers that run it (their tiles fit its narrow
    GEMM: the case's usual tile, fitted to the other layers, wasted two thirds of a
    few-channel tile at batch 1 and 64, bench/results/kernels_h100-d68e283.json); else, or
    where none was measured, the case's most frequent winner over all its layers."""
    if kernel and KERNELS[kernel].get("packed"):  # every kind: its tile (packed_tile)
        return packed_tile(kind, kernel, case.endswith("NHWC"))
    table = tuned_table(kind)
    if table is None:
        return None
    if kernel and KERNELS[kernel].get("few_channels"):
        direction = KERNELS[kernel]["direction"]
        counts: dict[str, tuple[int, dict[str, int]]] = {}
        for key, config in table["configs"].get(case, {}).items():
            sizes = shape_sizes(key)
            if sizes is not None and kernel_for(direction, sizes) == kernel:
                text = repr(sorted(config.items()))
                counts[text] = (counts.get(text, (0, config))[0] + 1, config)
        if counts:
            return dict(max(counts.values(), key=lambda v: v[0])[1])
    return dict(table["defaults"][case]) if case in table["defaults"] else None
