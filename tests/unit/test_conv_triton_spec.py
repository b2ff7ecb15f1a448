"""The launch description of the Triton convolution kernels (kernels/conv_triton_spec.py)."""

from __future__ import annotations

import ast
import importlib
import itertools
import sys
from pathlib import Path

import pytest
from miopenkernels.kernels import conv_triton_spec as spec

SOURCE = Path(spec.__file__).with_name("conv_triton.py")
PACKED_SOURCE = Path(spec.__file__).with_name("conv_triton_packed.py")

# ResNet-50's 3x3 stride-2 layer 128 -> 128 at 56x56, batch 32.
SIZES = {"N": 32, "C": 128, "H": 56, "W": 56, "K": 128, "P": 28, "Q": 28, "R": 3, "S": 3,
         "G": 1, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1, "dil_h": 1, "dil_w": 1}


def _jit_params() -> dict[str, list[str]]:
    """Parameter names of each @triton.jit function in conv_triton.py and the packed kernels'
    file it re-exports, read without Triton, a tuple parameter (CONV_TUPLES) as its members:
    the flat list Triton passes."""
    return {f.name: [n for a in f.args.args for n in spec.CONV_TUPLES.get(a.arg, (a.arg,))]
            for source in (SOURCE, PACKED_SOURCE) for f in ast.parse(source.read_text()).body
            if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")}


def _tree(name: str) -> ast.Module:
    return ast.parse(Path(spec.__file__).with_name(f"{name}.py").read_text())


#: The modules conv_triton_spec gathers (its relative imports).
PARTS = sorted(node.module for node in ast.walk(_tree("conv_triton_spec"))
               if isinstance(node, ast.ImportFrom) and node.level and node.module)


def test_the_spec_gathers_its_parts() -> None:
    assert PARTS == ["conv_triton_grid_spec", "conv_triton_kernels_spec",
                     "conv_triton_tuned_spec", "conv_triton_via_spec"]


@pytest.mark.parametrize("name", ["conv_triton_spec", *PARTS])
def test_spec_imports_the_standard_library_alone(name: str) -> None:
    """The runtime reads the spec without Triton: the spec and its parts import the standard
    library and one another alone."""
    tree = _tree(name)
    imported = {n.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for n in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and not node.level and node.module}
    assert imported <= sys.stdlib_module_names, sorted(imported - sys.stdlib_module_names)
    relative = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.level}
    assert relative <= set(PARTS)


@pytest.mark.parametrize("name", PARTS)
def test_the_spec_re_exports_every_name_of_its_parts(name: str) -> None:
    part = importlib.import_module(f"miopenkernels.kernels.{name}")
    tree = _tree(name)
    defined = [node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    defined += [t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)]
    defined += [node.target.id for node in tree.body
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)]
    public = [n for n in defined if not n.startswith("_")]
    assert public
    for n in public:
        assert n in spec.__all__, n
        assert getattr(spec, n) is getattr(part, n), n


@pytest.mark.parametrize("kernel", sorted(spec.KERNELS))
def test_argument_lists_match_the_source(kernel: str) -> None:
    assert _jit_params()[kernel] == [name for name, _ in spec.arg_list(kernel)]


def test_grids() -> None:
    cfg = {"BLOCK_M": 128, "BLOCK_N": 64, "SPLIT_K": 4}
    assert spec.grid("conv2d_fwd", SIZES, cfg) == (196 * 2, 1, 4)  # 32*28*28 = 25088 rows
    assert spec.grid("conv2d_fwd_smallc", SIZES, cfg) == (196 * 2, 1, 1)
    # Backward data: stride phases times splits, 32*28*28 pixels per phase.
    assert spec.grid("conv2d_bwd_data", SIZES, cfg) == (196 * 2, 1, 4 * 4)
    assert spec.workspace_bytes("conv2d_fwd", SIZES, cfg) == 4 * 32 * 128 * 28 * 28 * 4
    assert spec.workspace_bytes("conv2d_bwd_data", SIZES, cfg) == 4 * 32 * 128 * 56 * 56 * 4
    assert spec.grid("conv2d_bwd_weight", SIZES, cfg) == (1 * 2, 9, 4)
    assert spec.workspace_bytes("conv2d_bwd_weight", SIZES, cfg) == 4 * 128 * 128 * 9 * 4
    assert spec.workspace_bytes("conv2d_fwd", SIZES, dict(cfg, SPLIT_K=1)) == 0
    assert spec.grid("conv2d_bwd_weight_reduce", SIZES, cfg) == (
        -(-128 * 128 * 9 // spec.REDUCE_BLOCK), 1, 1)


@pytest.mark.parametrize("kind", sorted(spec.TARGET_KINDS))
@pytest.mark.parametrize("dtype", ["FP16", "FP32"])
def test_legal_space_fits_shared_memory(kind: str, dtype: str) -> None:
    space = spec.legal_space(kind, dtype, "conv2d_bwd_weight")
    assert space, (kind, dtype)
    limit = spec.TARGET_KINDS[kind]["smem"]
    assert all(spec.shared_bytes(c, dtype) <= limit for c in space)
    assert any(c["SPLIT_K"] > 1 for c in space)
    assert all(c["SPLIT_K"] == 1 for c in spec.legal_space(kind, dtype, "conv2d_fwd_smallc"))
    big = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 5,
           "GROUP_M": 8}
    assert not spec.is_legal(big, dtype, kind)


def test_target_kinds() -> None:
    assert spec.target_kind("sm_90a") == "sm90"
    assert spec.target_kind("sm80") == "sm80"
    assert spec.target_kind("sm120") == "sm120"
    assert spec.target_kind("gfx942") == "cdna"
    assert spec.target_kind("gfx950") == "cdna4"
    assert spec.target_kind("gfx1151") == "rdna"
    with pytest.raises(ValueError):
        spec.target_kind("gfx1030")


def test_alignment_assumption() -> None:
    nhwc = {"x": (56 * 56 * 128, 1, 56 * 128, 128), "w": (9 * 128, 1, 3 * 128, 128),
            "y": (28 * 28 * 128, 1, 28 * 128, 128)}
    args = spec.conv_args(SIZES, nhwc)
    assert spec.meets_align16(args, channels_last=True)
    assert not spec.meets_align16(dict(args, C=3, sxw=3), channels_last=True)
    nchw = {"x": (128 * 56 * 56, 56 * 56, 56, 1), "w": (128 * 9, 9, 3, 1),
            "y": (128 * 28 * 28, 28 * 28, 28, 1)}
    args = spec.conv_args(SIZES, nchw)
    assert not spec.meets_align16(args, channels_last=True)
    assert spec.meets_align16(args, channels_last=False)
    assert spec.fits_int32(SIZES)
    assert not spec.fits_int32(dict(SIZES, N=8192))


def test_split_applies() -> None:
    assert spec.split_applies("conv2d_bwd_data", SIZES)  # 3x3 stride 2: every phase has a tap
    one = dict(SIZES, R=1, S=1, pad_h=0, pad_w=0)
    assert not spec.split_applies("conv2d_bwd_data", one)
    assert spec.split_applies("conv2d_bwd_data", dict(one, stride_h=1, stride_w=1))
    assert spec.split_applies("conv2d_fwd", one)
    assert spec.split_applies("conv2d_bwd_weight", one)
    assert not spec.split_applies("conv2d_fwd_smallc", one)


def test_reduce_arguments_follow_the_output() -> None:
    nhwc = {"x": (56 * 56 * 128, 1, 56 * 128, 128), "w": (9 * 128, 1, 3 * 128, 128),
            "y": (28 * 28 * 128, 1, 28 * 128, 128)}
    args = spec.conv_args(SIZES, nhwc)
    y = spec.reduce_args("conv2d_fwd", args)
    assert y == {"TOTAL": 32 * 128 * 28 * 28, "C": 128, "R": 28, "S": 28,
                 "swk": 28 * 28 * 128, "swc": 1, "swr": 28 * 128, "sws": 128}
    x = spec.reduce_args("conv2d_bwd_data", args)
    assert (x["TOTAL"], x["R"], x["swk"], x["sws"]) == (32 * 128 * 56 * 56, 56, 56 * 56 * 128, 128)
    # After a channels-last object the partials are in memory order, (n, p, q, k): the reduce
    # walks them so, channels innermost, and its stores are contiguous.
    y = spec.reduce_args("conv2d_fwd", args, channels_last=True)
    assert y == {"TOTAL": 32 * 128 * 28 * 28, "C": 28, "R": 28, "S": 128,
                 "swk": 28 * 28 * 128, "swc": 28 * 128, "swr": 128, "sws": 1}
    x = spec.reduce_args("conv2d_bwd_data", args, channels_last=True)
    assert (x["C"], x["R"], x["S"], x["sws"]) == (56, 56, 128, 1)
    # Weights' partials are (r, s, k, c) whatever the object: the reduce walks taps outermost
    # and channels innermost, its stores contiguous in KRSC; the packed kernel's alike, the
    # few-channel kernel's (r, k, s, c) (its tile's columns are a filter row's (s, c)).
    assert spec.reduce_args("conv2d_bwd_weight", args, channels_last=True) == \
        spec.reduce_args("conv2d_bwd_weight", args)
    w = spec.reduce_args("conv2d_bwd_weight", args)
    assert w == {"TOTAL": 128 * 128 * 9, "C": 3, "R": 128, "S": 128, "swk": 3 * 128,
                 "swc": 128, "swr": 9 * 128, "sws": 1}
    assert spec.reduce_args("conv2d_bwd_weight_packed", args) == w
    w = spec.reduce_args("conv2d_bwd_weight_smallc", args)
    assert w == {"TOTAL": 128 * 128 * 9, "C": 128, "R": 3, "S": 128, "swk": 3 * 128,
                 "swc": 9 * 128, "swr": 128, "sws": 1}
    with pytest.raises(KeyError, match="conv2d_fwd_smallc"):
        spec.reduce_args("conv2d_fwd_smallc", args)
    # Every i32 argument but the split (reduce_step's: the launch's own) from reduce_args.
    assert [n for n, k in spec.REDUCE_ARGS if k == "i32"] == [*y, "SPLIT_K"]


def test_the_wide_reduce_takes_small_outputs_split_in_many_parts() -> None:
    # Fewer usual programs than SMs and a split of 8 or more: the wide object.
    assert spec.wide_reduce(288, 64, 132) and spec.wide_reduce(256 * 131, 8, 132)
    assert not spec.wide_reduce(288, 4, 132)  # a few parts: the usual object's loop is short
    assert not spec.wide_reduce(256 * 132, 64, 132)  # the usual object fills every SM
    sig, cx = spec.triton_signature("conv2d_bwd_weight_reduce", "FP16", spec.REDUCE_WIDE)
    assert (cx["BLOCK"], cx["PARTS"]) == (32, 32) and sig["SPLIT_K"] == "i32"
    assert spec.triton_signature("conv2d_bwd_weight_reduce", "FP16", {})[1]["PARTS"] == 1


def test_signature() -> None:
    cfg = spec.default_config("conv2d_fwd", "BF16")
    sig, cx = spec.triton_signature("conv2d_fwd", "BF16", cfg, channels_last=True)
    assert sig["x_ptr"] == "*bf16" and sig["ws_ptr"] == "*fp32" and sig["N"] == "i32"
    assert cx["CHANNELS_LAST"] == 1 and cx["PRECISION"] == "ieee" and cx["BLOCK_M"] == 64
    assert set(cx) == {n for n, k in spec.CONV_ARGS if k == "constexpr"}
    assert "sxw" in spec.align16_args("conv2d_fwd", True)
    assert "sxw" not in spec.align16_args("conv2d_fwd", False)
    assert spec.kernel_for("F", dict(SIZES, C=3)) == "conv2d_fwd_smallc"
    assert spec.kernel_for("F", SIZES) == "conv2d_fwd"
    # Backward data: few channels with a stride take every phase at once; without a stride,
    # or dilated, the per-phase kernel.
    assert spec.kernel_for("B", dict(SIZES, C=3)) == "conv2d_bwd_data_smallc"
    assert spec.kernel_for("B", SIZES) == "conv2d_bwd_data"
    assert spec.kernel_for("B", dict(SIZES, C=3, stride_h=1, stride_w=1)) == "conv2d_bwd_data"
    assert spec.kernel_for("B", dict(SIZES, C=3, dil_h=2)) == "conv2d_bwd_data"
    assert spec.grid("conv2d_bwd_data_smallc", dict(SIZES, C=3),
                     {"BLOCK_M": 128, "BLOCK_N": 16}) == (196, 1, 1)
    assert spec.workspace_bytes("conv2d_bwd_data_smallc", dict(SIZES, C=3),
                                {"SPLIT_K": 2}) == 0
    # C < 16 never meets align16 (C is one of its arguments): no aligned object is built.
    assert spec.align16_variants("conv2d_bwd_data_smallc") == (False,)
    assert spec.align16_variants("conv2d_fwd") == (True, False)
    assert not spec.meets_align16(spec.conv_args(dict(SIZES, C=3), {
        "x": (3 * 56 * 56, 1, 3 * 56, 3), "w": (27, 1, 9, 3), "y": (128 * 784, 1, 128 * 28, 128)}),
        True)
    assert not spec.is_legal({**spec.default_config("conv2d_bwd_data_smallc", "FP16"),
                              "SPLIT_K": 2}, "FP16", "sm90", "conv2d_bwd_data_smallc")


def test_tuned_configurations_are_legal() -> None:
    first = dict(SIZES, C=3, H=224, W=224, K=64, P=112, Q=112, R=7, S=7, pad_h=3, pad_w=3)
    cfg = spec.tuned_config("sm90", "FP16-F-NHWC", first)
    assert cfg is not None and cfg["BLOCK_K"] in (16, 32, 64)
    unknown = dict(SIZES, N=7)
    assert spec.tuned_config("sm90", "FP16-F-NHWC", unknown) is not None  # the case's default
    assert spec.tuned_config("cdna", "FP16-F-NHWC", SIZES) is None
    import json

    table = json.loads(Path(spec.__file__).with_name(spec.TUNED_FILES["sm90"]).read_text())
    for case, by_shape in table["configs"].items():
        dtype = {"TF32": "FP32", "FP32X3": "FP32"}.get(case.split("-")[0], case.split("-")[0])
        for c in by_shape.values():
            kernel = "conv2d_bwd_weight" if "-W-" in case else "conv2d_fwd"
            assert spec.is_legal(c, dtype, "sm90", kernel), (case, c)


def test_tile_efficiency_is_the_real_share_of_the_launched_tiles() -> None:
    # Forward: M = 32*28*28 = 25088 = 196 tiles of 128, N = K = 128, inner = C = 128.
    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    assert spec.gemm_dims("conv2d_fwd", SIZES) == (25088, 128, 128)
    assert spec.tile_efficiency("conv2d_fwd", SIZES, cfg) == 1.0
    # Few output channels fill a quarter of each 128-wide tile; 3 input channels spread over a
    # filter row's (s, c) = 9 fill 9 of a BLOCK_K of 32 (the first layer's 7 x 3: 21 of 32).
    small = {**SIZES, "K": 32, "C": 3}
    assert spec.tile_efficiency("conv2d_fwd", small, cfg) == pytest.approx(0.25 * 3 / 64)
    assert spec.tile_efficiency("conv2d_fwd_smallc", small,
                                {**cfg, "BLOCK_K": 32}) == pytest.approx(0.25 * 9 / 32)
    first = {**small, "K": 64, "R": 7, "S": 7}
    assert spec.tile_efficiency("conv2d_fwd_smallc", first, {**cfg, "BLOCK_N": 64,
                                                             "BLOCK_K": 32}) == 21 / 32
    # Backward data tiles each stride phase: 32 * 28 * 28 rows for stride 2; with few
    # channels all four phases at once, (phase, channel) = 12 columns.
    assert spec.gemm_dims("conv2d_bwd_data", SIZES) == (25088, 128, 128)
    assert spec.gemm_dims("conv2d_bwd_data_smallc", small) == (25088, 12, 32)
    # Backward weights of few channels: a program per filter row, (s, c) = 21 of 32 columns.
    assert spec.gemm_dims("conv2d_bwd_weight_smallc", first) == (64, 21, 32 * 28 * 28)
    assert spec.grid("conv2d_bwd_weight_smallc", first,
                     {"BLOCK_M": 64, "BLOCK_N": 32, "SPLIT_K": 8}) == (1, 7, 8)
    assert spec.tile_efficiency("conv2d_bwd_data_smallc", small,
                                {**cfg, "BLOCK_N": 16, "BLOCK_K": 32}) == 12 / 16
    assert spec.gemm_dims("conv2d_bwd_weight", SIZES) == (128, 128, 25088)
    for kernel in ("conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weight",
                   "conv2d_bwd_weight_smallc", "conv2d_fwd_smallc", "conv2d_bwd_data_smallc"):
        assert 0 < spec.tile_efficiency(kernel, small, cfg) <= 1


def _one_stage_share(name: str, mark: str = " s1 ") -> dict[str, float]:
    """Per case of a committed bench/triton_conv.py run: the geomean over its layers of the
    fastest correct tile's time whose name holds `mark` (one stage) over the fastest correct
    other tile's."""
    import json
    import math

    rows = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results" / name)
                      .read_text())["rows"]
    shares: dict[str, list[float]] = {}
    for r in rows:
        one = [t[1] for t in r["tried"] if mark in t[0] and t[3]]
        more = [t[1] for t in r["tried"] if mark not in t[0] and t[3]]
        if one and more:
            case = f"{r['type']}-{r['direction']}-{r['layout']}"
            shares.setdefault(case, []).append(min(one) / min(more))
    return {c: math.exp(sum(map(math.log, v)) / len(v)) for c, v in shares.items()}


def test_one_stage_tiles_are_legal_on_sm90_for_the_cases_they_won() -> None:
    """sm90's legal space holds num_stages 1 because it measured faster where 32-bit operands
    are not K-major (the comment on TARGET_KINDS quotes these files); the tuned table ships it
    as those cases' usual tile."""
    tf32 = _one_stage_share("triton_kernels_tf32_h100.json")
    assert tf32["TF32-B-NCHW"] < 0.8 and tf32["TF32-F-NCHW"] < 0.85
    assert tf32["TF32-W-NHWC"] < 0.85 and tf32["TF32-F-NHWC"] > 1.0
    assert _one_stage_share("triton_kernels_fp32_f_nchw_h100.json")["FP32-F-NCHW"] < 1.0
    assert 1 in spec.TARGET_KINDS["sm90"]["num_stages"]
    for case in ("TF32-B-NCHW", "TF32-F-NCHW"):
        assert spec.tuned_table("sm90")["defaults"][case]["num_stages"] == 1, case


def test_mma_sync_is_legal_on_sm90_tf32_for_the_cases_it_won() -> None:
    """MMA=2 (mma.sync) is in sm90's FP32 space because it measured faster than wgmma for TF32
    NHWC backward weights and data; the tuned table ships it as those cases' usual tile."""
    share = _one_stage_share("triton_kernels_tf32_mma_h100.json", " mma2")
    assert share["TF32-W-NHWC"] < 0.6 and share["TF32-B-NHWC"] < 0.75
    assert all(share[c] > 1.0 for c in ("TF32-B-NCHW", "TF32-F-NCHW", "TF32-F-NHWC"))
    for case in ("TF32-W-NHWC", "TF32-B-NHWC"):
        assert spec.tuned_table("sm90")["defaults"][case].get("MMA") == 2, case
    assert spec.is_legal({**spec.default_config("conv2d_fwd", "FP32"), "MMA": 2}, "FP32", "sm90")
    assert not spec.is_legal({**spec.default_config("conv2d_fwd", "FP16"), "MMA": 2}, "FP16",
                             "sm90")
    assert not spec.is_legal({**spec.default_config("conv2d_fwd", "FP32"), "MMA": 2}, "FP32",
                             "sm100")


def test_wave32_tiles_hold_at_most_acc_per_lane_sums_a_lane() -> None:
    # 128x64 on 4 warps: 64 sums a lane, legal on wave64 CDNA (32 there), not on RDNA.
    wide = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1,
            "num_warps": 4, "num_stages": 2}
    assert spec.accumulators_per_lane(wide, "rdna") == 64
    assert spec.accumulators_per_lane(wide, "cdna") == 32
    assert not spec.is_legal(wide, "FP16", "rdna")
    assert spec.is_legal(wide, "FP16", "cdna")
    assert spec.is_legal({**wide, "num_warps": 8}, "FP16", "rdna")
    cap = spec.TARGET_KINDS["rdna"]["ACC_PER_LANE"]
    for dtype in ("FP16", "BF16"):
        space = spec.legal_space("rdna", dtype)
        assert space and all(spec.accumulators_per_lane(c, "rdna") <= cap for c in space)
        assert spec.is_legal(spec.default_config("conv2d_fwd", dtype), dtype, "rdna")


def test_the_3d_usual_tiles_fit_every_kind() -> None:
    from miopenkernels.kernels import conv_triton_3d_spec as spec3d

    for (precision, direction) in spec3d.TILES:
        dtype = "FP32" if precision in ("FP32", "TF32", "FP32X3") else precision
        for kind in spec.TARGET_KINDS:
            tile = spec3d.usual_tile(precision, direction, dtype, kind)
            assert spec3d.legal(direction, tile, dtype, kind), (precision, direction, kind, tile)
    assert spec3d.usual_tile("FP16", "F", "FP16", "rdna")["BLOCK_M"] == 64  # 128x128 w8 cut
    assert spec3d.usual_tile("FP16", "F", "FP16", "cdna")["BLOCK_M"] == 128


def _packed_sizes(c: int, k: int, g: int) -> dict[str, int]:
    return {**SIZES, "C": c, "K": k, "G": g, "stride_h": 1, "stride_w": 1, "P": 56, "Q": 56}


def test_grouped_problems_of_few_channels_a_group_take_the_packed_kernels() -> None:
    for d, kernel in (("F", "conv2d_fwd_packed"), ("B", "conv2d_bwd_data_packed"),
                      ("W", "conv2d_bwd_weight_packed")):
        assert spec.kernel_for(d, _packed_sizes(4, 4, 32)) == kernel
        assert spec.kernel_for(d, _packed_sizes(8, 2, 13)) == kernel
        assert spec.kernel_for(d, _packed_sizes(1, 1, 64)) != kernel  # depthwise
        assert spec.kernel_for(d, _packed_sizes(16, 16, 8)) != kernel  # the group axis
        assert spec.kernel_for(d, _packed_sizes(8, 8, 1)) != kernel  # no groups
    # A tile of 32 filters holds 4 groups of 8: 13 groups take 4 tiles, a quarter used each.
    z = _packed_sizes(8, 8, 13)
    tile = spec.packed_tile("sm90", "conv2d_fwd_packed", True)
    assert spec.grid("conv2d_fwd_packed", z, tile) == (spec.cdiv(32 * 56 * 56, 128) * 4, 1, 1)
    assert spec.tile_efficiency("conv2d_fwd_packed", z, tile) == 0.25
    assert spec.grid("conv2d_bwd_weight_packed", z, {**spec.packed_tile(
        "sm90", "conv2d_bwd_weight_packed", True), "SPLIT_K": 8}) == (2, 9, 8)


def test_packed_tiles_are_legal_on_every_kind() -> None:
    for kind, kernel, cl in itertools.product(spec.TARGET_KINDS, ("conv2d_fwd_packed",
                                              "conv2d_bwd_data_packed",
                                              "conv2d_bwd_weight_packed"), (True, False)):
        for dtype in ("FP16", "BF16"):
            assert spec.is_legal(spec.packed_tile(kind, kernel, cl), dtype, kind, kernel)
            assert spec.is_legal(spec.default_config(kernel, dtype), dtype, kind, kernel)
    assert spec.packed_tile("sm90", "conv2d_fwd_packed", True)["num_stages"] == 3
    assert spec.packed_tile("cdna", "conv2d_fwd_packed", True)["num_stages"] == 2


def test_packed_objects_assume_what_four_channels_a_group_meet() -> None:
    def args(c: int, k: int, g: int, dense_w: int = 0) -> dict[str, int]:
        z = _packed_sizes(c, k, g)
        x = (56 * 56 * g * c, 1, 56 * (dense_w or g * c), dense_w or g * c)
        w = (9 * c, 1, 3 * c, c)
        y = (56 * 56 * g * k, 1, 56 * g * k, g * k)
        return spec.conv_args(z, {"x": x, "w": w, "y": y})

    kernel = "conv2d_fwd_packed"
    assert spec.meets_align16(args(4, 4, 32), True, "FP16", kernel)  # ResNeXt's 4 a group
    assert spec.meets_align16(args(8, 8, 13), True, "BF16", kernel)  # RegNet's 8
    assert not spec.meets_align16(args(3, 3, 32), True, "FP16", kernel)
    assert not spec.meets_align16(args(4, 4, 5), True, "FP16", kernel)  # 20 channels a pixel
    assumed = dict(spec.align_assumptions(kernel, "FP16", True))
    assert (assumed["sxw"], assumed["C"], assumed["swk"], assumed["x_ptr"]) == (8, 4, 4, 16)
    assert spec.align16_variants(kernel, False) == (False,)
    assert spec.align16_variants(kernel, True) == (True, False)
