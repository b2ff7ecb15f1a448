#!/usr/bin/env bash
# On the GPU machine, one call of under 600 s: 2-D forward layers of 1-8 filters (image and
# latent outputs: the UNet's 320 -> 4, the VAE's 128 -> 3 and 512 -> 8, 1x1 masks) on the
# few-filter direct kernel (solvers/triton_fma.py, ConvTritonFmaFewKFwd) and on what ran them
# before, measured in place. The sm90-132 package of the default manifests first
# (bench/_gpu_env.sh `sm90_package`; NO_PACKAGE=1 skips it), then:
#   grid/    the GPU grid's cases of the few-filter solvers (GRID_SOLVER, prefixes), against
#            float64, Triton hidden;  GRID_S
#   alt.*    bench/solver_alternatives.py: the few-filter kernel, the implicit GEMM (IEEE, three
#            TF32 products, padded, through NHWC; a 16-wide filter tile too) and the GEMM
#            library side by side on every such layer of the zoo and the held-out networks,
#            FP32 (against IEEE cuDNN), FP16 and BF16, both layouts;  ALT_S
#   tiles.*  the same layers in FP32 on the few-filter kernel's tiles (its legal space around
#            the usual tile of each filter block);  TILES_S
#   zoo.*    find's pick against cuDNN on the zoo's few-channel class (layers of at most four
#            channels or filters; the held-out networks apart), FP32 (IEEE), FP16 and BF16
#            forward, both layouts;  ZOO_S
#   small.*  the same at batch 8 and 1 (not a default step);  SMALL_S
#   bw.*     the same class in FP32 backward data and weights at batch 32 (not a default
#            step);  BW_S
#   bw_small.*  the class in FP32 forward, backward data and weights at batch 8, both layouts
#            (ESRGAN's output past 32-bit offsets on the chunk solvers; not a default step);
#            BW_SMALL_S
#   wrw.*    bench/solver_alternatives.py on the same layers' FP32 backward weights: the
#            few-filter backward weights kernel (solvers/triton_fma_wrw.py) at its defaults,
#            the implicit GEMM (three TF32 products, IEEE, through NCHW) and the GEMM library,
#            both layouts (not a default step);  WRW_S
#   stems_wrw.*  the same on the zoo's layers of 1-4 channels: the few-channel backward
#            weights kernel (ConvTritonFmaFewCWrw), the few-channel kernels, the implicit GEMM
#            (not a default step);  STEMS_WRW_S
#   bwd.*    bench/solver_alternatives.py on FP32 backward data of the zoo's layers of 1-8
#            input channels or 1-4 filters: the flipped-filter solvers (solvers/
#            triton_fma_bwd.py) at their defaults (by phases at strides over 1; over depth
#            slices on the video stems), the three-product and IEEE implicit GEMM (2-D, 3-D),
#            the few-channel kernels, both layouts (not a default step);  BWD_S
#   video_f.*, video_w.*  the same on the video stems' (3-D, 1-4 channels) FP32 forward and
#            backward weights: the FP32-unit families over depth slices, the few-channel
#            3-D kernels, the three-product implicit GEMMs (not a default step);  VIDEO_S
#   wrw_tiles.*  the same on the backward weights kernel's tiles (its legal space around the
#            usual tile of each filter block, each at the split that fills the GPU; not a
#            default step);  WRW_TILES_S
#   planes_f.*, planes_b.*, planes_small.*, planes_half.*  the same on the zoo's NCDHW layers
#            of one depth tap at depth stride 1 (video stems, (2+1)-D spatial layers, X3D's
#            1x1x1 ones): the planes solvers (solvers/triton_planes.py: a 2-D launch per depth
#            slice) beside the 3-D families and the GEMM library, FP32 forward and backward
#            data at batch 32 (`planes`), the 1-4 channel stems at batch 8 and 1 and FP16 at
#            batch 32 (`planes_more`; neither a default step);  PLANES_S
#   depth_taps.*  the same on FP32 backward data of the 3-D layers of 1-4 channels and several
#            depth taps (R3D-18's 3x7x7 stem, 3D U-Net's first layer), both layouts, batch 32,
#            8 and 1: the depth-taps solvers (solvers/triton_depth_taps.py) beside the 3-D
#            families (not a default step);  TAPS_S
#   bwd_trial.*  bench/fewk_bwd_trial.py: backward data of layers of 1-8 input channels at
#            stride 1 as the few-filter forward on flipped filters, against cuDNN (not a
#            default step);  TRIAL_S
# Objects no package holds are compiled first on every core (builder.precompile), outside the
# timings. All at batch 32. A summary line per step; STEPS names the steps (default
# grid,alt,tiles,zoo):
#
#   bash bench/gpu_fewk.sh OUTDIR
#   STEPS=alt bash bench/gpu_fewk.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_fewk.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-grid,alt,tiles,zoo}"
want() { [[ ",$steps," == *",$1,"* ]]; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
if [ -z "${NO_PACKAGE:-}" ]; then
  sys=/tmp/sys
  sm90_package "$sys" "$out"
  export MIOPEN_SYSTEM_DB_PATH="$sys"
fi
# 2-D keys of 5 or more channels to 1-8 filters (backward keys name the output side first).
only='^([5-9]|[1-9][0-9]+)-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[1-8]-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-'
only_w='^[1-8]-[0-9]+-[0-9]+-[0-9]+x[0-9]+-([5-9]|[1-9][0-9]+)-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-'
fewk_tiles="128:2:32:1:4:1 256:2:16:1:4:1 128:2:64:1:8:1 256:2:32:1:8:1 64:4:32:1:4:1 \
128:4:16:1:4:1 128:4:32:1:8:1 32:4:64:1:4:1 64:4:32:1:4:2 256:4:16:1:8:1 64:8:16:1:4:1 \
128:8:16:1:8:1 32:8:32:1:4:1 64:8:32:1:8:1 32:8:16:1:4:1"
alt_solvers="ConvTritonFmaFewKFwd,ConvTritonImplicitGemmFwd,ConvTritonImplicitGemmTf32x3Fwd,\
ConvTritonImplicitGemmPaddedFwd,ConvTritonImplicitGemmViaNhwcFwd,ConvBlasGemm1x1Fwd,\
ConvTritonImplicitGemmFwd@128:16:64:8:4:3,ConvTritonImplicitGemmFwd@256:16:64:8:8:3,\
ConvTritonImplicitGemmPaddedFwd@128:16:64:8:4:3,ConvTritonImplicitGemmTf32x3Fwd@128:16:32:8:4:3"
tile_solvers="$(for t in $fewk_tiles; do printf 'ConvTritonFmaFewKFwd@%s,' "$t"; done)"
tile_solvers="${tile_solvers%,}"
wrw_tiles="64:2:64:1:4:1:0 32:2:128:1:4:1:0 128:2:32:1:4:1:0 64:2:32:1:4:1:0 128:2:64:1:8:1:0 \
64:4:32:1:4:1:0 32:4:64:1:4:1:0 128:4:16:1:4:1:0 32:4:32:1:4:1:0 64:4:64:1:8:1:0 \
32:8:32:1:4:1:0 16:8:64:1:4:1:0 64:8:16:1:4:1:0 32:8:16:1:4:1:0 32:8:64:1:8:1:0"
wrw_solvers="ConvTritonFmaFewKWrw,ConvTritonImplicitGemmTf32x3Wrw,ConvTritonImplicitGemmWrw,\
ConvTritonImplicitGemmViaNchwWrw,ConvTritonImplicitGemmViaNhwcWrw,ConvBlasGemm1x1Wrw"
stems_wrw_solvers="ConvTritonFmaFewCWrw,ConvTritonSmallCWrw,ConvTritonImplicitGemmTf32x3Wrw,\
ConvTritonImplicitGemmWrw,ConvTritonFmaFewCWrw@16:16:32:1:4:1:0,ConvTritonFmaFewCWrw@32:32:16:1:4:1:0,\
ConvTritonFmaFewCWrw@16:32:16:1:4:1:0,ConvTritonFmaFewCWrw@8:64:16:1:8:1:0,ConvTritonFmaFewCWrw@32:16:16:1:4:1:0"
bwd_solvers="ConvTritonFmaFewKBwd,ConvTritonFmaBwd,ConvTritonImplicitGemmTf32x3Bwd,\
ConvTritonImplicitGemmBwd,ConvTritonSmallCBwd,ConvTritonSmallCChunksBwd,\
ConvTritonFmaFewKSlicesBwd,ConvTritonImplicitGemmSlicesBwd,ConvTriton3dTf32x3Bwd,ConvTriton3dBwd"
video_solvers="ConvTritonFmaSlicesFwd,ConvTriton3dSmallCFwd,ConvTritonImplicitGemmTf32x3SlicesFwd,\
ConvTriton3dTf32x3Fwd"
video_w_solvers="ConvTritonFmaFewCSlicesWrw,ConvTriton3dSmallCWrw,\
ConvTritonImplicitGemmTf32x3SlicesWrw,ConvTriton3dTf32x3Wrw"
planes_f_solvers="ConvTritonFmaPlanesFwd,ConvTritonFmaFewKPlanesFwd,\
ConvTritonImplicitGemmTf32x3PlanesFwd,ConvTritonImplicitGemmPlanesFwd,ConvTriton3dSmallCFwd,\
ConvTriton3dTf32x3Fwd,ConvTriton3dFwd,ConvTriton3dViaNdhwcFwd,ConvBlasGemm1x1Fwd"
planes_b_solvers="ConvTritonImplicitGemmTf32x3PlanesBwd,ConvTritonImplicitGemmPlanesBwd,\
ConvTritonFmaFewKPlanesBwd,ConvTritonFmaPlanesBwd,ConvTriton3dSmallCBwd,ConvTriton3dTf32x3Bwd,\
ConvTriton3dBwd,ConvTriton3dViaNdhwcBwd,ConvBlasGemm1x1Bwd"
depth_taps_solvers="ConvTritonImplicitGemmTf32x3DepthTapsBwd,ConvTritonImplicitGemmDepthTapsBwd,\
ConvTriton3dTf32x3Bwd,ConvTriton3dBwd,ConvTriton3dSmallCBwd,ConvTriton3dSmallCChunksBwd,\
ConvTriton3dViaNdhwcTf32x3Bwd"
# 3-D backward keys of 2-9 depth taps and 1-4 input channels (the sixth field).
keys_depth_taps='^[0-9]+-[0-9]+-[0-9]+-[0-9]+-[2-9]x[0-9]+x[0-9]+-[1-4]-'
# 3-D keys of one depth tap, no depth padding, depth stride 1 (either direction's order).
keys_planes='^[0-9]+-[0-9]+-[0-9]+-[0-9]+-1x[0-9]+x[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+-0x[0-9]+x[0-9]+-1x[0-9]+x[0-9]+-'
keys_planes_stems_f='^[1-4]-[0-9]+-[0-9]+-[0-9]+-1x[0-9]+x[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+-0x[0-9]+x[0-9]+-1x[0-9]+x[0-9]+-'
keys_planes_stems_b='^[0-9]+-[0-9]+-[0-9]+-[0-9]+-1x[0-9]+x[0-9]+-[1-4]-[0-9]+-[0-9]+-[0-9]+-[0-9]+-0x[0-9]+x[0-9]+-1x[0-9]+x[0-9]+-'
# 3-D keys of 1-4 channels: forward (the first field), backward (the sixth: output side first).
keys_3d_f='^[1-4]-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+x[0-9]+-'
keys_3d_b='^[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+x[0-9]+-[1-4]-'

wrw_tile_solvers="$(for t in $wrw_tiles; do printf 'ConvTritonFmaFewKWrw@%s,' "$t"; done)"
wrw_tile_solvers="${wrw_tile_solvers%,}"

# precompile SOLVERS TYPES DIRECTION REGEX: every object the named solvers (NAME@tile as
# solver_alternatives reads it) need on the zoo's layers whose keys in the direction match
# REGEX, compiled on every core into the user cache.
precompile() {
  python3 - "$1" "$2" "$4" "$3" <<'PY' 2>&1 | tail -2
import re, sys, time
sys.path.insert(0, "bench")
from pathlib import Path
from _zoo_layers import layer_problem, load_layers
from solver_alternatives import _named, filling_split, tiled_params
from miopenkernels.builder.precompile import precompile
from miopenkernels.solvers import launch_jobs, with_companions
from miopenkernels.target import Target
t = Target("sm90", 132)
names, types, only = sys.argv[1].split(","), sys.argv[2].split(","), re.compile(sys.argv[3])
direction = sys.argv[4]
jobs = set()
layouts = __import__("os").environ.get("ALT_LAYOUTS", "NCHW,NHWC").split(",")
batches = [int(b) for b in __import__("os").environ.get("ALT_BATCHES", "32").split(",")]
for layer in load_layers(held_out=True):
    for ty in types:
        for lay, n in ((lay, n) for lay in layouts for n in batches):
            p = layer_problem(layer, ty, direction, lay, n)
            if p is None or not only.search(p.key()):
                continue
            for name in names:
                base, _, tile = name.partition("@")
                s = _named(base)
                if not s.is_applicable(p, t):
                    continue
                params = tuple(s.default_params(p, t)) if s.tunable else ()
                if tile:
                    params = filling_split(s, p, tiled_params(params, tile), t)
                    if not s.params_valid(p, t, params):
                        continue
                try:
                    jobs.update(launch_jobs(s, p, params, t))
                except Exception as e:  # a library solver has no objects
                    print("no jobs:", name, type(e).__name__)
t0 = time.time()
cache = Path(__import__("os").environ["MIOPEN_CUSTOM_CACHE_DIR"]) / "sm9084.ukdb"
print("precompiled", precompile(with_companions(jobs), cache, 16), round(time.time() - t0, 1), "s")
PY
}

if want grid; then
  GRID_SOLVER="${GRID_SOLVER:-ConvTritonFmaFewK}" TESTS_S="${GRID_S:-100}" \
    bash "$here/gpu_test_all.sh" "$out/grid" > "$out/grid.log" 2>&1
  stamp "grid: $(grep -E 'passed|failed' "$out/grid/gpu_tests.txt" | tail -1)"
fi
alternatives() {  # alternatives NAME LIMIT TYPES SOLVER,... [DIRECTION [KEYS]]
  local name="$1" limit="$2" types="$3" solvers="$4" direction="${5:-F}" keys="$only"
  [ "$direction" = W ] && keys="$only_w"
  keys="${6:-$keys}"
  stamp "$name precompile: $(precompile "$solvers" "$types" "$direction" "$keys" | tail -1)"
  timeout "$limit" python3 bench/solver_alternatives.py --solvers "$solvers" \
    --types "$types" --directions "$direction" --layouts "${ALT_LAYOUTS:-NCHW,NHWC}" \
    --batches "${ALT_BATCHES:-32}" --held-out \
    --only "$keys" --budget-s "$(( limit - 15 ))" --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "$name rc=$?"; tail -30 "$out/$name.log"
}
if want alt; then
  alternatives alt "${ALT_S:-200}" FP32,FP16,BF16 "$alt_solvers"
fi
if want tiles; then
  alternatives tiles "${TILES_S:-120}" FP32 "$tile_solvers"
fi
if want zoo; then
  limit="${ZOO_S:-170}"
  timeout "$limit" python3 bench/zoo.py --types FP32,FP16,BF16 --directions F \
    --layouts NCHW,NHWC --batches 32 --classes few-channel --held-out \
    --budget-s "$(( limit - 20 ))" --out "$out/zoo" > "$out/zoo.log" 2>&1
  stamp "zoo rc=$? $(grep -E '^(FP|BF)[0-9]+-' "$out/zoo.log" | head -6 | tr '\n' ';')"
fi
class_run() {  # class_run NAME LIMIT zoo.py-ARGS...
  local name="$1" limit="$2"; shift 2
  timeout "$limit" python3 bench/zoo.py --classes few-channel --held-out "$@" \
    --budget-s "$(( limit - 20 ))" --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "$name rc=$?"; grep -A16 "zoo: per case" "$out/$name.log" | head -18
}
if want small; then
  class_run zoo_b8_b1 "${SMALL_S:-160}" --types FP32,FP16,BF16 --directions F \
    --layouts NCHW,NHWC --batches 8,1
fi
if want bwd_trial; then
  limit="${TRIAL_S:-120}"
  timeout "$limit" python3 bench/fewk_bwd_trial.py --held-out --budget-s "$(( limit - 20 ))" \
    --out "$out/bwd_trial" > "$out/bwd_trial.log" 2>&1
  stamp "bwd_trial rc=$?"; tail -4 "$out/bwd_trial.log"
fi
if want bw_small; then
  class_run zoo_fp32_b8 "${BW_SMALL_S:-150}" --types FP32 --directions F,B,W \
    --layouts NCHW,NHWC --batches 8
fi
if want wrw; then
  alternatives wrw "${WRW_S:-150}" FP32 "$wrw_solvers" W
fi
if want stems_wrw; then
  # Backward keys of 1-4 input channels (the fifth field).
  alternatives stems_wrw "${STEMS_WRW_S:-150}" FP32 "$stems_wrw_solvers" W \
    '^[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[1-4]-'
fi
if want bwd; then
  # Backward keys of 1-4 filters (the first field) or 1-8 input channels (the fifth; any
  # stride: the flipped-filter solvers' phases), and 3-D ones of 1-4 input channels (the video
  # stems: their depth slices).
  alternatives bwd "${BWD_S:-150}" FP32 "$bwd_solvers" B \
    "^([1-4]-|[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[1-8]-)|${keys_3d_b}"
fi
if want video; then
  # The video stems' forward and backward weights on the FP32-unit families over their depth
  # slices, the few-channel 3-D kernels and the three-product implicit GEMMs.
  alternatives video_f "${VIDEO_S:-100}" FP32 "$video_solvers" F "$keys_3d_f"
  alternatives video_w "${VIDEO_S:-100}" FP32 "$video_w_solvers" W "$keys_3d_b"
fi
if want planes; then
  # NCDHW alone ("NCHW" names the planar layout of 3-D layers too).
  limit="${PLANES_S:-120}"
  ALT_LAYOUTS=NCHW alternatives planes_f "$limit" FP32 "$planes_f_solvers" F "$keys_planes"
  ALT_LAYOUTS=NCHW alternatives planes_b "$limit" FP32 "$planes_b_solvers" B "$keys_planes"
fi
if want planes_more; then
  limit="${PLANES_S:-120}"
  ALT_LAYOUTS=NCHW ALT_BATCHES=8,1 alternatives planes_small_f "$(( limit / 2 ))" FP32 \
    "$planes_f_solvers" F "$keys_planes_stems_f"
  ALT_LAYOUTS=NCHW ALT_BATCHES=8,1 alternatives planes_small_b "$(( limit / 2 ))" FP32 \
    "$planes_b_solvers" B "$keys_planes_stems_b"
  ALT_LAYOUTS=NCHW alternatives planes_half_f "$(( limit / 2 ))" FP16 "$planes_f_solvers" F \
    "$keys_planes"
  ALT_LAYOUTS=NCHW alternatives planes_half_b "$(( limit / 2 ))" FP16 "$planes_b_solvers" B \
    "$keys_planes"
fi
if want depth_taps; then
  ALT_BATCHES=32,8,1 alternatives depth_taps "${TAPS_S:-150}" FP32 "$depth_taps_solvers" B \
    "$keys_depth_taps"
fi
if want wrw_tiles; then
  alternatives wrw_tiles "${WRW_TILES_S:-150}" FP32 "$wrw_tile_solvers" W
fi
if want bw; then
  class_run zoo_fp32_bw "${BW_S:-150}" --types FP32 --directions B,W --layouts NCHW,NHWC \
    --batches 32
fi
stamp "done"
