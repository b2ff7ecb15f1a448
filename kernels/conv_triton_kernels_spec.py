"""The Triton implicit-GEMM kernels' argument lists, their table (`KERNELS`) and the target
kinds' legal spaces (`TARGET_KINDS`, `is_legal`, `legal_space`), as plain data.

Standard library only, so the runtime reads it without Triton; `conv_triton_spec` re-exports
every name here (the convention of the arguments: its docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    ("SPLIT_K", "i32"), ("BLOCK", "constexpr"), ("PARTS", "constexpr"),
)
#: 256 values a program on 2 warps: small outputs (batch 1) still spread over many SMs
#: (bench/reduce_kernel.py: 2.1 us against 2.6 at 1024 on 4 warps for 25k values on an H100).
REDUCE_BLOCK = 256
REDUCE_WARPS = 2
#: The wide reduce object (PARTS > 1): BLOCK values a program, PARTS partials of each a step,
#: on REDUCE_WIDE["num_warps"] warps. A split launch takes it where the usual object would
#: launch fewer programs than the GPU has SMs and the split is REDUCE_WIDE_MIN_SPLIT or more
#: (`wide_reduce`): a depthwise layer's few hundred weights split in 64 parts or more left
#: two programs looping over every part, one load of each in flight.
REDUCE_WIDE = {"BLOCK": 32, "PARTS": 32, "num_warps": 4}
REDUCE_WIDE_MIN_SPLIT = 8


def wide_reduce(total: int, split: int, sms: int) -> bool:
    """Whether the split launch whose output holds `total` values, cut in `split` parts, takes
    the wide reduce object on a GPU of `sms` SMs."""
    return split >= REDUCE_WIDE_MIN_SPLIT and cdiv(total, REDUCE_BLOCK) < sms
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

#: The few-channel kernels whose channels-last objects also ship aligned (`align16_variants`),
#: and what those assume: y's (dy's) side alone (K and y's strides multiples of `align_divisor`; x's
#: strides are multiples of its few channels, which meet nothing). Without it the compiler
#: stores the accumulator an element at a time, each with its own 64-bit address: compiled for
#: sm90 (FP16, ResNet-50's 7x7 stem, 256x64x16 at four warps) the generic object holds 255
#: registers and spills (939 STL) around 128 two-byte stores, the aligned one 249 registers,
#: no spill, 16 sixteen-byte stores (bench/results/fewc_aligned_sass-sm90.json).
#: The types they ship such objects of: the 16-bit ones, where they were measured (FP32 stems
#: run on the FP32 units or the three-product kernels).
FEW_ALIGN_TYPES = frozenset({"FP16", "BF16"})
FEW_ALIGN_ARGS: dict[str, tuple[str, ...]] = {
    k: ("K", "syn", "syh", "syw")
    for k in ("conv2d_fwd_smallc", "conv2d_bwd_data_smallc", "conv2d_bwd_weight_smallc")}

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
#: of ALIGN16_ARGS): its aligned objects, where FEW_ALIGN_ARGS names it, assume y's side alone.
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
                     "zeroed) as [SPLIT_K][R*S][G*K][C], then conv2d_bwd_weight_reduce "
                     "(reduce_args); SPLIT_K == 1: none (ws_ptr unused, pass any pointer)",
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
        "workspace": "SPLIT_K*G*K*C*R*S*4 bytes of FP32 partials as [SPLIT_K][R][G*K][S*C], "
                     "then conv2d_bwd_weight_reduce (reduce_args)",
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
        "workspace": "SPLIT_K*G*K*C*R*S*4 bytes of FP32 partials as [SPLIT_K][R*S][G*K][C], "
                     "then conv2d_bwd_weight_reduce (reduce_args)",
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


#: Splits beyond a kind's SPLIT_K that a kernel may also take: the few-channel backward
#: weights, whose launch is a few programs per filter row, and the implicit GEMM's backward
#: weights, a layer of which may have one or two tiles (their split rules reach 256:
#: conv_triton_grid_spec.MAX_SPLIT). The split is the launch's grid; one object serves all.
KERNEL_SPLITS: dict[str, tuple[int, ...]] = {"conv2d_bwd_weight_smallc": (128, 256),
                                             "conv2d_bwd_weight": (128, 256)}


def splits_of(kind: str, kernel: str) -> tuple[int, ...]:
    """The SPLIT_K values a kernel may take on a kind (1 alone for kernels without partials)."""
    if kernel not in OUTPUT_OF:
        return (1,)
    return tuple(TARGET_KINDS[kind]["SPLIT_K"]) + KERNEL_SPLITS.get(kernel, ())


def is_legal(config: Mapping[str, int], dtype: str, kind: str, kernel: str = "conv2d_fwd") -> bool:
    """Whether a configuration is in the legal space of a target kind for an element type."""
    space = TARGET_KINDS[kind]
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "GROUP_M"):
        if config.get(key) not in space[key]:
            return False
    split = config.get("SPLIT_K", 1)
    if split != 1 and split not in splits_of(kind, kernel):
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
    splits = splits_of(kind, kernel)
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


#: Which tensor a direction's kernel writes: the reduce kernel's output after a split launch.
OUTPUT_OF = {"conv2d_fwd": "y", "conv2d_bwd_data": "x", "conv2d_bwd_weight": "w",
             "conv2d_bwd_weight_smallc": "w", "conv2d_bwd_weight_packed": "w"}
