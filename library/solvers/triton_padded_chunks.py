"""ConvTritonImplicitGemmPaddedChunks{Fwd,Wrw}: 16-bit channels-last layers of odd
channel counts too large for 32-bit offsets, through the padded solvers, a chunk of the
batch at a time.

ESRGAN's output layer (64 -> 3 at 2048x2048) is past 32-bit offsets from batch 8 on. At batch
1 the padded solver (solvers/triton_padded.py: its 3 filters padded to 8 in the workspace,
the aligned object, the real channels copied back) took 1.05 (FP16) and 0.94 (BF16) of
cuDNN's GPU time; at batch 8 the batch-chunk implicit GEMM, on the generic object of the
unpadded problem, took 5.52 and 4.98 (H100: bench/results/fewk_h100-6a76905/zoo_b8_b1.json).
These solvers are the batch-chunk machinery (`triton_chunks.BatchChunks`) over the padded
solvers, as the 3-D relaid chunk solvers are over theirs: each chunk's activations padded
into the workspace (the weights once), the aligned object on the copies, the output's real
channels copied into the caller's tensor at the chunk's first image; backward weights leaves
each chunk's partials in a part of its own and one reduce over every part. Chunks are sized by
the copies too. They apply where the padded solver takes the first chunk, and claim where it
claims it, ahead of the plain chunk solvers (the registry's YIELDS_TO). The objects are the
implicit GEMM's and the copy's, which a package holds already: forward and backward weights
alone, as the padded backward data's usual FP16 object on such a layer is not in the default
package (the padded solver at batch 1 would compile it; the plain chunk solver's are there).
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from .base import Solver, family_claims
from .triton_chunks import BatchChunks
from .triton_padded import (
    PADDED_SOLVERS,
    ConvTritonImplicitGemmPadded,
    padded_copied_per_image,
)

__all__ = ["PADDED_CHUNK_SOLVERS", "ConvTritonImplicitGemmPaddedChunks", "padded_chunks_first"]


class ConvTritonImplicitGemmPaddedChunks(BatchChunks, ConvTritonImplicitGemmPadded):
    """One direction of a padded solver for a problem too large for 32-bit offsets, a chunk
    of images at a time."""

    inner: ConvTritonImplicitGemmPadded

    def __init__(self, direction: str) -> None:
        super().__init__(direction)
        self.inner = ConvTritonImplicitGemmPadded(direction)
        self.name = f"{self.inner.name[:-3]}Chunks{self.inner.name[-3:]}"  # ...ChunksFwd

    def _copied(self, problem: ConvProblem) -> tuple[int, ...]:
        return padded_copied_per_image(problem)

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        """Problems the padded solver's form takes (2-D, one group, NHWC) past 32-bit offsets
        whose first chunk it takes (`BatchChunks.is_applicable`)."""
        p = problem
        if p.groups != 1 or len(p.in_spatial) != 2 or p.mode != "conv" or \
                not p.in_layout == p.wei_layout == p.out_layout == "NHWC":
            return False
        return super().is_applicable(problem, target)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the padded solver claims the first chunk."""
        return self.inner.claims_first(self._relaid(problem), target)


def padded_chunks_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a padded chunk solver claims the problem (the registry's FIRST_CLAIMS)."""
    return math == "ieee" and family_claims(PADDED_CHUNK_SOLVERS,
                                            ConvTritonImplicitGemmPaddedChunks, problem, target)


def _chunk_solvers() -> list[Solver]:
    """Forward and backward weights (none without the padded solvers)."""
    if not PADDED_SOLVERS:
        return []
    return [ConvTritonImplicitGemmPaddedChunks(d) for d in ("F", "W")]


PADDED_CHUNK_SOLVERS: list[Solver] = _chunk_solvers()
