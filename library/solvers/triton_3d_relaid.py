"""ConvTriton3dViaNdhwc{Fwd,Bwd,Wrw} and ConvTriton3dPadded{Fwd,Bwd,Wrw}: 3-D problems on the
3-D implicit GEMM's aligned channels-last objects.

The 3-D kernels (solvers/triton_3d.py) read channels-last operands along channels, the GEMM's
reduction, with 16-byte vectors where the aligned object applies (channel counts and strides
multiples of 16); NCDHW problems, and NDHWC ones of channel counts like (2+1)-D's 45, 230, 460
and 921 or a stem's 3, take the generic object, which loads along pixels or one element at a
time. On the H200 (bench/results/zoo_h200-nhwc-57b2c95, zoo_h200-nchw-57b2c95) the same layer
took 2-9x longer in NCDHW than in NDHWC, and the odd-channel NDHWC layers 8-37x cuDNN's time.
These solvers copy the operands into the workspace in the aligned form, run the 3-D solver's
aligned object on that problem with the same parameters, and copy the output back:
- Via: an NCDHW problem through NDHWC (`transpose_021`: [b][r][s] -> [b][s][r] with r the
  channels), its channels rounded up to PAD_MULTIPLE where they miss it (the new ones zero);
- Padded: an NDHWC problem whose channel counts miss the multiple, each such tensor copied with
  its channel rows widened (`pad_rows`).
Zero channels add nothing to a sum, and the padded output's extra channels are not copied back.
The output is always the workspace's copy: a split backward weights' reduce sums the parts
into it (its partials are laid out by the padded sizes), then it is copied back.

Every conv object is the 3-D solver's own on the relaid problem (`compile_job`); a package adds
the copies' objects, those the 2-D Via and padded solvers ship. Parameters, defaults and the
ranking's model are the 3-D solver's (`ranking_name`). One group (or no padding); transposed
problems only where nothing is padded. They rank first on the spec's RELAID_KINDS where
`relaid_first` says (the registry's YIELDS_TO puts the 3-D solver after them there).
16-bit problems take the IEEE kernels; FP32 NCDHW problems go through NDHWC on the
three-TF32-product kernels in the spec's RELAID_TF32X3 directions
(`ConvTriton3dViaNdhwcTf32x3*`), channels padded only in its RELAID_TF32X3_PADDED ones and
not below the multiple (a stem's); in those directions FP32 NDHWC problems of such channel
counts take the padded copies (`ConvTriton3dPaddedTf32x3*`).
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from ._conv import conv_view, kernel_tensors, macs, workspace_round
from .base import (
    CompileJob,
    InnerParameters,
    Launch,
    Params,
    Solver,
    WorkspaceParts,
    family_claims,
)
from .triton_3d import ConvTriton3d, spec_3d
from .triton_3d import _view as _view_3d
from .triton_common import PAD_SPEC, has_kernels_spec, kernels_spec, moved, spec_module
from .triton_conv_relayout import _SLOTS, transpose_job, transpose_step
from .triton_padded import pad_job, pad_step

__all__ = ["ConvTriton3dRelaid", "RELAID_3D_SOLVERS", "copied_per_image", "relaid_first",
           "relaid_problem"]

#: The kernel's tensors each direction of the plain convolution reads, and the one it writes.
_READS = {"F": ("x", "w"), "B": ("y", "w"), "W": ("x", "y")}
_WRITES = {"F": "y", "B": "x", "W": "w"}
#: The element types of each math's relaid solvers: 16-bit on the IEEE kernels, FP32 on the
#: three-TF32-product ones (NCDHW, unpadded, the spec's RELAID_TF32X3 directions).
_TYPES = {"ieee": ("FP16", "BF16"), "tf32x3": ("FP32",)}

Copy = tuple[int, int, int, int, int]  # (b, r, s, padded b, padded r)


def _padded(channels: int) -> int:
    m = int(spec_3d().PAD_MULTIPLE)
    return -(-int(channels) // m) * m


@lru_cache(maxsize=4096)
def relaid_problem(problem: ConvProblem, layout: str) -> ConvProblem | None:
    """The NDHWC problem a solver of `layout` ("NCDHW": Via, "NDHWC": Padded) runs for
    `problem`, channel-padded where its channels miss PAD_MULTIPLE; None where the solver does
    not take the problem (another layout, a padded one that needs no padding, padding that a
    grouped or transposed problem cannot take)."""
    from .._record import replace

    p = problem
    if len(p.in_spatial) != 3 or not p.in_layout == p.wei_layout == p.out_layout == layout:
        return None
    q = replace(p, in_layout="NDHWC", wei_layout="NDHWC", out_layout="NDHWC")
    c, k = _padded(p.c), _padded(p.k)
    if (c, k) == (p.c, p.k):
        return q if layout == "NCDHW" else None
    if p.groups != 1 or p.mode != "conv":
        return None
    return replace(q, c=c, k=k)


@lru_cache(maxsize=4096)
def _copies(problem: ConvProblem, layout: str) -> dict[str, Copy]:
    """The tensors (the kernel's x, w, y) the solver copies, each as (b, r, s, padded b,
    padded r) of its channels-first form [b][r][s] (x: n, channels, pixels; w: filters,
    channels, taps; y: n, filters, pixels). A tensor neither padded nor (Via) changed by the
    transpose (one channel or one pixel) is not copied: the kernel takes the caller's."""
    q = relaid_problem(problem, layout)
    assert q is not None, problem.key()
    _, z, _, _ = _view_3d(problem)
    _, zq, _, _ = _view_3d(q)
    g = z["G"]
    pixels = {"x": z["D"] * z["H"] * z["W"], "w": z["T"] * z["R"] * z["S"],
              "y": z["Z"] * z["P"] * z["Q"]}
    rows = {"x": (z["N"], g * z["C"], z["N"], g * zq["C"]),
            "w": (g * z["K"], z["C"], g * zq["K"], zq["C"]),
            "y": (z["N"], g * z["K"], z["N"], g * zq["K"])}
    identity = spec_module().transpose_is_identity
    out = {}
    for t, (b, r, pb, pr) in rows.items():
        s = pixels[t]
        if (pb, pr) != (b, r) or (layout == "NCDHW" and not identity(r, s)):
            out[t] = (b, r, s, pb, pr)
    return out


def copied_per_image(problem: ConvProblem, layout: str) -> tuple[int, ...]:
    """Elements per image of the activations (x, y) the solver of `layout` copies (none where
    it does not take the problem): the batch-chunk solvers over it size chunks by them."""
    if relaid_problem(problem, layout) is None:
        return ()
    return tuple(pr * s for t, (_, _, s, _, pr) in _copies(problem, layout).items() if t != "w")


def relaid_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a relaid solver of `math` claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims((s for s in RELAID_3D_SOLVERS if s.math == math), ConvTriton3dRelaid,
                         problem, target)


class ConvTriton3dRelaid(WorkspaceParts, InnerParameters, ConvTriton3d):
    """One direction of the 3-D implicit GEMM for problems of `layout` (NCDHW: through NDHWC;
    NDHWC: through its channel-padded form) on the aligned channels-last objects."""

    inner: ConvTriton3d
    clears_phases = False  # its kernel writes dx's copy, not dx

    def __init__(self, direction: str, layout: str, math: str = "ieee") -> None:
        super().__init__(direction, math)
        self.layout = layout
        self.inner = ConvTriton3d(direction, math)
        self.inner.clears_phases = False
        infix = "ViaNdhwc" if layout == "NCDHW" else "Padded"
        self.name = f"ConvTriton3d{infix}{self.inner.name[len('ConvTriton3d'):]}"

    @property
    def ranking_name(self) -> str:
        return self.inner.ranking_name

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        q = relaid_problem(problem, self.layout)
        assert q is not None, problem.key()
        return q

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On RELAID_KINDS: a padded problem from RELAID_MIN_POSITIONS output positions; an
        NCDHW one where the layer does VIA_MIN_MACS (its direction's) multiply-adds or more per
        element the copies write (below that the transposes cost more than the layout
        saves)."""
        spec = spec_3d()
        if self._kind(target) not in spec.RELAID_KINDS:
            return False
        if self.layout == "NDHWC":
            view = conv_view(problem)
            return view.out_positions >= int(spec.RELAID_MIN_POSITIONS)
        moved = sum(pb * pr * s for _, _, s, pb, pr in _copies(problem, self.layout).values())
        least = int(spec.VIA_MIN_MACS[conv_view(problem).direction])
        return macs(problem) >= least * max(moved, 1)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.in_type not in _TYPES[self.math] or \
                not p.in_type == p.wei_type == p.out_type or \
                not has_kernels_spec(PAD_SPEC):
            return False
        q = relaid_problem(p, self.layout)
        if q is None or not self.inner.is_applicable(q, target) or not self.inner._aligned(q):
            return False
        if self.math != "ieee" and (q.c, q.k) != (p.c, p.k) and (
                self.direction not in getattr(spec_3d(), "RELAID_TF32X3_PADDED", ()) or
                min(p.c, p.k) < int(spec_3d().PAD_MULTIPLE)):
            return False  # FP32: padded only where the spec's estimate says, not a stem
        return all(self._fits(p, copy) for copy in _copies(p, self.layout).values())

    def _fits(self, problem: ConvProblem, copy: Copy) -> bool:
        b, r, s, pb, pr = copy
        if self.layout == "NCDHW":
            elem = int(spec_module().ELEMENT_BYTES[problem.in_type])
            return bool(spec_module().transpose_fits(b, r, s, elem, pb, pr))
        pad = kernels_spec(PAD_SPEC)
        return bool(pad.fits(b * s, r, r, pb * s, pr, pr) and pad.fits(b * s, r, pr, b * s, r, r))

    # ------------------------------------------------------------------ kernels
    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The copies' objects per element type and tile (the conv objects are the 3-D
        solver's)."""
        if self._kind(target) is None or not has_kernels_spec(PAD_SPEC):
            return []
        types = [t for t in _TYPES[self.math] if self.inner._type_applicable(t, target)]
        if self.layout == "NCDHW":
            return [transpose_job(t, target, tile) for t in types
                    for tile in spec_module().TRANSPOSE_TILES]
        return [pad_job(t, target, tile) for t in types for tile in kernels_spec(PAD_SPEC).TILES]

    # ------------------------------------------------------------------ workspace
    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """({slot: byte offset}, total bytes): the copies (`_copies`, the output's included),
        then the 3-D solver's own partial sums."""
        elem = int(spec_module().ELEMENT_BYTES[problem.in_type])
        offsets: dict[str, int] = {}
        at = 0
        for tensor, (_, _, s, pb, pr) in _copies(problem, self.layout).items():
            offsets[_SLOTS[tensor]] = at
            at += workspace_round(pb * pr * s * elem)
        part = self.inner.workspace_for(self._relaid(problem), params)
        offsets[_SLOTS["part"]] = at if part else 0  # unused without a split: any address
        return offsets, at + workspace_round(part)

    # ------------------------------------------------------------------ launches
    def _names(self, problem: ConvProblem) -> dict[str, str]:
        """The kernel's tensors (x, w, y) -> the caller's names for them."""
        return kernel_tensors(problem)

    def _moved(self, launch: Launch, problem: ConvProblem, params: Params) -> Launch:
        """`launch` with the copied tensors' pointers on their workspace parts and the 3-D
        solver's partials on its own part."""
        names = self._names(problem)
        slots = self._layout(problem, params)[0]
        to_slot = {"ptr:" + names[t]: "ptr:" + _SLOTS[t] for t in ("x", "w", "y")
                   if _SLOTS[t] in slots}
        return moved(launch, {**to_slot, "ptr:workspace": "ptr:" + _SLOTS["part"]})

    def _copy_in(self, problem: ConvProblem, target: Target, tensor: str
                 ) -> tuple[CompileJob, Launch]:
        b, r, s, pb, pr = _copies(problem, self.layout)[tensor]
        src, dst = self._names(problem)[tensor], _SLOTS[tensor]
        if self.layout == "NCDHW":  # caller's [b][r][s] -> [pb][s][pr]
            return transpose_step(problem.in_type, target, src, dst, (b, r, s), None, (pb, pr))
        return pad_step(problem.in_type, target, src, dst, b * s, r, r, pb * s, pr, pr)

    def _copy_out(self, problem: ConvProblem, target: Target, tensor: str
                  ) -> tuple[CompileJob, Launch]:
        b, r, s, _, pr = _copies(problem, self.layout)[tensor]
        src, dst = _SLOTS[tensor], self._names(problem)[tensor]
        if self.layout == "NCDHW":  # [b][s] rows of pr (the real r of each) -> [b][r][s]
            return transpose_step(problem.in_type, target, src, dst, (b, s, r), pr)
        return pad_step(problem.in_type, target, src, dst, b * s, r, pr, b * s, r, r)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Each tensor the kernel reads that `_copies` lists, into its workspace part."""
        copies = _copies(problem, self.layout)
        return tuple(self._copy_in(problem, target, t)
                     for t in _READS[conv_view(problem).direction] if t in copies)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The 3-D solver's launch on the relaid problem, its tensors in the workspace."""
        from .._record import replace

        inner = self.inner.launch(self._relaid(problem), params, specialised)
        return replace(self._moved(inner, problem, params),
                       workspace_bytes=self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The 3-D solver's reduce (a split backward weights) into the workspace's output,
        then the output back into the caller's tensor where it was copied."""
        steps = [(job, self._moved(launch, problem, params)) for job, launch in
                 self.inner.follow_ups(self._relaid(problem), params, target)]
        out = _WRITES[conv_view(problem).direction]
        if out in _copies(problem, self.layout):
            steps.append(self._copy_out(problem, target, out))
        return tuple(steps)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.inner.launch_geometry(self._relaid(problem), params)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """The 3-D solver's estimate on the relaid problem plus the copies."""
        return self.inner.heuristic_rank(self._relaid(problem), target) + 1.0


def _relaid_solvers() -> list[Solver]:
    """One per direction and layout on the IEEE kernels; on the three-TF32-product kernels an
    NCDHW one per direction of the spec's RELAID_TF32X3 and an NDHWC (padded) one per
    direction of its RELAID_TF32X3_PADDED (none without the kernels or the copy's spec)."""
    from .triton_common import have_kernels

    if not have_kernels() or not has_kernels_spec(PAD_SPEC):
        return []
    spec = spec_3d()
    return [*(ConvTriton3dRelaid(d, lay) for lay in ("NCDHW", "NDHWC") for d in ("F", "B", "W")),
            *(ConvTriton3dRelaid(d, "NCDHW", "tf32x3")
              for d in getattr(spec, "RELAID_TF32X3", ())),
            *(ConvTriton3dRelaid(d, "NDHWC", "tf32x3")
              for d in getattr(spec, "RELAID_TF32X3_PADDED", ()))]


RELAID_3D_SOLVERS: list[Solver] = _relaid_solvers()
