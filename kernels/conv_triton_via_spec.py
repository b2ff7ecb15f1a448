"""The Via tables of the Triton implicit-GEMM kernels: per target kind, the cases whose
problems in one layout run faster on the other layout's kernels with their operands transposed
around them (`via_other_layout`, `via_cases`), as plain data.

Standard library only, so the runtime reads it without Triton; `conv_triton_spec` re-exports
every name here.
"""

from __future__ import annotations

from collections.abc import Mapping

from .conv_triton_grid_spec import kernel_for, packed
from .conv_triton_kernels_spec import KERNELS

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
#: Per target kind, NCHW cases whose 1x1 layers at a stride go through the NHWC kernels at
#: any output size (VIA_NHWC_ONE_TAP stops at its pixels) where C*K/(C+K) is at least this.
#: sm90 FP16 backward data: the NCHW kernel there took 3.5-9.1x the NHWC kernel's time on the
#: zoo's such layers above 784 output pixels with 256-1024 channels (RetinaNet's and
#: DeepLabV3's downsampling), the route estimated at 0.19-0.54 of the NCHW kernel's time
#: (0.20-0.58 at the similar layers' 90% point; bench/via_estimate.py --only strided-1x1 on
#: zoo_h200-b-nchw-ef1efe1 and zoo_h200-fb-9ec5af9: via_estimate_strided_b_h200.json); on
#: RegNet's 32 -> 48 projection (C*K/(C+K) 19) 1.50. sm90 FP16 backward weights from 785 dy
#: pixels (VIA_NHWC_STRIDED_FROM): the same estimate (via_estimate_strided_w_h200.json) puts
#: RetinaNet's three downsampling layers (850-13,600 pixels, 3.84x cuDNN at 25x34) and
#: DeepLabV3's and FCN's layer2.0 at 0.28-0.82 of the NCHW kernel's time (0.29-0.91
#: pessimistic); the 784-pixel ones of ResNet-50 and ResNeXt at 0.93-0.96 (1.20-1.23
#: pessimistic) stay on NCHW, RegNet's 32 -> 48 projection at 2.05 too.
VIA_NHWC_STRIDED_ONE_TAP: dict[str, dict[str, int]] = {"sm90": {"FP16-B": 128, "FP16-W": 128}}
#: Per target kind, the fewest dy pixels per image a case of VIA_NHWC_STRIDED_ONE_TAP takes
#: from (none: any size).
VIA_NHWC_STRIDED_FROM: dict[str, dict[str, int]] = {"sm90": {"FP16-W": 785}}
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
#: batch 32); the transposes read and write dy and dx once each. BF16 backward data, on an
#: estimate (bench/via_estimate.py --from-nhwc: the NCHW kernel's time measured on the layer
#: plus the copies; via_estimate_fewc_b_bf16_h200.json): 0.37-0.46 of the NHWC time on the 11
#: stride-2 stems the NHWC implicit GEMM ran at 1.57-2.23x cuDNN (0.69-0.83 with the route),
#: 0.75-0.93 on the 6 the few-channel kernel ran, 1.14 and 1.42 on ConvNeXt's patchify and
#: DCGAN's 64x64 head, which FP16's rule takes too. Forward (0.77, the patchify and
#: 4-channel layers the other way) stays.
VIA_NCHW_FEW_C: dict[str, dict[str, int]] = {
    "sm90": {"FP16-W": 2, "BF16-W": 2, "FP16-B": 2, "BF16-B": 2},
}
#: Per target kind, the NCHW cases whose packed grouped problems (`packed`: fewer than 16
#: channels and filters a group) the NHWC packed kernels compute faster, with the transposes.
#: sm90, 16-bit backward weights: over the zoo's 13 such layers (ResNeXt's and RegNet's grouped
#: 3x3) the NHWC packed kernel took 0.35-0.58 of the NCHW one's time in FP16 (H200, batch 32:
#: bench/results/zoo_h200-w-nchw-ef1efe1 against zoo_h200-w-9ec5af9), and with the copies at
#: the cost per byte the Via solvers' other layers of a similar size measured, the route
#: 0.44-0.87 (geomean 0.61; 0.45-0.97 at those layers' 90% point): bench/via_estimate.py,
#: bench/results/via_estimate_packed_w_h200.json; BF16 0.48-0.73 on the 3 of its sample
#: (via_estimate_packed_w_bf16_h200.json). Forward and backward data (0.79-1.92) stay.
VIA_NHWC_PACKED: dict[str, frozenset[str]] = {"sm90": frozenset({"FP16-W", "BF16-W"})}


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
    VIA_NHWC_ONE_TAP's output pixels, at a stride by VIA_NHWC_STRIDED_ONE_TAP's channels from
    VIA_NHWC_STRIDED_FROM's pixels),
    below that by VIA_NCHW_FEW_C; the packed kernels' grouped problems by VIA_NHWC_PACKED
    alone."""
    if packed(sizes):
        return layout == "NCHW" and case in VIA_NHWC_PACKED.get(kind, frozenset())
    if sizes["C"] >= VIA_NHWC_MIN_C:
        taps = (VIA_NHWC if layout == "NCHW" else VIA_NCHW).get(kind, {}).get(case)
    elif layout == "NHWC" and KERNELS[kernel_for(case[-1], sizes)].get("few_channels"):
        taps = VIA_NCHW_FEW_C.get(kind, {}).get(case)  # measured on the few-channel kernels
    else:
        taps = None
    if taps is not None and sizes["R"] * sizes["S"] >= taps:
        return True
    if layout != "NCHW" or sizes["R"] * sizes["S"] != 1 or sizes["C"] < VIA_NHWC_MIN_C:
        return False
    pixels = VIA_NHWC_ONE_TAP.get(kind, {}).get(case)
    if pixels is not None and sizes["P"] * sizes["Q"] <= pixels:
        return True
    least = VIA_NHWC_STRIDED_ONE_TAP.get(kind, {}).get(case)
    fewest = VIA_NHWC_STRIDED_FROM.get(kind, {}).get(case, 0)
    c, k = sizes["C"], sizes["K"]
    return least is not None and max(sizes["stride_h"], sizes["stride_w"]) > 1 and \
        sizes["P"] * sizes["Q"] >= fewest and c * k >= least * (c + k)
