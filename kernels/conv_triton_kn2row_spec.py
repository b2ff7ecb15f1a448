"""What the kn2row solvers (solvers/triton_kn2row.py) need, as plain data: a 2-D layer of few
output channels as one 1x1 GEMM over every filter tap, then a sum of shifted taps.

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes and
strides are those of `conv_triton_spec` (the layer's forward geometry: in backward data x is
dx and y dy).

A layer's output of few channels (a forward of 1-8 filters, a UNet's or VAE's image or latent
output; a backward data of 1-8 input channels, the same networks' latent and image inputs)
from many channels reads its input once per filter tap in a direct or implicit-GEMM kernel,
and on matrix cores pads its few output channels to a whole block. kn2row (Anderson et al.,
"Low-memory GEMM-based convolution algorithms", 2017) reads the input once: the 1x1 GEMM of
the input's channels against every tap's filters at once (J = R*S*KO columns, KO the output's
channels) writes Z, one plane per (tap, output channel), at every input pixel; the output is
then, per tap, Z shifted by the tap's offset, summed (`tap_sum`).
- Forward: Z[n, j, h, w] = sum over c of x[n, c, h, w] * w[k, c, r, s], and
  y[n, k, p, q] = sum over (r, s) of Z[n, j(r, s, k), p*st - pad + r*dil, ...].
- Backward data: Z[n, j, p, q] = sum over k of dy[n, k, p, q] * w[k, c, r, s], and
  dx[n, c, h, w] = sum over (r, s) of Z[n, j(r, s, c), (h + pad - r*dil) / st, ...] where
  that divides and falls inside dy.
j(r, s, o) = ((R-1-r)*S + (S-1-s))*KO + o: the taps in flipped order, as the flip kernel
(kernels/conv_triton_flip.py, whose object the few-filter backward data ships) writes the
GEMM's filters into the workspace (`gemm_filter_values`). The tap sum reads the taps with
`tap_values`' multiplier, offset, step and divisor per axis.

The GEMM is one of a problem of its own (`gemm_sizes`: a forward 1x1 convolution at stride 1,
J filters over the reduction's channels, on the input's pixels), which the implicit GEMM's
objects or the GEMM library run. Z is FP32 (the layers are FP32), in the layer's layout, in
the workspace after the GEMM's filters (`workspace_parts`), at most MAX_Z_BYTES.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, typed_signature

TYPES = ("FP32",)
TAP_SUM = "tap_sum"
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    TAP_SUM: (("z_ptr", "ptr"), ("y_ptr", "ptr"),
              *((name, "i32") for name in (
                  "N", "KO", "P", "Q", "HZ", "WZ", "R", "S", "mul_h", "mul_w", "off_h",
                  "off_w", "step_h", "step_w", "div_h", "div_w", "szn", "szc", "szh", "szw",
                  "syn", "syk", "syh", "syw")),
              ("BLOCK", "constexpr"), ("CHANNELS_LAST", "constexpr")),
}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {TAP_SUM: ()}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset({TAP_SUM})
#: The tap sum's tile: an output element a lane, 512 a program on four warps.
TAP_BLOCK = 512
TAP_WARPS = 4
#: The most output channels taken (the GEMM's columns are R*S times as many).
MAX_OUTPUT_CHANNELS = 8
#: The most filter taps (7x7).
MAX_TAPS = 49
#: The least channels of the reduction (below it the direct kernels read little anyway).
MIN_REDUCTION = 16
#: The largest Z the workspace holds, but for a Z no larger than the GEMM's input (R*S*KO
#: columns at most its channels: a VAE encoder's 3-channel input at 512x512 and batch 32 needs
#: 906 MB beside dy's 4.3 GB); larger problems are not taken.
MAX_Z_BYTES = 512 << 20
_INT32_MAX = 2**31 - 1


def output_channels(direction: str, sizes: Mapping[str, int]) -> int:
    """KO: the layer's filters in forward, its input channels in backward data."""
    return sizes["K"] if direction == "F" else sizes["C"]


def gemm_sizes(direction: str, sizes: Mapping[str, int]) -> dict[str, int]:
    """The GEMM as a 1x1 forward problem's sizes: J = R*S*KO filters over the reduction's
    channels (C in forward, K in backward data), on the GEMM input's pixels (x's in forward,
    dy's in backward data)."""
    z = sizes
    taps = z["R"] * z["S"]
    if direction == "F":
        n, c, h, w = z["N"], z["C"], z["H"], z["W"]
    else:
        n, c, h, w = z["N"], z["K"], z["P"], z["Q"]
    return {"N": n, "C": c, "H": h, "W": w, "K": taps * output_channels(direction, z),
            "P": h, "Q": w, "R": 1, "S": 1, "G": 1, "stride_h": 1, "stride_w": 1,
            "pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1}


def z_bytes(direction: str, sizes: Mapping[str, int]) -> int:
    g = gemm_sizes(direction, sizes)
    return g["N"] * g["H"] * g["W"] * g["K"] * 4


def filter_bytes(direction: str, sizes: Mapping[str, int]) -> int:
    g = gemm_sizes(direction, sizes)
    return g["K"] * g["C"] * 4


def applies(direction: str, sizes: Mapping[str, int], wide_input: bool = False) -> bool:
    """One group; forward or backward data of 1..MAX_OUTPUT_CHANNELS output channels from at
    least MIN_REDUCTION, 2..MAX_TAPS filter taps, a Z of at most MAX_Z_BYTES or no larger than
    the GEMM's input (whose offsets are then within 32 bits too, but for a GEMM that reads its
    input with 64-bit offsets: `wide_input`, the GEMM library's), Z's and the output's offsets
    within 32 bits (the tap sum's)."""
    z = sizes
    if direction not in ("F", "B") or z["G"] != 1:
        return False
    ko = output_channels(direction, z)
    reduction = z["C"] if direction == "F" else z["K"]
    taps = z["R"] * z["S"]
    if not 1 <= ko <= MAX_OUTPUT_CHANNELS or reduction < MIN_REDUCTION or \
            not 2 <= taps <= MAX_TAPS:
        return False
    nbytes = z_bytes(direction, z)
    g = gemm_sizes(direction, z)
    source = g["N"] * g["C"] * g["H"] * g["W"]
    pixels = z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"]
    within = nbytes <= MAX_Z_BYTES or (g["K"] <= g["C"] and (wide_input or
                                                             source <= _INT32_MAX))
    return within and nbytes // 4 <= _INT32_MAX and z["N"] * ko * pixels <= _INT32_MAX


def workspace_parts(direction: str, sizes: Mapping[str, int], align: int
                    ) -> tuple[dict[str, int], int]:
    """({"ws_w": offset, "ws_z": offset}, total bytes): the GEMM's filters, then Z, each
    part rounded up to `align` bytes."""
    def up(n: int) -> int:
        return -(-n // align) * align

    w = up(filter_bytes(direction, sizes))
    return {"ws_w": 0, "ws_z": w}, w + up(z_bytes(direction, sizes))


def gemm_filter_values(direction: str, sizes: Mapping[str, int],
                       w_strides: tuple[int, int, int, int]) -> dict[str, int]:
    """The flip kernel's i32 arguments (kernels/conv_triton_flip.py: src[k, c, r, s] into
    dst[c, k, R-1-r, S-1-s] at the strides given): the layer's filters into the GEMM's
    [J][reduction] filters, j = ((R-1-r)*S + (S-1-s))*KO + o."""
    z = sizes
    k, c, r, s = z["K"], z["C"], z["R"], z["S"]
    if direction == "F":  # o = k, the reduction c
        sdc, sdk = 1, c
        tap = k * c
    else:  # o = c, the reduction k
        sdc, sdk = k, 1
        tap = c * k
    values = {"K": k, "C": c, "R": r, "S": s}
    values.update(zip(("ssk", "ssc", "ssr", "sss"), (int(v) for v in w_strides), strict=True))
    values.update({"sdc": sdc, "sdk": sdk, "sdr": s * tap, "sds": tap})
    return values


def z_strides(direction: str, sizes: Mapping[str, int], channels_last: bool
              ) -> tuple[int, int, int, int]:
    """Z's strides in (n, j, h, w) order, in the layer's layout (the GEMM writes it so)."""
    g = gemm_sizes(direction, sizes)
    j, h, w = g["K"], g["H"], g["W"]
    if channels_last:
        return (h * w * j, 1, w * j, j)
    return (j * h * w, h * w, w, 1)


def tap_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]], channels_last: bool
               ) -> dict[str, int]:
    """The tap sum's i32 arguments: the output (y in forward, dx in backward data), Z, and per
    axis the source pixel (o*mul + off + r*step) / div of output pixel o and tap r."""
    z = sizes
    g = gemm_sizes(direction, z)
    if direction == "F":
        out, (p, q) = strides["y"], (z["P"], z["Q"])
        axes = {a: (z[f"stride_{a}"], -z[f"pad_{a}"], z[f"dil_{a}"], 1) for a in "hw"}
    else:
        out, (p, q) = strides["x"], (z["H"], z["W"])
        axes = {a: (1, z[f"pad_{a}"], -z[f"dil_{a}"], z[f"stride_{a}"]) for a in "hw"}
    values = {"N": z["N"], "KO": output_channels(direction, z), "P": p, "Q": q,
              "HZ": g["H"], "WZ": g["W"], "R": z["R"], "S": z["S"]}
    for a in "hw":
        mul, off, step, div = axes[a]
        values.update({f"mul_{a}": mul, f"off_{a}": off, f"step_{a}": step, f"div_{a}": div})
    values.update(zip(("szn", "szc", "szh", "szw"), z_strides(direction, z, channels_last),
                      strict=True))
    values.update(zip(("syn", "syk", "syh", "syw"), (int(v) for v in out), strict=True))
    return values


def tap_grid(direction: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    z = sizes
    pixels = z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"]
    return cdiv(z["N"] * output_channels(direction, z) * pixels, TAP_BLOCK), 1, 1


def tap_signature(dtype: str, channels_last: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of the tap sum's object for `triton.compiler.ASTSource`."""
    return typed_signature(ARGS[TAP_SUM], dtype, {"BLOCK": TAP_BLOCK,
                                                   "CHANNELS_LAST": int(channels_last)})
