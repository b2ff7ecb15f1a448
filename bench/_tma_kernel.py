"""A trial kernel for bench/tma_conv.py (no solver runs it): stride-1 NHWC convolution as
implicit GEMM fed by the tensor memory accelerator (sm90+).

A program computes a BLOCK_H x BLOCK_W patch of one image's output pixels (the GEMM's BLOCK_M
= BLOCK_H * BLOCK_W rows) for BLOCK_N output channels. With stride 1, the input a filter tap
(r, s) reads for that patch is itself a BLOCK_H x BLOCK_W box of the input, shifted by the tap:
one TMA copy of a [1, BLOCK_H, BLOCK_W, BLOCK_K] box of the NHWC tensor, whose out-of-bounds
part (the padding, the edges of the image) the copy engine fills with zeros. So the loop issues
no address arithmetic, no masks and no gathers: the copies go straight to shared memory in the
swizzled layout wgmma reads, behind a pipeline of NUM_STAGES buffers.

Backward data at stride 1 is the same loop on dy with the taps reflected (dx's pixel (h, w)
reads dy at (h + pad - r*dil, w + pad - s*dil)) and the filter read as [K, R*S, C] boxes
transposed. The output is written by a TMA store of the patch, clipped at the edges.

The descriptors are made on the device (`tl.make_tensor_descriptor`): each program writes its
three 128-byte descriptors to Triton's global scratch, which the launch provides
(`global_scratch_size` bytes per program). TMA needs 16-byte aligned base addresses and
strides: channel counts that are multiples of 8 (16-bit types).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def conv2d_tma(src_ptr, w_ptr, dst_ptr, N, C_in, H_in, W_in, C_out, H_out, W_out, R, S,
               pad_h, pad_w, dil_h, dil_w, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr,
               BACKWARD_DATA: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False):
    """dst[n, h, w, :] = sum over taps and src channels of src * w, NHWC, stride 1.

    Forward: src = x (C_in = C), w is [K][R][S][C], dst = y (C_out = K).
    Backward data: src = dy (C_in = K), w is [K][R][S][C], dst = dx (C_out = C)."""
    BLOCK_M: tl.constexpr = BLOCK_H * BLOCK_W
    src = tl.make_tensor_descriptor(src_ptr, shape=[N, H_in, W_in, C_in],
                                    strides=[H_in * W_in * C_in, W_in * C_in, C_in, 1],
                                    block_shape=[1, BLOCK_H, BLOCK_W, BLOCK_K])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[N, H_out, W_out, C_out],
                                    strides=[H_out * W_out * C_out, W_out * C_out, C_out, 1],
                                    block_shape=[1, BLOCK_H, BLOCK_W, BLOCK_N])
    if BACKWARD_DATA:  # w as [K][R*S][C]: boxes of BLOCK_K filters by BLOCK_N channels
        wd = tl.make_tensor_descriptor(w_ptr, shape=[C_in, R * S, C_out],
                                       strides=[R * S * C_out, C_out, 1],
                                       block_shape=[BLOCK_K, 1, BLOCK_N])
    else:  # w as [K][R*S][C]: boxes of BLOCK_N filters by BLOCK_K channels
        wd = tl.make_tensor_descriptor(w_ptr, shape=[C_out, R * S, C_in],
                                       strides=[R * S * C_in, C_in, 1],
                                       block_shape=[BLOCK_N, 1, BLOCK_K])
    pid = tl.program_id(0)
    n_blocks = tl.cdiv(C_out, BLOCK_N)
    tiles_w = tl.cdiv(W_out, BLOCK_W)
    tiles_h = tl.cdiv(H_out, BLOCK_H)
    nb = pid % n_blocks  # output-channel blocks of one patch run side by side (L2 reuse)
    patch = pid // n_blocks
    tw = patch % tiles_w
    th = (patch // tiles_w) % tiles_h
    img = patch // (tiles_w * tiles_h)
    h0 = th * BLOCK_H
    w0 = tw * BLOCK_W
    n0 = nb * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_blocks = tl.cdiv(C_in, BLOCK_K)
    for t in tl.range(0, R * S * k_blocks, num_stages=NUM_STAGES,
                      warp_specialize=WARP_SPECIALIZE):
        rs = t // k_blocks
        k0 = (t - rs * k_blocks) * BLOCK_K
        r = rs // S
        s = rs - r * S
        if BACKWARD_DATA:
            a = src.load([img, h0 + pad_h - r * dil_h, w0 + pad_w - s * dil_w, k0])
            b = wd.load([k0, rs, n0]).reshape(BLOCK_K, BLOCK_N)
        else:
            a = src.load([img, h0 - pad_h + r * dil_h, w0 - pad_w + s * dil_w, k0])
            b = wd.load([n0, rs, k0]).reshape(BLOCK_N, BLOCK_K).T
        acc = tl.dot(a.reshape(BLOCK_M, BLOCK_K), b, acc)
    out = acc.to(dst_ptr.dtype.element_ty).reshape(1, BLOCK_H, BLOCK_W, BLOCK_N)
    dst.store([img, h0, w0, n0], out)
