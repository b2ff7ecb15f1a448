"""Depthwise and few-channels-a-group convolutions as a memory-bound family of direct kernels.

A depthwise layer does R*S multiply-adds per output element, a grouped one of 2-8 channels a
group (ResNeXt's 32x4d: 4) a few times that: far too little work per byte for a GEMM, whose
16-wide tiles would be mostly padding, so these kernels do no matrix products. Each program
owns a tile of BLOCK_M pixels x BLOCK_N channels of one image and walks the filter taps (R, S
at run time, any size), reading the source pixels each tap needs; sums are FP32.

- `depthwise_conv`: forward (BACKWARD = 0: source x, destination y) and backward data
  (BACKWARD = 1: source dy, destination dx; a destination pixel takes the taps whose source
  pixel lands on the stride's lattice). Program axes: destination pixel blocks, channel
  blocks, image. Backward data at stride 2 may run phased (PHASES = 2): a program's pixels
  are of one stride phase, whose taps are a fixed quarter of the filter.
- `depthwise_conv_wrw`: backward weights, dw[c, r, s] = sum over n, oh, ow of
  dy[n, c, oh, ow] * x[n, c, oh * stride_h - pad_h + r * dil_h, ...]. Program axes: channel
  blocks, filter rows, parts of the (image, pixel) reduction; a program sums the whole row
  at once (BLOCK_S, the filter width's class: a power of two at least S), so each dy element
  is read once per row, not once per tap; with one part the program writes dw,
  with more each writes its FP32 partial to ws ([parts][C][R][S]) and the implicit GEMM's
  reduce kernel (`conv2d_bwd_weight_reduce`, kernels/conv_triton.py) sums them in a fixed
  order: the result is the same on every run.

- `depthwise_conv3d`, `depthwise_conv3d_wrw`: the same for 3-D layers (NCDHW, NDHWC): a
  forward or backward-data program owns one destination depth slice and walks the depth taps
  around the 2-D ones (backward data at plane stride 2 may run phased, as in 2-D); backward
  weights' programs own a filter row (t, r).

- `grouped_conv`, `grouped_conv_wrw`: the same for groups of a few channels and filters
  (SPG/DPG, CPG/KPG at run time): a destination channel sums its group's source channels in
  a loop inside each tap; backward weights has a lane per weight (filter, channel).

CHANNELS_LAST = 1 promises a unit channel stride in both activations (NHWC): channels are
then the contiguous axis of a tile and its loads are vectors along C. CHANNELS_LAST = 0 takes
any strides (NCHW: the pixels of a tile are consecutive, so a warp's loads along a row are
coalesced). Importing this module needs Triton but no GPU; launch data is in
`conv_triton_depthwise_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import tap_source

#: A forward object of at most this many taps unrolls them all (every tap's load issued at
#: once); a larger filter (7x7) unrolls a row's taps and loops over its rows: all 49 at once
#: took 2.9-3.4 s of compile an object against 0.4-0.5 s (bench/compile_cost.py) and spilled
#: registers on wave32 targets.
UNROLL_MAX_TAPS = tl.constexpr(25)


@triton.jit
def _direct_tile(C, DH, DW, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A forward or backward-data program's image (axis 2), destination channels (axis 1
    blocks of C), the rows and columns of its destination pixels (axis 0 blocks of DH * DW),
    and the pixel and channel masks."""
    pix = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    return tl.program_id(2), c, pix // DW, pix % DW, pix < DH * DW, c < C


@triton.jit
def _tap(acc, src, w_c, u, u_ok, dj, r, s, stride_w, pad_w, dil_w, SW, ssh, ssw, swr, sws,
         pix_ok, c_ok, BACKWARD: tl.constexpr):
    """acc plus tap (r, s) of a depthwise program (its source row u already worked out)."""
    v, v_ok = tap_source(dj, s, stride_w, pad_w, dil_w, SW, BACKWARD)
    ok = pix_ok & u_ok & v_ok
    a = tl.load(src + (u * ssh + v * ssw)[:, None], mask=ok[:, None] & c_ok[None, :], other=0.0)
    b = tl.load(w_c + r * swr + s * sws, mask=c_ok, other=0.0)
    return acc + a.to(tl.float32) * b.to(tl.float32)[None, :]


@triton.jit
def _channel_offsets(c, ssc, sdc, CHANNELS_LAST: tl.constexpr):
    """The source's and destination's offsets of channels c: c itself where CHANNELS_LAST
    promises unit channel strides (so that loads along channels are vectors), else c times
    the strides."""
    if CHANNELS_LAST:
        src_c = c
        dst_c = c
    else:
        src_c = c * ssc
        dst_c = c * sdc
    return src_c, dst_c


@triton.jit
def _phase_tile(C, DH, DW, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A phased backward-data program's image and stride-2 phase (axis 2: image * 4 + phase),
    destination channels (axis 1), the phase's row and column (ph, pw), and its destination
    pixels (axis 0 blocks of the phase's pixels): their row and column indices within the
    phase, the pixel and channel masks."""
    n = tl.program_id(2) // 4
    phase = tl.program_id(2) % 4
    ph = phase // 2
    pw = phase % 2
    pix = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = (DH - ph + 1) // 2
    cols = (DW - pw + 1) // 2
    return n, ph, pw, c, pix // cols, pix % cols, pix < rows * cols, c < C


@triton.jit
def depthwise_bwd_phased(src, w_c, dst_ptr, n, ph, pw, ip, jp, pix_ok, c_ok, dst_c, SH, SW,
                         pad_h, pad_w, ssh, ssw, sdn, sdh, sdw, swr, sws,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAPS_R: tl.constexpr,
                         TAPS_S: tl.constexpr):
    """Backward data at stride 2 (dilation 1) of one phase's destination pixels (rows
    2*ip + ph, columns 2*jp + pw; `_phase_taps`), stored."""
    acc = _phase_taps(tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32), src, w_c, ph, pw, ip,
                      jp, pix_ok, c_ok, SH, SW, pad_h, pad_w, ssh, ssw, swr, sws, TAPS_R,
                      TAPS_S)
    tl.store(dst_ptr + n * sdn + ((2 * ip + ph) * sdh + (2 * jp + pw) * sdw)[:, None]
             + dst_c[None, :], acc.to(dst_ptr.dtype.element_ty),
             mask=pix_ok[:, None] & c_ok[None, :])


@triton.jit
def _phase_taps(acc, src, w_c, ph, pw, ip, jp, pix_ok, c_ok, SH, SW, pad_h, pad_w, ssh, ssw,
                swr, sws, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr):
    """acc plus the taps of one source plane that reach one stride-2 phase's destination
    pixels (rows 2*ip + ph, columns 2*jp + pw): those of the phase's parity, r = r0, r0 + 2,
    ... (r0 = (ph + pad_h) % 2), a quarter of the filter, each reading dy at a fixed offset
    from (ip, jp), so no tap is masked off the stride's lattice and no division is left per
    pixel."""
    r0 = (ph + pad_h) % 2
    s0 = (pw + pad_w) % 2
    for tr in tl.static_range((TAPS_R + 1) // 2):
        r = r0 + 2 * tr
        u = ip + (ph + pad_h - r) // 2  # exact: ph + pad_h - r is even
        u_ok = pix_ok & (r < TAPS_R) & (u >= 0) & (u < SH)
        for ts in tl.static_range((TAPS_S + 1) // 2):
            s = s0 + 2 * ts
            v = jp + (pw + pad_w - s) // 2
            ok = u_ok & (s < TAPS_S) & (v >= 0) & (v < SW)
            a = tl.load(src + (u * ssh + v * ssw)[:, None], mask=ok[:, None] & c_ok[None, :],
                        other=0.0)
            b = tl.load(w_c + r * swr + s * sws, mask=c_ok & (r < TAPS_R) & (s < TAPS_S),
                        other=0.0)
            acc += a.to(tl.float32) * b.to(tl.float32)[None, :]
    return acc


@triton.jit
def depthwise_conv(
    src_ptr, w_ptr, dst_ptr, C, SH, SW, DH, DW, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw, swc, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
    PHASES: tl.constexpr = 0,
):
    """dst[n, c, i, j] = sum over taps (r, s) of w[c, r, s] * src[n, c, u, v]: forward reads
    u = i * stride_h - pad_h + r * dil_h; backward data the u with
    u * stride_h = i + pad_h - r * dil_h (and likewise for v, j, S). TAPS_R x TAPS_S > 0: an
    object for filters of that size alone, its taps unrolled so that a program issues every
    tap's load at once (R and S are then TAPS_R and TAPS_S); 0 x 0: R and S at run time.
    PHASES 2 (backward data, stride 2 and dilation 1 both ways, taps unrolled): a program
    owns pixels of one stride phase (`depthwise_bwd_phased`; program axis 2 is image * 4 +
    phase)."""
    if PHASES:
        n, ph, pw, c, ip, jp, pix_ok, c_ok = _phase_tile(C, DH, DW, BLOCK_M, BLOCK_N)
        src_c, dst_c = _channel_offsets(c, ssc, sdc, CHANNELS_LAST)
        depthwise_bwd_phased(src_ptr + n * ssn + src_c[None, :], w_ptr + c * swc, dst_ptr, n,
                             ph, pw, ip, jp, pix_ok, c_ok, dst_c, SH, SW, pad_h, pad_w, ssh,
                             ssw, sdn, sdh, sdw, swr, sws, BLOCK_M, BLOCK_N, TAPS_R, TAPS_S)
    else:
        _depthwise_direct(src_ptr, w_ptr, dst_ptr, C, SH, SW, DH, DW, R, S, stride_h, stride_w,
                          pad_h, pad_w, dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw,
                          swc, swr, sws, BLOCK_M, BLOCK_N, CHANNELS_LAST, BACKWARD, TAPS_R,
                          TAPS_S)


@triton.jit
def _depthwise_direct(
    src_ptr, w_ptr, dst_ptr, C, SH, SW, DH, DW, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw, swc, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
):
    """`depthwise_conv` a program a tile of destination pixels in raster order."""
    n, c, di, dj, pix_ok, c_ok = _direct_tile(C, DH, DW, BLOCK_M, BLOCK_N)
    src_c, dst_c = _channel_offsets(c, ssc, sdc, CHANNELS_LAST)
    acc = _plane_taps(tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32),
                      src_ptr + n * ssn + src_c[None, :], w_ptr + c * swc, di, dj, pix_ok,
                      c_ok, SH, SW, R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, ssh,
                      ssw, swr, sws, BACKWARD, TAPS_R, TAPS_S)
    tl.store(dst_ptr + n * sdn + (di * sdh + dj * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & c_ok[None, :])


@triton.jit
def _plane_taps(acc, src, w_c, di, dj, pix_ok, c_ok, SH, SW, R, S, stride_h, stride_w, pad_h,
                pad_w, dil_h, dil_w, ssh, ssw, swr, sws, BACKWARD: tl.constexpr,
                TAPS_R: tl.constexpr, TAPS_S: tl.constexpr):
    """acc plus the R x S taps of one source plane (`src`, the weights `w_c`) for destination
    pixels (di, dj): TAPS_R x TAPS_S unrolled (7x7 a row at a time), or R and S at run time
    where they are 0."""
    if TAPS_R * TAPS_S > UNROLL_MAX_TAPS:
        for r in tl.range(TAPS_R, loop_unroll_factor=1):
            u, u_ok = tap_source(di, r, stride_h, pad_h, dil_h, SH, BACKWARD)
            for s in tl.static_range(TAPS_S):
                acc = _tap(acc, src, w_c, u, u_ok, dj, r, s, stride_w, pad_w, dil_w, SW, ssh,
                           ssw, swr, sws, pix_ok, c_ok, BACKWARD)
    elif TAPS_R > 0:
        for r in tl.static_range(TAPS_R):
            u, u_ok = tap_source(di, r, stride_h, pad_h, dil_h, SH, BACKWARD)
            for s in tl.static_range(TAPS_S):
                acc = _tap(acc, src, w_c, u, u_ok, dj, r, s, stride_w, pad_w, dil_w, SW, ssh,
                           ssw, swr, sws, pix_ok, c_ok, BACKWARD)
    else:
        for r in range(R):
            u, u_ok = tap_source(di, r, stride_h, pad_h, dil_h, SH, BACKWARD)
            for s in range(S):
                acc = _tap(acc, src, w_c, u, u_ok, dj, r, s, stride_w, pad_w, dil_w, SW, ssh,
                           ssw, swr, sws, pix_ok, c_ok, BACKWARD)
    return acc


@triton.jit
def wrw_row(
    x_ptr, y_ptr, w_ptr, ws_ptr, e, E, x_c, y_c, w_e, N, H, W, P, Q, S, stride_h, stride_w,
    pad_h, pad_w, dil_h, dil_w, sxn, sxh, sxw, syn, syh, syw, swr, sws, TAPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """Backward weights of one filter row r (program axis 1) for the lanes e < E of this
    program (axis 0; a lane is one weight's (filter, channel) pair, its x channel offset x_c,
    dy channel offset y_c and dw offset w_e) and every s < S <= BLOCK_S at once, over this
    program's part (axis 2) of the N * P * Q output positions: each dy element is read once
    per row, x as BLOCK_S neighbours of a row. With several parts the FP32 sums go to
    ws[part][e][r * S + s] (TAPS = R * S)."""
    r = tl.program_id(1)
    part = tl.program_id(2)
    parts = tl.num_programs(2)
    e_ok = e < E
    s = tl.arange(0, BLOCK_S)
    s_ok = s < S
    pq = P * Q
    blocks = tl.cdiv(N * pq, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    acc = tl.zeros((BLOCK_M, BLOCK_S, BLOCK_N), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        idx = b * BLOCK_M + tl.arange(0, BLOCK_M)
        n = idx // pq
        pix = idx % pq
        i = pix // Q
        j = pix % Q
        u = i * stride_h - pad_h + r * dil_h
        row_ok = (idx < N * pq) & (u >= 0) & (u < H)
        v = (j * stride_w - pad_w)[:, None] + (s * dil_w)[None, :]
        tap_ok = row_ok[:, None] & s_ok[None, :] & (v >= 0) & (v < W)
        a = tl.load(x_ptr + (n * sxn + u * sxh)[:, None, None] + (v * sxw)[:, :, None]
                    + x_c[None, None, :], mask=tap_ok[:, :, None] & e_ok[None, None, :],
                    other=0.0)
        g = tl.load(y_ptr + (n * syn + i * syh + j * syw)[:, None] + y_c[None, :],
                    mask=row_ok[:, None] & e_ok[None, :], other=0.0)
        acc += a.to(tl.float32) * g.to(tl.float32)[:, None, :]
    total = tl.sum(acc, axis=0)
    mask = s_ok[:, None] & e_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + w_e[None, :] + r * swr + (s * sws)[:, None],
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + ((part * E + e) * TAPS)[None, :] + r * S + s[:, None], total,
                 mask=mask)


@triton.jit
def depthwise_conv_wrw(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, H, W, P, Q, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, sxn, sxc, sxh, sxw, syn, syc, syh, syw, swc, swr, sws, TAPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """dw[c, r, s] for one filter row (`wrw_row`, a lane per channel)."""
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    if CHANNELS_LAST:
        x_c = c
        y_c = c
    else:
        x_c = c * sxc
        y_c = c * syc
    wrw_row(x_ptr, y_ptr, w_ptr, ws_ptr, c, C, x_c, y_c, c * swc, N, H, W, P, Q, S,
            stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, sxn, sxh, sxw, syn, syh, syw,
            swr, sws, TAPS, BLOCK_M, BLOCK_N, BLOCK_S)


@triton.jit
def depthwise_conv3d(
    src_ptr, w_ptr, dst_ptr, C, SD, SH, SW, DD, DH, DW, T, R, S, stride_d, stride_h, stride_w,
    pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, ssn, ssc, ssd, ssh, ssw, sdn, sdc, sdd, sdh, sdw,
    swc, swt, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
    PHASES: tl.constexpr = 0,
):
    """The 3-D `depthwise_conv` (NCDHW or NDHWC): a program owns pixels x channels of one
    destination depth slice dz of one image (program axis 2: image * DD + dz) and walks the
    filter's T depth taps at run time, each adding the R x S taps of the source slice it
    reads (`_plane_taps`: TAPS_R x TAPS_S unrolled, or R and S at run time); a depth tap whose
    slice is off the source or, in backward data, off the stride's lattice adds nothing (its
    loads are masked off). PHASES 2 (backward data, stride 2 and dilation 1 in the plane,
    its taps unrolled): a program owns pixels of one stride phase of the slice (program axis
    2: (image * DD + dz) * 4 + phase), each depth tap adding the plane taps that reach the
    phase (`_phase_taps`)."""
    if PHASES:
        _depthwise3d_phased(src_ptr, w_ptr, dst_ptr, C, SD, SH, SW, DD, DH, DW, T, stride_d,
                            pad_d, pad_h, pad_w, dil_d, ssn, ssc, ssd, ssh, ssw, sdn, sdc, sdd,
                            sdh, sdw, swc, swt, swr, sws, BLOCK_M, BLOCK_N, CHANNELS_LAST,
                            BACKWARD, TAPS_R, TAPS_S)
    else:
        _depthwise3d_direct(src_ptr, w_ptr, dst_ptr, C, SD, SH, SW, DD, DH, DW, T, R, S,
                            stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h,
                            dil_w, ssn, ssc, ssd, ssh, ssw, sdn, sdc, sdd, sdh, sdw, swc, swt,
                            swr, sws, BLOCK_M, BLOCK_N, CHANNELS_LAST, BACKWARD, TAPS_R,
                            TAPS_S)


@triton.jit
def _depthwise3d_direct(
    src_ptr, w_ptr, dst_ptr, C, SD, SH, SW, DD, DH, DW, T, R, S, stride_d, stride_h, stride_w,
    pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, ssn, ssc, ssd, ssh, ssw, sdn, sdc, sdd, sdh, sdw,
    swc, swt, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
):
    """`depthwise_conv3d` a program a tile of a slice's destination pixels in raster order."""
    nz, c, di, dj, pix_ok, c_ok = _direct_tile(C, DH, DW, BLOCK_M, BLOCK_N)
    n = nz // DD
    dz = nz - n * DD
    src_c, dst_c = _channel_offsets(c, ssc, sdc, CHANNELS_LAST)
    src_n = src_ptr + n * ssn + src_c[None, :]
    w_c = w_ptr + c * swc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(T):
        z, z_ok = tap_source(dz, t, stride_d, pad_d, dil_d, SD, BACKWARD)
        acc = _plane_taps(acc, src_n + z * ssd, w_c + t * swt, di, dj, pix_ok & z_ok, c_ok,
                          SH, SW, R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, ssh,
                          ssw, swr, sws, BACKWARD, TAPS_R, TAPS_S)
    tl.store(dst_ptr + n * sdn + dz * sdd + (di * sdh + dj * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & c_ok[None, :])


@triton.jit
def _depthwise3d_phased(
    src_ptr, w_ptr, dst_ptr, C, SD, SH, SW, DD, DH, DW, T, stride_d, pad_d, pad_h, pad_w,
    dil_d, ssn, ssc, ssd, ssh, ssw, sdn, sdc, sdd, sdh, sdw, swc, swt, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr, TAPS_R: tl.constexpr, TAPS_S: tl.constexpr,
):
    """`depthwise_conv3d`'s backward data a program a tile of one stride-2 phase's pixels of
    a destination slice (`_phase_tile`'s image is the slice, image * DD + dz)."""
    nz, ph, pw, c, ip, jp, pix_ok, c_ok = _phase_tile(C, DH, DW, BLOCK_M, BLOCK_N)
    n = nz // DD
    dz = nz - n * DD
    src_c, dst_c = _channel_offsets(c, ssc, sdc, CHANNELS_LAST)
    src_n = src_ptr + n * ssn + src_c[None, :]
    w_c = w_ptr + c * swc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(T):
        z, z_ok = tap_source(dz, t, stride_d, pad_d, dil_d, SD, BACKWARD)
        acc = _phase_taps(acc, src_n + z * ssd, w_c + t * swt, ph, pw, ip, jp, pix_ok & z_ok,
                          c_ok, SH, SW, pad_h, pad_w, ssh, ssw, swr, sws, TAPS_R, TAPS_S)
    tl.store(dst_ptr + n * sdn + dz * sdd
             + ((2 * ip + ph) * sdh + (2 * jp + pw) * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & c_ok[None, :])


@triton.jit
def depthwise_conv3d_wrw(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, D, H, W, Z, P, Q, R, S, stride_d, stride_h, stride_w,
    pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw,
    swc, swt, swr, sws, TAPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """The 3-D `depthwise_conv_wrw`: dw[c, t, r, s] for one filter row (t, r) (program axis
    1: t * R + r) and every s < S <= BLOCK_S at once, a lane per channel (axis 0), over this
    program's part (axis 2) of the N * Z * P * Q output positions; with several parts the
    FP32 sums go to ws[part][c][(t * R + r) * S + s] (TAPS = T * R * S)."""
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    if CHANNELS_LAST:
        x_c = c
        y_c = c
    else:
        x_c = c * sxc
        y_c = c * syc
    tr = tl.program_id(1)
    t = tr // R
    r = tr - t * R
    part = tl.program_id(2)
    parts = tl.num_programs(2)
    c_ok = c < C
    s = tl.arange(0, BLOCK_S)
    s_ok = s < S
    pq = P * Q
    zpq = Z * pq
    blocks = tl.cdiv(N * zpq, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    acc = tl.zeros((BLOCK_M, BLOCK_S, BLOCK_N), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        idx = b * BLOCK_M + tl.arange(0, BLOCK_M)
        n = idx // zpq
        rest = idx - n * zpq
        oz = rest // pq
        pix = rest - oz * pq
        i = pix // Q
        j = pix - i * Q
        zs = oz * stride_d - pad_d + t * dil_d
        u = i * stride_h - pad_h + r * dil_h
        row_ok = (idx < N * zpq) & (zs >= 0) & (zs < D) & (u >= 0) & (u < H)
        v = (j * stride_w - pad_w)[:, None] + (s * dil_w)[None, :]
        tap_ok = row_ok[:, None] & s_ok[None, :] & (v >= 0) & (v < W)
        a = tl.load(x_ptr + (n * sxn + zs * sxd + u * sxh)[:, None, None]
                    + (v * sxw)[:, :, None] + x_c[None, None, :],
                    mask=tap_ok[:, :, None] & c_ok[None, None, :], other=0.0)
        g = tl.load(y_ptr + (n * syn + oz * syd + i * syh + j * syw)[:, None] + y_c[None, :],
                    mask=row_ok[:, None] & c_ok[None, :], other=0.0)
        acc += a.to(tl.float32) * g.to(tl.float32)[:, None, :]
    total = tl.sum(acc, axis=0)
    mask = s_ok[:, None] & c_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + (c * swc)[None, :] + t * swt + r * swr + (s * sws)[:, None],
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + ((part * C + c) * TAPS)[None, :] + tr * S + s[:, None], total,
                 mask=mask)


@triton.jit
def grouped_conv(
    src_ptr, w_ptr, dst_ptr, C, SPG, DPG, SH, SW, DH, DW, R, S, stride_h, stride_w, pad_h,
    pad_w, dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw, swg, swd, swj, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr,
):
    """dst[n, d, i, j] = sum over the SPG source channels g * SPG + m of d's group
    g = d // DPG and the taps (r, s) of w * src[n, g * SPG + m, u, v], (u, v) as in
    `depthwise_conv`. The weight of (d, m) is at g * swg + (d % DPG) * swd + m * swj: forward
    d is a filter and m a channel of its group, backward data d is a channel and m a filter."""
    n, d, di, dj, pix_ok, d_ok = _direct_tile(C, DH, DW, BLOCK_M, BLOCK_N)
    grp = d // DPG
    if CHANNELS_LAST:
        src_c = grp * SPG
        src_step = 1
        dst_c = d
    else:
        src_c = grp * SPG * ssc
        src_step = ssc
        dst_c = d * sdc
    w_d = w_ptr + grp * swg + (d - grp * DPG) * swd
    src_n = src_ptr + n * ssn + src_c[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(R):
        u, u_ok = tap_source(di, r, stride_h, pad_h, dil_h, SH, BACKWARD)
        for s in range(S):
            v, v_ok = tap_source(dj, s, stride_w, pad_w, dil_w, SW, BACKWARD)
            ok = (pix_ok & u_ok & v_ok)[:, None] & d_ok[None, :]
            src = src_n + (u * ssh + v * ssw)[:, None]
            w_tap = w_d + r * swr + s * sws
            for m in range(SPG):
                a = tl.load(src + m * src_step, mask=ok, other=0.0)
                b = tl.load(w_tap + m * swj, mask=d_ok, other=0.0)
                acc += a.to(tl.float32) * b.to(tl.float32)[None, :]
    tl.store(dst_ptr + n * sdn + (di * sdh + dj * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & d_ok[None, :])


@triton.jit
def grouped_conv_wrw(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, CPG, KPG, H, W, P, Q, S, stride_h, stride_w, pad_h,
    pad_w, dil_h, dil_w, sxn, sxc, sxh, sxw, syn, syc, syh, syw, swk, swc, swr, sws, TAPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """dw[k, c, r, s] for one filter row (`wrw_row`), a lane per weight (k, c) of the C =
    G * KPG * CPG: lane e is filter k = e // CPG and its group's channel c = e % CPG, which
    reads x channel (k // KPG) * CPG + c."""
    e = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = e // CPG
    c = e - k * CPG
    xc = (k // KPG) * CPG + c
    if CHANNELS_LAST:
        x_c = xc
        y_c = k
    else:
        x_c = xc * sxc
        y_c = k * syc
    wrw_row(x_ptr, y_ptr, w_ptr, ws_ptr, e, C, x_c, y_c, k * swk + c * swc, N, H, W, P, Q, S,
            stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, sxn, sxh, sxw, syn, syh, syw,
            swr, sws, TAPS, BLOCK_M, BLOCK_N, BLOCK_S)
