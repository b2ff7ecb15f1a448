"""ConvTritonFmaFewKChunks{Fwd,Bwd,Wrw} and ConvTritonFmaChunksBwd: the direct kernels on the
FP32 units (solvers/triton_fma.py's few-filter forward, solvers/triton_fma_bwd.py's backward
data, solvers/triton_fma_wrw.py's few-filter backward weights) for layers too large for their
32-bit offsets, a chunk of the batch at a time.

ESRGAN's output layer (64 -> 3 at 2048x2048) has 2**31 elements or more in x from batch 8
on, which the few-filter kernels refuse; the implicit GEMM's batch-chunk solver took it in
FP32 at 5.0-5.7x IEEE cuDNN's GPU time at batch 8 on the H100, where at batch 1 (no chunks)
the few-filter forward took 0.62 (bench/results/fewk_h100-6a76905/zoo_b8_b1.json). Its
backward data (dx of 2**31 elements from batch 8 on) took 2.9-5.3x on the implicit GEMM's
chunks, where at batch 1 the backward data on the FP32 units took 0.52-0.53
(bench/results/kn2row_h100/immediate/zoo_kn2row_b8_b1.json). The
machinery is the implicit GEMM's (`triton_chunks.BatchChunks`): each chunk's launches on the
caller's tensors from its first image on ("x@offset"); in backward weights every chunk split
in two or more parts, each chunk's partials in its own part of the workspace, and one reduce
over all of them. The objects are the inner solvers' own (shape-agnostic: no objects of
their own); the parameters and the claim are the inner solver's on the first chunk. The
backward data's lead-in (the flipped filters) runs once, its phases' launches (a stride over
1) once a chunk.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from .base import Solver
from .triton_chunks import BatchChunks
from .triton_fma import ConvTritonFmaFewK
from .triton_fma_bwd import ConvTritonFmaBwd, ConvTritonFmaFewKBwd
from .triton_fma_wrw import ConvTritonFmaFewKWrw

__all__ = ["FMA_CHUNK_SOLVERS", "ConvTritonFmaChunksBwd", "ConvTritonFmaFewKBwdChunks",
           "ConvTritonFmaFewKChunks", "ConvTritonFmaFewKWrwChunks", "fma_chunks_first"]


class _FmaChunks(BatchChunks):
    """BatchChunks over one FP32-unit solver (`INNER`), first where it claims the first
    chunk. A solver class lists it first among its bases, ahead of INNER."""

    NAME: str
    INNER: type[Solver]

    def __init__(self) -> None:
        super().__init__()
        self.name = self.NAME
        self.inner = self.INNER()

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the inner solver claims the first chunk."""
        return self.inner.claims_first(self._relaid(problem), target)


class ConvTritonFmaFewKChunks(_FmaChunks, ConvTritonFmaFewK):
    """The few-filter forward a chunk of the batch at a time."""

    NAME = "ConvTritonFmaFewKChunksFwd"
    INNER = ConvTritonFmaFewK


class ConvTritonFmaFewKWrwChunks(_FmaChunks, ConvTritonFmaFewKWrw):
    """The few-filter backward weights a chunk of the batch at a time."""

    NAME = "ConvTritonFmaFewKChunksWrw"
    INNER = ConvTritonFmaFewKWrw


class ConvTritonFmaFewKBwdChunks(_FmaChunks, ConvTritonFmaFewKBwd):
    """The few-filter forward's backward data (layers of 1-8 input channels) a chunk of the
    batch at a time."""

    NAME = "ConvTritonFmaFewKChunksBwd"
    INNER = ConvTritonFmaFewKBwd


class ConvTritonFmaChunksBwd(_FmaChunks, ConvTritonFmaBwd):
    """The few-channel forward's backward data (layers of 1-4 filters) a chunk of the batch at
    a time."""

    NAME = "ConvTritonFmaChunksBwd"
    INNER = ConvTritonFmaBwd


def fma_chunks_first(problem: ConvProblem, target: Target) -> bool:
    """Whether a chunk solver here applies and claims the problem (FIRST_CLAIMS)."""
    return any(s.is_applicable(problem, target) and s.claims_first(problem, target)
               for s in FMA_CHUNK_SOLVERS)


def _solvers() -> list[Solver]:
    """One over each FP32-unit solver the registry holds."""
    from .triton_fma import FMA_SOLVERS
    from .triton_fma_bwd import FMA_BWD_SOLVERS
    from .triton_fma_wrw import FMA_WRW_SOLVERS

    held = {type(s) for s in (*FMA_SOLVERS, *FMA_BWD_SOLVERS, *FMA_WRW_SOLVERS)}
    return [cls() for cls in (ConvTritonFmaFewKChunks, ConvTritonFmaFewKBwdChunks,
                              ConvTritonFmaChunksBwd, ConvTritonFmaFewKWrwChunks)
            if cls.INNER in held]


FMA_CHUNK_SOLVERS: list[Solver] = _solvers()
