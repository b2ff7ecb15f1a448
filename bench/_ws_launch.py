"""Host-side launch data of bench/_ws_kernel.py's trial kernels for bench/ws_conv.py: the
configurations it times, which problems the shift kernels run, their padded geometry, and
the launches (the zero-bordered copies, the kernel, backward weights' parts) as callables
over any tensors the kernels take (torch's on the GPU, the interpreter's arrays in
tests/integration/test_ws_kernel_interpret.py)."""

from __future__ import annotations

import math
from typing import Any

#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, warp_specialize[, persistent]). With the
#: loop specialised, num_warps is a consumer group's: Triton launches 3 groups (12 warps).
#: Persistent: SMS programs walk the tiles, the loop over tiles specialised.
CONFIGS = ((128, 128, 64, 4, 3, 1), (128, 256, 64, 4, 3, 1), (128, 128, 64, 4, 4, 1),
           (128, 64, 64, 4, 4, 1), (128, 128, 64, 4, 3, 1, 1), (128, 256, 64, 4, 3, 1, 1),
           (128, 128, 64, 4, 4, 0), (128, 256, 64, 8, 3, 0))
#: Backward weights' configurations (BLOCK_M filters, BLOCK_N channels, BLOCK_K rows a step):
#: specialised, the transposed dy box takes shared memory of its own (128x256 does not fit).
W_CONFIGS = ((128, 128, 64, 4, 3, 1), (128, 64, 64, 4, 4, 1), (64, 128, 64, 4, 4, 1),
             (128, 128, 64, 4, 4, 0), (64, 64, 64, 4, 4, 0))
PAD_BLOCK = (64, 64)  # pad_nhwc's BLOCK_R, BLOCK_C
SMS = 132  # parts of backward weights: enough (K, C, tap) tiles for two waves of the H100/H200


def config_name(cfg: tuple[int, ...]) -> str:
    bm, bn, bk, warps, stages, ws = cfg[:6]
    return f"{bm}x{bn}x{bk}w{warps}s{stages}" + ("ws" if ws else "") + \
        ("p" if len(cfg) > 6 and cfg[6] else "")


def programs(cfg: tuple[int, ...], tiles: int) -> tuple[tuple[int], int]:
    """(grid, PROGRAMS) of a configuration over `tiles` tiles: a program a tile, or SMS
    persistent programs."""
    if len(cfg) > 6 and cfg[6]:
        return (SMS,), SMS
    return (tiles,), 0


def eligible(p: Any) -> bool:
    """Whether the shift kernel runs a layer's problem in its direction."""
    if not (p.spatial_dim == 2 and p.groups == 1 and p.mode != "trans"
            and tuple(p.stride) == (1, 1) and p.c % 8 == 0 and p.k % 8 == 0):
        return False
    if p.direction == "B":  # dy's border dil*(R-1) - pad must not be negative
        return all(d * (f - 1) >= pad for d, f, pad in
                   zip(p.dilation, p.wei_shape[2:], p.pad, strict=True))
    return True


def geometry(p: Any) -> dict[str, int]:
    """The shift kernel's sizes for a problem: what it reads (C_in channels, H x W padded by
    top/left to Hp x Wp) and writes (C_out channels, Ho x Wo)."""
    (h, w), (ho, wo) = p.in_shape[2:], p.out_shape[2:]
    r, s = p.wei_shape[2:]
    dh, dw = p.dilation
    if p.direction == "W":  # x bordered as forward's; dy on the same grid (`parts`)
        src = {"C_in": p.c, "H": h, "W": w, "C_out": p.k, "Ho": ho, "Wo": wo}
        top, left = p.pad
    elif p.direction == "B":
        top, left = dh * (r - 1) - p.pad[0], dw * (s - 1) - p.pad[1]
        src = {"C_in": p.k, "H": ho, "W": wo, "C_out": p.c, "Ho": h, "Wo": w}
    else:
        top, left = p.pad
        src = {"C_in": p.c, "H": h, "W": w, "C_out": p.k, "Ho": ho, "Wo": wo}
    src.update(top=top, left=left, Hp=src["H"] + 2 * top, Wp=src["W"] + 2 * left, R=r, S=s,
               dil_h=dh, dil_w=dw, N=p.n)
    if (src["Hp"] - dh * (r - 1), src["Wp"] - dw * (s - 1)) != (src["Ho"], src["Wo"]):
        raise ValueError(f"not a stride-1 layer of symmetric padding: {p}")
    return src


def launches(kern: Any, g: dict[str, int], src: Any, w: Any, dst: Any, xp: Any,
              cfg: tuple[int, ...], backward: bool) -> tuple[Any, Any]:
    """(the padding copy, the shift kernel) as callables."""
    rows = g["N"] * g["Hp"] * g["Wp"]
    br, bc = PAD_BLOCK
    pad_grid = (math.ceil(rows / br), math.ceil(g["C_in"] / bc))

    def pad() -> None:
        kern.pad_nhwc[pad_grid](src, xp, g["H"], g["W"], g["C_in"], g["Hp"], g["Wp"], g["top"],
                                g["left"], rows, BLOCK_R=br, BLOCK_C=bc, num_warps=4)

    bm, bn, bk, warps, stages, ws = cfg[:6]
    grid, n_programs = programs(cfg, math.ceil(rows / bm) * math.ceil(g["C_out"] / bn))

    def conv() -> None:
        kern.conv2d_shift[grid](xp, w, dst, g["N"], g["C_in"], g["Hp"], g["Wp"], g["C_out"],
                                g["Ho"], g["Wo"], g["R"], g["S"], g["dil_h"], g["dil_w"],
                                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                BACKWARD_DATA=backward, WS=bool(ws), PROGRAMS=n_programs,
                                num_warps=warps, num_stages=stages)
    return pad, conv


def parts(g: dict[str, int], cfg: tuple[int, ...]) -> tuple[int, int]:
    """Backward weights' (parts, rows a part): enough parts for two waves of SMS programs, each
    part at least 16 steps of BLOCK_K rows (a multiple of BLOCK_K)."""
    bm, bn, bk = cfg[:3]
    rows = g["N"] * g["Hp"] * g["Wp"]
    tiles = math.ceil(g["C_out"] / bm) * math.ceil(g["C_in"] / bn) * g["R"] * g["S"]
    n = max(1, min(math.ceil(2 * SMS / tiles), rows // (16 * bk)))
    per = math.ceil(math.ceil(rows / n) / bk) * bk
    return math.ceil(rows / per), per


def launches_w(kern: Any, g: dict[str, int], x: Any, dy: Any, dw: Any, xp: Any, dyp: Any,
                ws: Any, cfg: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """Backward weights' (the two copies, the shift kernel, the parts' sum into dw)."""
    rows = g["N"] * g["Hp"] * g["Wp"]
    br, bc = PAD_BLOCK

    def pad() -> None:
        kern.pad_nhwc[(math.ceil(rows / br), math.ceil(g["C_in"] / bc))](
            x, xp, g["H"], g["W"], g["C_in"], g["Hp"], g["Wp"], g["top"], g["left"], rows,
            BLOCK_R=br, BLOCK_C=bc, num_warps=4)
        kern.pad_nhwc[(math.ceil(rows / br), math.ceil(g["C_out"] / bc))](
            dy, dyp, g["Ho"], g["Wo"], g["C_out"], g["Hp"], g["Wp"], 0, 0, rows,
            BLOCK_R=br, BLOCK_C=bc, num_warps=4)

    bm, bn, bk, warps, stages, wsp = cfg
    n_parts, per = parts(g, cfg)
    grid = (math.ceil(g["C_out"] / bm) * math.ceil(g["C_in"] / bn), g["R"] * g["S"], n_parts)

    def conv() -> None:
        kern.conv2d_shift_wrw[grid](xp, dyp, ws, rows, g["C_in"], g["C_out"], g["Wp"], g["R"],
                                    g["S"], g["dil_h"], g["dil_w"], per, BLOCK_M=bm,
                                    BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, WS=bool(wsp),
                                    num_warps=warps, num_stages=stages)

    def reduce() -> None:  # torch's sum over the parts ([parts][K][R][S][C], FP32)
        partials = ws[:n_parts * dw.numel()].view(n_parts, *dw.shape)
        dw.copy_(partials.sum(dim=0) if n_parts > 1 else partials[0])
    return pad, conv, reduce
