"""ConvTritonFmaFewKChunks{Fwd,Wrw}: the few-filter direct kernels on the FP32 units
(solvers/triton_fma.py's forward, solvers/triton_fma_wrw.py's backward weights) for layers
too large for their 32-bit offsets, a chunk of the batch at a time.

ESRGAN's output layer (64 -> 3 at 2048x2048) has 2**31 elements or more in x from batch 8
on, which the few-filter kernels refuse; the implicit GEMM's batch-chunk solver took it in
FP32 at 5.0-5.7x IEEE cuDNN's GPU time at batch 8 on the H100, where at batch 1 (no chunks)
the few-filter forward took 0.62 (bench/results/fewk_h100-6a76905/zoo_b8_b1.json). The
machinery is the implicit GEMM's (`triton_chunks.BatchChunks`): each chunk's launches on the
caller's tensors from its first image on ("x@offset"); in backward weights every chunk split
in two or more parts, each chunk's partials in its own part of the workspace, and one reduce
over all of them. The objects are the inner solvers' own (shape-agnostic: no objects of
their own); the parameters and the claim are the inner solver's on the first chunk.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from .base import Solver
from .triton_chunks import BatchChunks
from .triton_fma import ConvTritonFmaFewK
from .triton_fma_wrw import ConvTritonFmaFewKWrw

__all__ = ["FMA_CHUNK_SOLVERS", "ConvTritonFmaFewKChunks", "ConvTritonFmaFewKWrwChunks",
           "fma_chunks_first"]


class ConvTritonFmaFewKChunks(BatchChunks, ConvTritonFmaFewK):
    """The few-filter forward a chunk of the batch at a time."""

    NAME = "ConvTritonFmaFewKChunksFwd"

    def __init__(self) -> None:
        super().__init__()
        self.inner = ConvTritonFmaFewK()

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the inner solver claims the first chunk."""
        return self.inner.claims_first(self._relaid(problem), target)


class ConvTritonFmaFewKWrwChunks(BatchChunks, ConvTritonFmaFewKWrw):
    """The few-filter backward weights a chunk of the batch at a time."""

    NAME = "ConvTritonFmaFewKChunksWrw"

    def __init__(self) -> None:
        super().__init__()
        self.name = self.NAME
        self.inner = ConvTritonFmaFewKWrw()

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the inner solver claims the first chunk."""
        return self.inner.claims_first(self._relaid(problem), target)


def fma_chunks_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a chunk solver here applies and claims the problem (FIRST_CLAIMS)."""
    return any(s.is_applicable(problem, target) and s.claims_first(problem, target)
               for s in FMA_CHUNK_SOLVERS)


def _solvers() -> list[Solver]:
    from .triton_fma import FMA_SOLVERS
    from .triton_fma_wrw import FMA_WRW_SOLVERS

    out: list[Solver] = []
    if any(type(s) is ConvTritonFmaFewK for s in FMA_SOLVERS):
        out.append(ConvTritonFmaFewKChunks())
    if any(type(s) is ConvTritonFmaFewKWrw for s in FMA_WRW_SOLVERS):
        out.append(ConvTritonFmaFewKWrwChunks())
    return out


FMA_CHUNK_SOLVERS: list[Solver] = _solvers()
