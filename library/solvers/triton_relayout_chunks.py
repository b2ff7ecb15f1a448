"""ConvTritonImplicitGemmViaNhwcChunks{Fwd,Bwd,Wrw}: 2-D NCHW layers too large for 32-bit
offsets through the NHWC kernels, a chunk of the batch at a time.

The batch-chunk solvers (solvers/triton_chunks.py) run the implicit GEMM on each chunk in the
caller's layout; in NCHW that is the kernel the Via tables (the spec's `via_other_layout`) say
is the slower one, and on the largest layers most: SD 1.5's VAE decoder's 256-channel 3x3
layers at 512x512 and ESRGAN's 64-channel ones at 1024x1024, batch 32, FP16, took 1.9-2.5x
(forward), 3.3-9.3x (backward data) and 3.5-7.4x (backward weights) cuDNN's GPU time in NCHW
against 1.3-2.2x in NHWC on the same solver (H200: bench/results/zoo_h200-fb-9ec5af9.json,
zoo_h200-w-9ec5af9.json). These solvers are the same batch-chunk machinery (`BatchChunks`)
over the Via solvers (solvers/triton_conv_relayout.py), as the 3-D relaid chunk solvers are
over theirs: each chunk's activations transposed into the workspace (the weights once), the
NHWC object run on the copies, the output transposed back into the caller's tensor at the
chunk's first image; backward weights leaves each chunk's partials in a part of its own and
one reduce over every part writes dw in the caller's layout. Chunks are sized by the copies
too (`chunking`'s `copies`).

They apply where the Via solver takes the first chunk (its tables, its alignment rules) and
claim first there; the plain chunk solvers give way to them (the registry's YIELDS_TO). The
objects are the implicit GEMM's and the transpose kernel's, which a package holds already.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from ._conv import DIRECTION_SUFFIX
from .base import Solver, family_claims
from .triton_chunks import BatchChunks
from .triton_common import have_kernels
from .triton_conv_relayout import VIA_SOLVERS, ConvTritonImplicitGemmRelayout, copied_per_image

__all__ = ["VIA_CHUNK_SOLVERS", "ConvTritonImplicitGemmRelayoutChunks", "via_chunks_first"]


class ConvTritonImplicitGemmRelayoutChunks(BatchChunks, ConvTritonImplicitGemmRelayout):
    """One direction of a Via solver (`layout`: the layout its kernels run in) for a problem
    too large for 32-bit offsets, a chunk of images at a time."""

    inner: ConvTritonImplicitGemmRelayout

    def __init__(self, direction: str, layout: str = "NHWC") -> None:
        super().__init__(direction, "ieee", layout)
        self.inner = ConvTritonImplicitGemmRelayout(direction, "ieee", layout)
        self.name = f"{self.inner.name[:-3]}Chunks{self.inner.name[-3:]}"  # ...ChunksFwd
        self.rank_first = True

    def _copied(self, problem: ConvProblem) -> tuple[int, ...]:
        return copied_per_image(problem, self.layout)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Wherever it applies: the Via solver's tables chose the first chunk's path."""
        return True


def via_chunks_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a Via chunk solver claims the problem (the registry's FIRST_CLAIMS)."""
    return math == "ieee" and family_claims(VIA_CHUNK_SOLVERS,
                                            ConvTritonImplicitGemmRelayoutChunks, problem,
                                            target)


def _chunk_solvers() -> list[Solver]:
    """Through NHWC, one per direction (none without the kernels or the Via solvers)."""
    if not have_kernels() or not VIA_SOLVERS:
        return []
    return [ConvTritonImplicitGemmRelayoutChunks(d) for d in DIRECTION_SUFFIX]


VIA_CHUNK_SOLVERS: list[Solver] = _chunk_solvers()
