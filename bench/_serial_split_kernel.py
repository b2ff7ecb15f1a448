"""The forward implicit GEMM with its split reduction finished in the same launch: the kernel
bench/serial_split.py measures against the two-launch split (conv2d_fwd, then
conv2d_bwd_weight_reduce) and against no split.

Each of the SPLIT_K programs of an output tile writes its FP32 partial tile, contiguous, to
ws[tile][split]; then one thread takes a ticket from the tile's counter (sem[tile], an atomic
add with release and acquire order after a block barrier). The program that draws the last
ticket adds the other parts to its own accumulator, stores the output and sets the counter back
to 0, so the counters are zero again after every launch (a graph replays it as it is).
"""

from __future__ import annotations

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton import _fwd_tile
from miopenkernels.kernels.conv_triton_spec import CONV_TUPLES

TUPLE_ARGS = CONV_TUPLES


@triton.jit
def conv2d_fwd_serial(
    x_ptr, w_ptr, y_ptr, ws_ptr, sem_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr,
):
    acc, mask, y_off, _ = _fwd_tile(x_ptr, w_ptr, dims, conv, strides, BLOCK_M, BLOCK_N,
                                    BLOCK_K, GROUP_M, SPLIT_K, CHANNELS_LAST, PRECISION)
    if SPLIT_K == 1:
        tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        split = tl.program_id(2)
        tile = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
        here = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        part = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)
        tl.store(part + split * (BLOCK_M * BLOCK_N) + here, acc, cache_modifier=".cg")
        tl.debug_barrier()
        ticket = tl.atomic_add(sem_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if ticket == SPLIT_K - 1:
            for other in range(0, SPLIT_K):
                if other != split:
                    acc += tl.load(part + other * (BLOCK_M * BLOCK_N) + here,
                                   cache_modifier=".cg")
            tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=mask)
            tl.atomic_xchg(sem_ptr + tile, 0, sem="relaxed", scope="gpu")
