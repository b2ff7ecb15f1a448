"""ConvTritonImplicitGemmChunks{Fwd,Bwd,Wrw}: layers too large for 32-bit offsets, a chunk of
the batch at a time.

Every kernel here indexes its tensors with 32-bit offsets, so each solver refuses a problem with
a tensor of 2**31 elements or more (`conv_triton_spec.fits_int32`): ESRGAN's 64-channel layers
at 1024x1024, a VAE decoder's 128-channel layers at 512x512, both at batch 32, had no solver at
all (bench/results/zoo_h200-sample3.json). Images are independent in forward and backward
data, and backward weights sums over them: these solvers cut the batch into chunks whose
tensors fit (`chunking`), and run the implicit GEMM on each chunk, its pointers a chunk's bytes
into the caller's activations ("x@offset": solvers.base.split_offset). Forward and backward data run
each chunk's launches in turn (a split's reduce included); backward weights runs every chunk
split (SPLIT_K of 2 or more), each chunk's partial sums in its own part of the workspace, and
one reduce over all the parts writes dw. A chunk is a multiple of the images that keep every
chunk's offset a multiple of 256 bytes, so the aligned objects stay legal; where no such
multiple fits (odd image sizes), the chunks run the objects that assume nothing.

The objects are the implicit GEMM's own on a chunk's problem (shape-agnostic: the last,
smaller chunk runs the same ones); the parameters and ranking are the implicit GEMM's on the
first chunk. They apply only where a tensor has 2**31 elements or more, where no other solver
does, and the weights fit (and, in backward weights, every chunk's partials); 2-D layers,
convolutions and transposed ones (the plain convolution's x and y: `conv_view`), in FP32
(IEEE), FP16 and BF16.

The machinery is `BatchChunks`, over an inner solver whose launches name the caller's x and y
and whose backward weights, split, leaves FP32 partials ([parts][dw's elements]) that one
reduce launch (`ws_ptr`, `SPLIT_K`) sums: the 3-D implicit GEMM's chunk solvers
(solvers/triton_3d_chunks.py) are it over ConvTriton3d. An inner solver may copy operands into
named parts of its workspace first (`lead_ins`; the 3-D relaid solvers' transposes and
channel padding) and its partials into a part of its own (`ws_part`): each chunk runs its
lead-ins, launch and follow-ups in turn, reusing the copies' parts; in backward weights each
chunk's partials take their own part after the copies', and the inner solver's follow-ups
after its reduce (the copy of dw back) run once, after the one reduce.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..problem import TYPE_BYTES, ConvProblem
from ..target import Target
from ._conv import conv_view, kernel_tensors
from .base import CompileJob, Launch, Params, Solver, WorkspaceParts, split_offset
from .triton_common import have_kernels, moved, spec_module
from .triton_conv import ConvTritonImplicitGemm

__all__ = ["BatchChunks", "CHUNK_SOLVERS", "ConvTritonImplicitGemmChunks", "chunking", "per_image"]

LIMIT = 2**31  # elements a tensor must stay below (32-bit offsets)
_ALIGN = 256  # bytes every chunk's offset is a multiple of
_SPLIT = 4  # the implicit GEMM's SPLIT_K position in its parameters
_PART = "ws_part"  # an inner solver's partial sums' part of its workspace, where it names one


def per_image(problem: ConvProblem) -> tuple[int, int]:
    """Elements of one image of the kernel's x and y (`conv_view`: a transposed problem's
    plain convolution reads the layer's y as its x)."""
    f = conv_view(problem).field
    return (f("c") * f("in_d") * f("in_h") * f("in_w"),
            f("k") * f("out_d") * f("out_h") * f("out_w"))


@lru_cache(maxsize=1024)
def chunking(problem: ConvProblem, copies: tuple[int, ...] = ()
             ) -> tuple[int, int, bool] | None:
    """(images per chunk, chunks, aligned) of a problem a tensor of which has LIMIT elements
    or more; None where every tensor fits already, where the weights do not, or where one
    image does not. `copies`: elements per image of the tensors an inner solver copies the
    caller's into (a channel-padded form), which must fit too. `aligned`: every chunk's offset
    is a multiple of 256 bytes (a chunk is a multiple of the images that keep it so), and the
    aligned objects may run; otherwise the chunks take the objects that assume nothing."""
    p = problem
    _cdiv = spec_module().cdiv
    per = per_image(p)
    weights = p.k * (p.c // p.groups) * math.prod(p.filter)
    widest = max(*per, *copies)
    if p.n * widest < LIMIT or weights >= LIMIT:
        return None
    elem = TYPE_BYTES[p.in_type]
    fit = (LIMIT - 1) // widest
    step = math.lcm(*(_ALIGN // math.gcd(count * elem, _ALIGN) for count in per))
    aligned = step <= fit
    if not aligned:
        step = 1
    if fit < 1:
        return None
    most = fit // step * step
    # As few chunks as fit, of as even a size as the step allows.
    count = _cdiv(p.n, most)
    images = min(most, _cdiv(_cdiv(p.n, count), step) * step)
    return images, _cdiv(p.n, images), aligned


class BatchChunks(WorkspaceParts, Solver):
    """One direction of an implicit GEMM (`inner`, on problems of `dims` spatial axes) for a
    problem too large for 32-bit offsets, a chunk of images at a time. A solver class lists
    it first among its bases, ahead of its inner solver's class, and sets `inner`."""

    inner: Solver
    direction: str
    dims = 2

    @property
    def ranking_name(self) -> str:
        return self.inner.ranking_name

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        return True  # no other solver takes its problems

    def _copied(self, problem: ConvProblem) -> tuple[int, ...]:
        """Elements per image of the tensors the inner solver copies the caller's into (none
        here; `chunking`'s `copies`)."""
        return ()

    def _chunking(self, problem: ConvProblem) -> tuple[int, int, bool] | None:
        return chunking(problem, self._copied(problem))

    def _chunks_aligned(self, problem: ConvProblem) -> bool:
        """Whether every chunk's launches may take the aligned objects (`chunking`'s
        `aligned`: the chunks' offsets into the caller's tensors keep them legal), or the
        conv launches read and write copies alone (an inner solver that copies both
        activations: the workspace's parts, whatever the chunks' offsets)."""
        got = self._chunking(problem)
        return got is None or got[2] or len(self._copied(problem)) == 2

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        """The first chunk's problem."""
        from .._record import replace

        got = self._chunking(problem)
        return problem if got is None else replace(problem, n=got[0])

    def _object(self, chunk: ConvProblem, problem: ConvProblem, params: Params,
                target: Target, unaligned: bool = False) -> CompileJob:
        """A chunk's object: the aligned one where every chunk's offset keeps it legal (and
        the caller's pointers are aligned: not `unaligned`)."""
        if unaligned or not self._chunks_aligned(problem):
            job = self.inner.unaligned_job(chunk, params, target)
            if job is not None:
                return job
        return self.inner.compile_job(chunk, params, target, False)

    def _chunks(self, problem: ConvProblem) -> list[tuple[ConvProblem, int]]:
        """(problem, first image) of each chunk."""
        from .._record import replace

        got = self._chunking(problem)
        assert got is not None, problem.key()
        images, count, _ = got
        return [(replace(problem, n=min(images, problem.n - i * images)), i * images)
                for i in range(count)]

    def _inner_params(self, params: Params) -> Params:
        """Backward weights sums the chunks' partials: SPLIT_K at least 2."""
        if self.direction == "W" and len(params) > _SPLIT and int(params[_SPLIT]) < 2:
            return (*params[:_SPLIT], 2, *params[_SPLIT + 1:])
        return tuple(params)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or len(p.in_spatial) != self.dims or \
                self._chunking(p) is None or p.in_type not in ("FP32", "FP16", "BF16"):
            return False
        first = self._relaid(p)
        if not self.inner.is_applicable(first, target):
            return False
        params = self._inner_params(self.inner.default_params(first, target))
        if not self.inner.params_valid(first, target, params):
            return False
        if self.direction != "W":
            return True
        # Parts end to end, every chunk's, and within the reduce's 32-bit offsets.
        at, per = self._part(first, params)
        return at % _ALIGN == 0 == per % _ALIGN and len(self._chunks(p)) * per // 4 < LIMIT

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The inner solver's space on the first chunk; backward weights' split sets alone."""
        space = self.inner.param_space(self._relaid(problem), target)
        return [tuple(s) for s in space if self._inner_params(s) == tuple(s)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.inner.params_valid(self._relaid(problem), target,
                                       self._inner_params(params))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        return self._inner_params(self.inner.default_params(self._relaid(problem), target))

    def _distinct(self, sets: list[Params], default: Params | None = None) -> list[Params]:
        """`sets` as the chunks run them (`_inner_params`), without repeats or `default`."""
        out: list[Params] = []
        for params in sets:
            params = self._inner_params(params)
            if params != default and params not in out:
                out.append(params)
        return out

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._distinct(self.inner.usual_params(self._relaid(problem), target))

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        return self.inner.defaults_rule(self._relaid(problem), target)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._distinct(self.inner.seed_params(self._relaid(problem), target),
                              self.default_params(problem, target))

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The implicit GEMM's shape-agnostic object of the first chunk (every chunk's)."""
        return self._object(self._relaid(problem), problem, self._inner_params(params), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        first, inner = self._relaid(problem), self._inner_params(params)
        job = self.inner.unaligned_job(first, inner, target)
        return job if job is not None else self.inner.compile_job(first, inner, target, False)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        return []  # the implicit GEMM's

    # ------------------------------------------------------------------ workspace
    def _part(self, first: ConvProblem, inner: Params) -> tuple[int, int]:
        """(byte offset, bytes) of the inner solver's partial sums in its workspace on the
        first chunk: from its `ws_part` on where it names one, all of it otherwise."""
        at = int(self.inner.workspace_slots(first, inner).get(_PART, 0))
        return at, self.inner.workspace_for(first, inner) - at

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """Forward and backward data: the inner solver's workspace (its parts), reused by each
        chunk in turn. Backward weights: its parts but the partials' (the copies, reused),
        then each chunk's partial sums, end to end (`ws_c<i>`)."""
        inner = self._inner_params(params)
        first = self._relaid(problem)
        slots = dict(self.inner.workspace_slots(first, inner))
        if self.direction != "W":
            return slots, self.inner.workspace_for(first, inner)
        at, per = self._part(first, inner)
        slots.pop(_PART, None)
        count = len(self._chunks(problem))
        return slots | {f"ws_c{i}": at + i * per for i in range(count)}, at + count * per

    # ------------------------------------------------------------------ launches
    def _names(self, problem: ConvProblem) -> dict[str, str]:
        """The kernel's tensors (x, w, y) -> the caller's names for them."""
        return kernel_tensors(problem)

    def _shifted(self, problem: ConvProblem, first_image: int) -> dict[str, int]:
        """The caller's activations' names -> the bytes their parts from `first_image` on
        start at."""
        names = self._names(problem)
        elem = TYPE_BYTES[problem.in_type]
        per = dict(zip(("x", "y"), per_image(problem), strict=True))
        return {names[t]: first_image * per[t] * elem for t in ("x", "y") if first_image}

    def _chunk_launch(self, launch: Launch, images: dict[str, int], part: str | None
                      ) -> Launch:
        """`launch` on a chunk: each pointer into an activation moved `images`' bytes further
        (a part of it already, "x@offset", too: a strided backward data's phase), and the
        inner solver's workspace pointer on `part` where one is named."""
        onto = {} if part is None else {
            a.name: "ptr:" + part for a in launch.args
            if a.name == "ws_ptr" and a.kind in ("ptr:workspace", "ptr:" + _PART)}
        kinds = {a.kind: f"ptr:{a.whole}@{split_offset(a.tensor)[1] + images[a.whole]}"
                 for a in launch.args if a.is_pointer and a.whole in images}
        return moved(launch, kinds, names=onto)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The first chunk's launch (from image 0: the caller's pointers)."""
        from .._record import replace

        inner = self.inner.launch(self._relaid(problem), self._inner_params(params), False)
        main = self._chunk_launch(inner, {}, "ws_c0" if self.direction == "W" else None)
        return replace(main, workspace_bytes=self._layout(problem, params)[1])

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The first chunk's lead-ins (the inner solver's copies of its operands)."""
        return self.inner.lead_ins(self._relaid(problem), self._inner_params(params), target)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target,
                   partials_channels_last: bool | None = None
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The first chunk's follow-ups (forward, backward data), every other chunk's
        lead-ins (those that read its images), launches and follow-ups, and in backward
        weights one reduce over every chunk's partials and the inner solver's steps after its
        reduce."""
        return self._follow_ups(problem, params, target, False)

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[tuple[CompileJob, Launch], ...]:
        """`follow_ups` with every later chunk on the object that assumes nothing: the
        caller's pointers missed the alignment the first chunk's aligned object assumes."""
        return self._follow_ups(problem, params, target, True)

    def _follow_ups(self, problem: ConvProblem, params: Params, target: Target,
                    unaligned: bool) -> tuple[tuple[CompileJob, Launch], ...]:
        inner = self._inner_params(params)
        chunks = self._chunks(problem)
        steps: list[tuple[CompileJob, Launch]] = []
        for index, (chunk, first_image) in enumerate(chunks):
            images = self._shifted(problem, first_image)
            part = f"ws_c{index}" if self.direction == "W" else None
            if index:  # lead-ins of the chunk's own images (the weights' copy stands)
                steps += [(job, self._chunk_launch(step, images, None))
                          for job, step in self.inner.lead_ins(chunk, inner, target)
                          if any(a.whole in images for a in step.args)]
                job = self._object(chunk, problem, inner, target, unaligned)
                steps.append((job, self._chunk_launch(self.inner.launch(chunk, inner, False),
                                                      images, part)))
            if self.direction != "W":
                steps += [(job, self._chunk_launch(step, images, None))
                          for job, step in self.inner.follow_ups(chunk, inner, target)]
        if self.direction == "W":
            (job, reduce), *after = self.inner.follow_ups(chunks[0][0], inner, target)
            total = int(inner[_SPLIT]) * len(chunks)
            steps += [(job, moved(reduce, names={"ws_ptr": "ptr:ws_c0"},
                                  values={"SPLIT_K": total})), *after]
        return tuple(steps)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return self.inner.heuristic_rank(self._relaid(problem), target)


class ConvTritonImplicitGemmChunks(BatchChunks, ConvTritonImplicitGemm):
    """One direction of the Triton implicit GEMM for a 2-D problem too large for 32-bit
    offsets, a chunk of images at a time."""

    def __init__(self, direction: str) -> None:
        super().__init__(direction, "ieee")
        self.inner = ConvTritonImplicitGemm(direction)
        self.name = f"{self.inner.name[:-3]}Chunks{self.inner.name[-3:]}"  # ...ChunksFwd
        self.rank_first = True


def _chunk_solvers() -> list[Solver]:
    """One per direction (none without the kernels)."""
    if not have_kernels():
        return []
    return [ConvTritonImplicitGemmChunks(d) for d in ("F", "B", "W")]


CHUNK_SOLVERS: list[Solver] = _chunk_solvers()
