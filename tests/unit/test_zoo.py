"""The model zoo's manifests (dbs/manifests/zoo/) and bench/zoo.py's pure parts, without a GPU."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from miopenkernels.builder.manifest import available_manifests, load_manifest, load_manifests
from miopenkernels.driver import parse_driver_line
from miopenkernels.problem import ConvProblem

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "dbs" / "manifests" / "zoo"
BENCH = ROOT / "bench"


def _load(name: str, file: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, BENCH / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SHAPES = _load("bench_zoo_shapes", "zoo_shapes.py")
ZOO_BENCH = _load("bench_zoo", "zoo.py")

# Distinct convolutions per network, as the walks give them (a change here is a change of a
# network's layer list: say why in the commit).
COUNTS = {"resnet50": 23, "resnext50_32x4d": 24, "mobilenet_v2": 30, "mobilenet_v3_large": 44,
          "efficientnet_b0": 46, "convnext_tiny": 8, "regnet_y_400mf": 34,
          "shufflenet_v2_x1_0": 16, "squeezenet1_1": 18, "densenet121": 66,
          "inception_v3": 45, "vgg16": 9, "deeplabv3_resnet50": 31, "unet": 19, "dcgan": 10,
          "sd15_unet": 35, "sd15_vae": 23, "yolov5s": 29, "retinanet_resnet50_fpn": 40,
          "r2plus1d_18": 25, "unet3d": 18, "esrgan": 10}
HELD_OUT = {"resnext101_64x4d": 19, "mobilenet_v3_small": 41, "mnasnet1_0": 33,
            "fcn_resnet50": 27, "r3d_18": 11, "x3d_s": 35}
THREE_D = {"r2plus1d_18", "unet3d", "r3d_18", "x3d_s"}
INFERENCE_ONLY = {"sd15_unet", "sd15_vae", "esrgan"}


def _files() -> dict[str, Path]:
    files = {p.stem: p for p in ZOO.glob("*.txt")}
    files.update({p.stem: p for p in (ZOO / "held_out").glob("*.txt")})
    return files


def _geometry(p: ConvProblem) -> tuple:
    return (p.c, p.k, p.in_spatial, p.filter, p.pad, p.stride, p.dilation, p.groups, p.mode)


def test_the_zoo_has_twenty_networks_and_four_held_out_apart() -> None:
    assert {p.stem for p in ZOO.glob("*.txt")} == set(COUNTS) and len(COUNTS) >= 20
    assert {p.stem for p in (ZOO / "held_out").glob("*.txt")} == set(HELD_OUT)
    assert len(HELD_OUT) >= 4 and not set(COUNTS) & set(HELD_OUT)
    assert {n.name for n in SHAPES.NETWORKS if n.held_out} == set(HELD_OUT)


def test_the_default_manifest_set_is_unchanged() -> None:
    assert available_manifests() == ["inception_v3", "mobilenet_v2", "resnet50", "unet", "vgg16"]


def test_the_manifests_are_what_the_walks_write() -> None:
    assert SHAPES.main(["--check"]) == 0
    for network in SHAPES.NETWORKS:
        assert len(SHAPES.distinct_layers(network)) == {**COUNTS, **HELD_OUT}[network.name]


@pytest.mark.parametrize("name", sorted({**COUNTS, **HELD_OUT}))
def test_every_line_parses_as_build_reads_it(name: str) -> None:
    path = _files()[name]
    text = path.read_text()
    header = text.split("\n\n", 1)[0]
    assert "bench/zoo_shapes.py" in header and f"# {name}: the " in header
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    for line in lines:  # every line a valid problem, one per direction it asks for
        ps = parse_driver_line(line)
        assert len(ps) == (3 if " -F 0 " in line else 1)
    held = "held_out/" if name in HELD_OUT else ""
    problems = load_manifests([f"zoo/{held}{name}"])  # what `build --manifest zoo/NAME` loads
    assert problems == load_manifests([str(path)])
    count = {**COUNTS, **HELD_OUT}[name]
    fp32 = [p for p in problems if p.in_type == "FP32"]
    fp16 = [p for p in problems if p.in_type == "FP16"]
    assert len(lines) == 2 * count
    assert {p.direction for p in fp32} == {"F"} and len(fp32) == count
    assert {p.direction for p in fp16} == ({"F"} if name in INFERENCE_ONLY else {"F", "B", "W"})
    assert len({_geometry(p) for p in fp16}) == count
    dims = 3 if name in THREE_D else 2
    assert {p.spatial_dim for p in problems} == {dims}
    assert {p.in_layout for p in fp32} == {"NCDHW" if dims == 3 else "NCHW"}
    assert {p.in_layout for p in fp16} == {"NDHWC" if dims == 3 else "NHWC"}


def _layers(name: str) -> list[ConvProblem]:
    held = "held_out/" if name in HELD_OUT else ""
    return [p for p in load_manifest(f"zoo/{held}{name}") if p.in_type == "FP32"]


def test_groups_dilation_and_transposed_layers_are_where_the_networks_have_them() -> None:
    def depthwise(p: ConvProblem) -> bool:
        return p.groups > 1 and p.groups == p.c == p.k

    assert {p.groups for p in _layers("resnext50_32x4d")} == {1, 32}
    assert {p.groups for p in _layers("resnext101_64x4d")} == {1, 64}
    assert any(p.groups > 1 and not depthwise(p) for p in _layers("regnet_y_400mf"))
    for name, filters in (("mobilenet_v2", {3}), ("mobilenet_v3_large", {3, 5}),
                          ("efficientnet_b0", {3, 5}), ("convnext_tiny", {7}),
                          ("shufflenet_v2_x1_0", {3}), ("mnasnet1_0", {3, 5})):
        assert {p.filter[0] for p in _layers(name) if depthwise(p)} == filters, name
    assert {p.dilation[0] for p in _layers("deeplabv3_resnet50")} == {1, 2, 4, 12, 24, 36}
    assert {p.dilation[0] for p in _layers("fcn_resnet50")} == {1, 2, 4}
    for name in ("unet", "dcgan", "unet3d"):
        assert any(p.mode == "trans" for p in _layers(name)), name
    for name in set(COUNTS) - {"unet", "dcgan", "unet3d"}:
        assert all(p.mode == "conv" for p in _layers(name)), name
    # Stems and latents of 3 or 4 channels; the SD VAE's odd-sized downsampling input.
    sd = _layers("sd15_unet")
    assert min(p.c for p in sd) == 4 and min(p.k for p in sd) == 4
    assert any(p.in_spatial == (513, 513) and p.stride == (2, 2) for p in _layers("sd15_vae"))
    assert (6, 6) in {p.filter for p in _layers("yolov5s")}
    assert {p.in_spatial for p in _layers("retinanet_resnet50_fpn")} >= {(7, 9), (13, 17)}
    assert {p.filter for p in _layers("r2plus1d_18")} >= {(1, 3, 3), (3, 1, 1), (1, 7, 7)}


def test_the_walks_agree_with_the_shipped_manifests() -> None:
    """The shipped manifests were written by hand from MITuna's lists: the walks give the same
    layers (Inception-v3's auxiliary classifier, which MITuna's list lacks, aside)."""
    for name in ("resnet50", "mobilenet_v2", "vgg16", "unet", "inception_v3"):
        shipped = {_geometry(p) for p in load_manifest(name) if p.direction == "F"}
        zoo = {_geometry(p) for p in _layers(name)}
        extra = zoo - shipped
        assert shipped <= zoo, name
        assert len(extra) == (2 if name == "inception_v3" else 0), name


def test_regnet_widths_follow_torchvision_init_params() -> None:
    # regnet_y_400mf's published stages: widths 48/104/208/440, depths 1/3/6/6.
    assert SHAPES.regnet_widths(16, 48, 27.89, 2.09, 8) == [(48, 1, 8), (104, 3, 8),
                                                            (208, 6, 8), (440, 6, 8)]


def test_a_walk_that_does_not_fit_is_refused() -> None:
    net = SHAPES.Net("bad")
    with pytest.raises(ValueError, match="does not fit"):
        net.conv("c", SHAPES.Feat(6, (4, 4)), 8, 3, 1, 0, g=4)
    with pytest.raises(ValueError, match="different sizes"):
        SHAPES.cat(SHAPES.Feat(1, (4, 4)), SHAPES.Feat(1, (2, 2)))


# ----------------------------------------------------------------------------- bench/zoo.py
def _p(**kw: object) -> ConvProblem:
    base = {"n": 1, "c": 64, "k": 64, "in_spatial": (56, 56), "filter": (3, 3),
            "pad": (1, 1)}
    return ConvProblem(**{**base, **kw})


def test_layer_classes() -> None:
    classes = ZOO_BENCH.layer_classes
    assert classes(_p()) == ("plain",)
    assert classes(_p(groups=64)) == ("depthwise",)
    assert classes(_p(groups=32, c=128, k=128)) == ("grouped",)
    assert classes(_p(c=3, stride=(2, 2))) == ("few-channel",)
    assert classes(_p(k=4)) == ("few-channel",)
    assert classes(_p(dilation=(12, 12), pad=(12, 12))) == ("dilated",)
    assert classes(_p(mode="trans", filter=(2, 2), pad=(0, 0), stride=(2, 2))) == ("transposed",)
    assert classes(_p(in_spatial=(8, 8, 8), filter=(3, 3, 3), pad=(1, 1, 1), c=1)) == \
        ("3-D", "few-channel")


def test_layers_become_problems_of_every_case() -> None:
    layers = ZOO_BENCH.load_layers()
    assert {la.network for la in layers} == set(COUNTS)
    assert len(layers) == sum(COUNTS.values())
    assert ZOO_BENCH.load_layers(held_out=True)[-1].held_out
    assert {la.network for la in ZOO_BENCH.load_layers(["r3d_18"])} == {"r3d_18"}
    named = [la for la in layers if la.network == "resnext50_32x4d"]
    assert named[0].name == "conv1" and any(la.name == "layer1.0.conv2" for la in named)
    three = next(la for la in layers if la.network == "unet3d")
    p = ZOO_BENCH.layer_problem(three, "TF32", "W", "NHWC", 8)
    assert (p.in_layout, p.in_type, p.direction, p.n) == ("NDHWC", "FP32", "W", 8)
    assert ZOO_BENCH.case_name("TF32", p.direction, p.in_layout) == "TF32-W-NDHWC"
    flat = ZOO_BENCH.layer_problem(named[0], "BF16", "B", "NHWC", 32)
    assert (flat.in_layout, flat.wei_layout, flat.in_type, flat.n) == ("NHWC", "NHWC", "BF16", 32)
    assert ZOO_BENCH.tensor_gb(flat) == pytest.approx(
        2 * (32 * 3 * 224 * 224 + 64 * 3 * 49 + 32 * 64 * 112 * 112) / 1e9)


def test_every_kth_keeps_every_class_of_every_network() -> None:
    layers = ZOO_BENCH.load_layers(held_out=True)
    sample = ZOO_BENCH.every_kth(layers, 3)
    assert ZOO_BENCH.every_kth(layers, 1) == layers
    assert len(layers) / 3 <= len(sample) < len(layers) / 2
    assert all(la in layers for la in sample)
    groups = {(la.network, ZOO_BENCH.layer_classes(la.problem)) for la in layers}
    assert {(la.network, ZOO_BENCH.layer_classes(la.problem)) for la in sample} == groups
    # Within a group: its first layer, then every third, in the manifest's order.
    mine = [la for la in layers if la.network == "resnext50_32x4d"
            and "grouped" in ZOO_BENCH.layer_classes(la.problem)]
    assert [la for la in sample if la in mine] == mine[::3]


def _row(network: str, case: str, ratio: float, classes: list[str], n: int = 32,
         held: bool = False) -> dict:
    return {"network": network, "layer": f"{network}-{ratio}", "case": case, "n": n,
            "key": f"k{ratio}", "classes": classes, "ratio": ratio,
            "ratio_heuristics": ratio / 2, "wall_ratio": ratio * 2, "held_out": held}


def test_summaries_per_case_network_and_class_name_the_worst_layers() -> None:
    rows = [_row("a", "FP16-F-NHWC", 0.5, ["plain"]), _row("a", "FP16-F-NHWC", 2.0, ["grouped"]),
            _row("b", "FP16-F-NHWC", 1.0, ["depthwise", "few-channel"], n=1),
            _row("b", "FP32-W-NCDHW", 8.0, ["3-D"])]
    out = ZOO_BENCH.report(rows)
    s = out["summary"]["FP16-F-NHWC"]
    assert s["layers"] == 3 and s["gpu_geomean"] == pytest.approx(1.0)
    assert s["gpu_geomean_heuristics"] == pytest.approx(0.5)
    assert s["wall_geomean"] == pytest.approx(2.0)
    assert s["max_ratio"] == 2.0 and [w["ratio"] for w in s["worst"]] == [2.0, 1.0, 0.5]
    assert s["worst"][0]["network"] == "a" and s["worst"][0]["layer"] == "a-2.0"
    assert out["summary"]["FP32-W-NCDHW"]["gpu_geomean"] == pytest.approx(8.0)
    assert out["by_batch"]["1"]["FP16-F-NHWC"]["layers"] == 1
    assert out["by_batch"]["32"]["FP16-F-NHWC"]["layers"] == 2
    assert out["by_network"]["b"]["gpu_geomean"] == pytest.approx(math.sqrt(8.0), rel=1e-4)
    assert set(out["classes"]) == {"plain", "grouped", "depthwise", "few-channel", "3-D"}
    assert out["classes"]["3-D"]["max_ratio"] == 8.0
    # Up to WORST layers are named.
    many = [_row("c", "BF16-B-NCHW", 1.0 + i, ["plain"]) for i in range(9)]
    assert len(ZOO_BENCH.report(many)["summary"]["BF16-B-NCHW"]["worst"]) == ZOO_BENCH.WORST


def test_held_out_networks_are_reported_apart() -> None:
    import argparse

    rows = [_row("a", "FP16-F-NHWC", 0.5, ["plain"]),
            _row("h", "FP16-F-NHWC", 4.0, ["plain"], held=True)]

    class _Handle:
        compilations = 2

    handles = {"ieee": _Handle(), "tf32": None}
    args = argparse.Namespace(repeats=5, warmup=1, held_out=True, every=1)
    versions = ZOO_BENCH._versions
    ZOO_BENCH._versions = lambda handles: {"device": "none", "driver": "", "torch": "",
                                           "cudnn": 0}
    try:
        result = ZOO_BENCH._result(args, handles, rows, [{"key": "x"}], [], [], 0.0)
    finally:
        ZOO_BENCH._versions = versions
    assert result["networks"] == ["a"] and result["held_out"]["networks"] == ["h"]
    assert result["summary"]["FP16-F-NHWC"]["gpu_geomean"] == pytest.approx(0.5)
    assert result["held_out"]["summary"]["FP16-F-NHWC"]["gpu_geomean"] == pytest.approx(4.0)
    assert result["compiles"] == 2 and result["errors"] == 1
    md = ZOO_BENCH.markdown(result)
    assert "held out: per case" in md and "| FP16-F-NHWC | 1 | 4.00 | 2.00 | 8.00 |" in md


def test_the_sleep_covers_the_queued_calls() -> None:
    assert ZOO_BENCH.sleep_ms_for(0.05, 20) == pytest.approx(3.0)
    assert ZOO_BENCH.sleep_ms_for(500.0, 20) == 2000.0


def test_list_needs_no_gpu() -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "zoo.py"), "--list", "--held-out"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == len(COUNTS) + len(HELD_OUT)
    assert "r3d_18 (held out): 11 layers; 3-D 11, few-channel 1" in out
    # A class alone: each network's layers of it.
    proc = subprocess.run([sys.executable, str(BENCH / "zoo.py"), "--list", "--held-out",
                           "--classes", "few-channel"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "r3d_18 (held out): 1 layers; 3-D 1, few-channel 1" in proc.stdout.splitlines()
    assert all("few-channel" in line for line in proc.stdout.splitlines())


@pytest.mark.parametrize("argv", [["--types", "FP8"], ["--directions", "X"],
                                  ["--layouts", "NCDHW"], ["--batches", "x"],
                                  ["--batches", "0"], ["--networks", "alexnet"],
                                  ["--every", "0"], ["--classes", "odd"]])
def test_a_malformed_command_line_exits_3_in_one_line(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "zoo.py"), *argv], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("zoo: ")


def test_held_out_layers_stay_out_of_the_ranking_fit(tmp_path: Path) -> None:
    from miopenkernels.builder.manifest import held_out_keys, zoo_manifests
    from miopenkernels.builder.ranking import load_samples

    keys = held_out_keys()
    assert [p.stem for p in zoo_manifests(held_out=True)] == sorted(HELD_OUT)
    assert len(zoo_manifests()) == len(COUNTS)
    stem = next(p for p in _layers("r3d_18") if p.c == 3)  # r3d_18's own 3x7x7 stem
    for direction in "FBW":
        for layout, dtype in (("NCDHW", "FP32"), ("NDHWC", "FP16"), ("NDHWC", "BF16")):
            p = replace(stem, n=1, direction=direction, in_type=dtype, wei_type=dtype,
                        out_type=dtype, in_layout=layout, wei_layout=layout, out_layout=layout)
            assert p.key() in keys
    # A layer that a tuned network also has (ResNeXt-101's stem is ResNet-50's) stays in.
    shared = next(p for p in _layers("resnext101_64x4d") if p.c == 3)
    assert shared.with_batch(1).key() not in keys
    tuned = {p.with_batch(1).key() for n in COUNTS for p in _layers(n)}
    assert keys and not keys & tuned
    # The fit's inputs: a FindDb record of a held-out layer (at any batch) is left out.
    held = ConvProblem.from_key(next(k for k in sorted(keys) if k.endswith("-NCHW-FP32-F")
                                     and "_g" not in k)).with_batch(8)
    kept = _layers("resnet50")[1].with_batch(8)
    folder = tmp_path / "sm9084"
    folder.mkdir()
    (folder / "sm9084.HIP.fdb.txt").write_text(
        "".join(f"{p.key()}=ConvDirectFwd:1.5,0,miopenConvolutionFwdAlgoDirect\n"
                for p in (held, kept)))
    samples = load_samples([], [folder])
    assert [s.problem.key() for s in samples] == [kept.key()]


def test_picks_count_first_choices_per_class_without_a_gpu() -> None:
    layers = ZOO_BENCH.load_layers(["dcgan"])
    out = ZOO_BENCH.picks(layers, "sm90-132", ["FP16"], ["F"], ["NHWC"], [1])
    classes = out["classes"]
    assert out["target"] == "sm90-132" and not out["no_solver"]
    assert classes["all"]["problems"] == COUNTS["dcgan"]
    assert classes["transposed"]["problems"] == 5 and classes["few-channel"]["problems"] == 3
    assert all(0 <= e["tensor_cores"] <= e["problems"] and e["no_solver"] == 0
               for e in classes.values())
    assert classes["plain"]["tensor_cores"] == classes["plain"]["problems"]  # FP16 NHWC GEMMs
    assert sum(out["first_choices"].values()) == COUNTS["dcgan"] and "" not in out["first_choices"]
    # A 2-D layer past 32-bit offsets runs a chunk of images at a time, on the tensor cores.
    big = [la for la in ZOO_BENCH.load_layers(["esrgan"]) if la.name == "conv_last"]
    out = ZOO_BENCH.picks(big, "sm90-132", ["FP16"], ["F"], ["NCHW"], [32])
    assert out["classes"]["all"] == {"problems": 1, "no_solver": 0, "tensor_cores": 1}
    # A 3-D one too (3D U-Net's input layer: y holds 2**31 elements at batch 32).
    big = [la for la in ZOO_BENCH.load_layers(["unet3d"])
           if la.problem.c == 1 and la.problem.in_spatial == (128, 128, 128)]
    out = ZOO_BENCH.picks(big[:1], "sm90-132", ["FP16"], ["F"], ["NCHW"], [32])
    assert out["classes"]["all"] == {"problems": 1, "no_solver": 0, "tensor_cores": 1}
    # One no solver takes (a single image past 2**31 elements: no chunk fits) is named.
    huge = replace(big[0], problem=replace(big[0].problem, k=2**16))
    out = ZOO_BENCH.picks([huge], "sm90-132", ["FP16"], ["F"], ["NCHW"], [32])
    assert out["classes"]["all"] == {"problems": 1, "no_solver": 1, "tensor_cores": 0}
    assert out["no_solver"][0].startswith(f"unet3d/{big[0].name} ")
    assert out["first_choices"] == {"": 1}


def test_picks_with_the_library_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--library`: the choices of a runtime where cuBLAS loads (solvers.offer_library): the
    SD VAE's 8 -> 8 1x1 layer comes to the library, its 4 -> 4 one to the FP32-unit kernels,
    in both layouts (blas_1x1.NARROW_POINTWISE); without it neither is the library's."""
    from miopenkernels.solvers import blas_1x1

    monkeypatch.setattr(blas_1x1, "_offered", [False])  # offer_library sets it: undone after
    layers = [la for la in ZOO_BENCH.load_layers(["sd15_vae"])
              if la.name in ("quant_conv", "post_quant_conv")]
    assert len(layers) == 2
    plain = ZOO_BENCH.picks(layers, "sm90-132", ["FP32"], ["F", "B"], ["NCHW", "NHWC"], [8])
    assert not any(s.startswith("ConvBlas") for s in plain["first_choices"])
    out = ZOO_BENCH.picks(layers, "sm90-132", ["FP32"], ["F", "B"], ["NCHW", "NHWC"], [8],
                          library=True)
    for name, first in out["by_problem"].items():
        want = "ConvBlasGemm1x1" if name.startswith("sd15_vae/quant_conv ") else "ConvTritonFma"
        assert first.startswith(want), (name, first)
    assert out["classes"]["all"]["tensor_cores"] == 4  # the Triton kernels', not the library's
