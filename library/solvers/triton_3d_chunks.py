"""ConvTriton3dChunks{Fwd,Bwd,Wrw}: 3-D layers too large for 32-bit offsets, a chunk of the
batch at a time.

The 3-D implicit GEMM (solvers/triton_3d.py) indexes its tensors with 32-bit offsets, so it
refuses a problem with a tensor of 2**31 elements or more (`conv_triton_3d_spec.applies`): at
batch 32, 3D U-Net's 1-channel 128^3 input layer (32 filters: y holds 2**31 elements), its
384-channel 64^3 layer, every layer at 128^3 and both up-convolutions had no solver at all
(bench/zoo_shapes.py's unet3d, NCDHW and NDHWC, every direction). These solvers are the 2-D
family's batch-chunk machinery (solvers/triton_chunks.py, `BatchChunks`) over ConvTriton3d:
the batch in chunks whose tensors fit (`chunking`, a multiple of the images that keep every
chunk's offset a multiple of 256 bytes, so that the aligned channels-last objects stay legal;
the generic objects where no such multiple fits), each chunk's launches pointing into the
caller's tensors at its first image ("x@offset"). Forward and backward data run the chunks in
turn; backward weights runs every chunk split (SPLIT_K of 2 or more), its FP32 partials
([parts][T*R*S][G*K][C]) in its own part of the workspace, the parts end to end, and one
reduce over every part (SPLIT_K: the split times the chunks) writes dw.

The objects are ConvTriton3d's own (its dynamic jobs, the reduce kernel's included); the
parameters and ranking are its on the first chunk. Convolutions and transposed ones, NCDHW
and NDHWC, in FP16, BF16 and FP32 (IEEE), where no other solver applies.

ConvTriton3d{ViaNdhwc,Padded}Chunks{Fwd,Bwd,Wrw} are the same machinery over the relaid
solvers (solvers/triton_3d_relaid.py): each chunk's operands copied into the workspace in the
aligned channels-last form (NCDHW transposed, odd channel counts padded to 16), the aligned
object run on the copies, the output copied back into the caller's tensor at the chunk's
first image. The chunked problems are the largest layers, where the generic object (an NCDHW
problem, a 1-channel input, a 3-class output) cost most: 3D U-Net's at batch 32 took 3-32x
cuDNN's time on ConvTriton3dChunks (bench/results/zoo_h200-3d-c220f5b). They claim first where
the relaid solver claims the first chunk (its rules), and the plain chunk solvers give way to
them there (the registry's YIELDS_TO). The copies' parts must fit too: `chunking` sizes the
chunks by the padded tensors where those are the widest.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from ._conv import DIRECTION_SUFFIX
from .base import Solver, family_claims
from .triton_3d import ConvTriton3d
from .triton_3d_relaid import RELAID_3D_SOLVERS, ConvTriton3dRelaid, copied_per_image
from .triton_chunks import BatchChunks
from .triton_common import has_kernels_spec, have_kernels

__all__ = ["CHUNK_3D_SOLVERS", "ConvTriton3dChunks", "ConvTriton3dRelaidChunks",
           "relaid_chunks_first"]


class ConvTriton3dChunks(BatchChunks, ConvTriton3d):
    """One direction of the 3-D implicit GEMM for a problem too large for 32-bit offsets, a
    chunk of images at a time."""

    dims = 3

    def __init__(self, direction: str) -> None:
        super().__init__(direction)
        self.inner = ConvTriton3d(direction)
        self.name = f"ConvTriton3dChunks{DIRECTION_SUFFIX[direction]}"
        self.rank_first = True


class ConvTriton3dRelaidChunks(BatchChunks, ConvTriton3dRelaid):
    """One direction of a 3-D relaid solver (`layout`: NCDHW through NDHWC, NDHWC padded) for
    a problem too large for 32-bit offsets, a chunk of images at a time."""

    dims = 3
    inner: ConvTriton3dRelaid

    def __init__(self, direction: str, layout: str) -> None:
        super().__init__(direction, layout)
        self.inner = ConvTriton3dRelaid(direction, layout)
        self.name = f"{self.inner.name[:-3]}Chunks{self.inner.name[-3:]}"  # ...ChunksFwd

    def _copied(self, problem: ConvProblem) -> tuple[int, ...]:
        return copied_per_image(problem, self.layout)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the relaid solver claims the first chunk."""
        return self.inner.claims_first(self._relaid(problem), target)


def relaid_chunks_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a relaid chunk solver claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims(CHUNK_3D_SOLVERS, ConvTriton3dRelaidChunks, problem, target)


def _chunk_solvers() -> list[Solver]:
    """One per direction, and per direction and layout over the relaid solvers (none without
    the kernels' specs)."""
    if not have_kernels() or not has_kernels_spec("conv_triton_3d_spec"):
        return []
    plain: list[Solver] = [ConvTriton3dChunks(d) for d in ("F", "B", "W")]
    if not RELAID_3D_SOLVERS:
        return plain
    return [*plain, *(ConvTriton3dRelaidChunks(d, lay) for lay in ("NCDHW", "NDHWC")
                      for d in ("F", "B", "W"))]


CHUNK_3D_SOLVERS: list[Solver] = _chunk_solvers()
