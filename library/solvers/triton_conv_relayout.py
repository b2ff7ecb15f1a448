"""ConvTritonImplicitGemmVia{Nhwc,Nchw}{Fwd,Bwd,Wrw} (+ Tf32): the other layout's kernels.

The Triton implicit GEMM reads NHWC operands along channels, the reduction's inner dimension,
which is what the tensor cores want for 16-bit types; in NCHW the same loads run along pixels,
and on the H100 several cases measure 1.7-2.5x slower than the same layer in NHWC. TF32 is the
other way round in backward weights: its tensor cores read 32-bit operands K-major, which is
how the NCHW kernel has them there (pixels are its reduction). The spec's `via_other_layout`
(its VIA_* tables) lists those cases per target kind, with the measurements behind them. For
them these solvers transpose the operands into the workspace (`transpose_021`), run the other
layout's kernel of `ConvTritonImplicitGemm` on them with the same parameters, and transpose the
result back; where that kernel splits its reduction, the reduce launch writes the output in
the caller's layout directly (it takes any strides), so the output needs no transpose.
MIOpen's NHWC implicit-GEMM solvers serve NCHW problems the same way. A transposed convolution
is its plain convolution's opposite direction (`conv_view`), copies and all, and takes these
solvers as that direction's problem does (U-Net's 2x2 up-convolutions in NCHW took 1.8-5.4x
cuDNN's GPU time on the NCHW kernels, zoo_h200-fb-9ec5af9), except where its copies would be
channel-padded (`padded_nhwc`).

Every conv object is the other layout's solver's own (`compile_job` is its job on the relaid
problem); only the transpose kernel (one object per element type and tile) is added to a
package. A tensor that is the same bytes in both layouts (1x1 weights) is not copied: the kernel
takes the caller's.
Parameters, defaults and the ranking's model are those of that solver (`ranking_name`); the
miss ranking puts these solvers first in the cases the tables list (`via_layout`), and the
direct solver of the same math then no longer ranks first (the registry's YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from ._conv import ConvView, conv_view, kernel_tensors, relaid, workspace_round
from .base import CompileJob, InnerParameters, Launch, Params, Solver, WorkspaceParts
from .triton_common import (
    CONV_KERNEL_FILE,
    MATH_TYPE,
    PAD_SPEC,
    aligned_object,
    conv_triton_job,
    has_kernels_spec,
    have_kernels,
    kernel_arg,
    kernels_spec,
    moved,
    padded_problem,
    problem_view,
    scratch_args,
    spec_module,
    spec_sizes,
    splits_reduction,
    target_kind,
)
from .triton_conv import ConvTritonImplicitGemm
from .triton_small_grid import small_grid_config
from .triton_tile_rule import narrow_group_config

__all__ = ["ConvTritonImplicitGemmRelayout", "VIA_SOLVERS", "TRANSPOSE_KERNEL", "relaid",
           "copied_per_image", "transpose_job", "transpose_step", "via_layout"]

TRANSPOSE_KERNEL = "transpose_021"
# The workspace parts, by the conv kernel's tensor they stand for.
_SLOTS = {"x": "ws_x", "w": "ws_w", "y": "ws_y", "part": "ws_part"}


def via_layout(problem: ConvProblem, target: Target, math: str) -> str | None:
    """The layout ("NHWC" or "NCHW") whose kernels, with transposes, compute the problem
    faster than its own layout's on the target's kind (the spec's `via_other_layout`), or
    None where its own are the ones to use (also on a small grid: triton_small_grid)."""
    p = problem
    if len(p.in_spatial) != 2 or p.in_layout not in ("NCHW", "NHWC") or \
            not p.in_layout == p.wei_layout == p.out_layout:
        return None
    kind = target_kind(target.arch)
    if kind is None:
        return None
    type_name = MATH_TYPE.get(math, problem.in_type)
    case = f"{type_name}-{problem.key_direction}"
    sizes = spec_sizes(problem_view(problem)[0])
    if not spec_module().via_other_layout(kind, p.in_layout, case, sizes):
        return None
    if p.mode != "conv" and sizes["C"] < spec_module().VIA_NHWC_MIN_C:
        # The few-channel table was measured on plain stems: DCGAN's 64 -> 3 up-convolution
        # in NHWC took 1.01x cuDNN through NCHW against 0.65x on its own few-channel kernel
        # (zoo_h200-trans-fdf1aef.json against zoo_h200-fb-9ec5af9.json).
        return None
    if p.in_layout == "NHWC" and sizes["C"] < spec_module().VIA_NHWC_MIN_C and \
            type_name in ("FP16", "BF16") and aligned_object(problem):
        # The few-channel table was measured on the generic objects: on their objects aligned
        # on dy's side the own layout's stride-2 stems took 0.21-0.70 of cuDNN's GPU time in
        # backward data where immediate mode's choice, mostly this route, took 0.37-0.99 (18
        # stems; ConvNeXt's stride-4 patchify 1.29 against 1.51), and backward weights went to
        # the own kernel too (H100, FP16, bench/results/fewc_aligned_h100-6dc4da4/bw.json).
        return None
    if small_grid_config(problem, target, math) is not None:
        return None  # the own layout's narrow split tile (solvers/triton_small_grid.py)
    if p.in_layout == "NCHW" and narrow_group_config(problem, target, math) is not None:
        return None  # groups of 16 or 32 at a tile as wide: cheaper than the copies' route
    if p.in_layout == "NCHW" and not _aligned(relaid(problem, "NHWC")) and \
            padded_nhwc(problem) is None:
        return None  # odd channels: the NHWC kernel's generic object, 20-45x the aligned one
    return "NHWC" if p.in_layout == "NCHW" else "NCHW"


def _aligned(problem: ConvProblem) -> bool:
    """Whether a channels-last problem takes its kernel's aligned object where it has one
    (16-bit: channel counts multiples of 8). Without it the NHWC kernel loads one element at
    a time: 22-45x cuDNN's GPU time on RetinaNet's 819- and 36-filter heads and a VAE's
    3-channel output through these solvers (bench/results/zoo_h200-sample3.json)."""
    spec = spec_module()
    _, args, kernel, channels_last = problem_view(problem)
    return not channels_last or \
        True not in spec.align16_variants(kernel, channels_last, problem.in_type) or \
        bool(spec.meets_align16(args, channels_last, problem.in_type, kernel))


@lru_cache(maxsize=4096)
def padded_nhwc(problem: ConvProblem) -> ConvProblem | None:
    """The NHWC form of an NCHW problem of one group with its input channels and filters
    rounded up to the padded solvers' multiple (conv_triton_pad_spec), where that form takes
    the aligned object and the plain one does not: the transposes write the padded copies (the
    new channels zero) and read the output's real channels back. None elsewhere, and for a
    transposed convolution (`_copies` pads the plain convolution's tensors by the problem's
    own channel counts, which a transposed one's view swaps)."""
    q = relaid(problem, "NHWC")
    if problem.groups != 1 or problem.mode != "conv" or _aligned(q) or \
            not has_kernels_spec(PAD_SPEC) or \
            problem.in_type not in kernels_spec(PAD_SPEC).TYPES:
        return None
    q = padded_problem(q)
    return q if _aligned(q) else None


@lru_cache(maxsize=4096)
@lru_cache(maxsize=4096)
def _shapes(view: ConvView) -> dict[str, tuple[int, int, int]]:
    """Each tensor as the [B][R][S] its NCHW form is (x: n, channels, pixels; w: filters,
    channels per group, taps; y: n, filters, pixels)."""
    z = spec_sizes(view)
    g = z["G"]
    return {"x": (z["N"], g * z["C"], z["H"] * z["W"]),
            "w": (g * z["K"], z["C"], z["R"] * z["S"]),
            "y": (z["N"], g * z["K"], z["P"] * z["Q"])}


@lru_cache(maxsize=4096)
def _copies(problem: ConvProblem, layout: str) -> dict[str, tuple[int, int, int, int, int]]:
    """The tensors a solver running `layout`'s kernels copies, each as (b, r, s, padded b,
    padded r) of its NCHW form (`_shapes`; padded: the copy's rows and channels in the padded
    NHWC form, `padded_nhwc`, else b and r). One the same bytes in both layouts (a single
    channel or pixel: 1x1 weights) and not padded is no copy: the kernel takes the caller's."""
    identity = spec_module().transpose_is_identity
    q = padded_nhwc(problem) if layout == "NHWC" else None
    rounded = {"x": (problem.n, q.c), "w": (q.k, q.c), "y": (problem.n, q.k)} if q else {}
    out = {}
    for t, (b, r, s) in _shapes(conv_view(problem)).items():
        pb, pr = rounded.get(t, (b, r))
        if (pb, pr) != (b, r) or not identity(r, s):
            out[t] = (b, r, s, pb, pr)
    return out


def copied_per_image(problem: ConvProblem, layout: str) -> tuple[int, ...]:
    """Elements per image of the activations' copies (x, y; padded rows included) a solver
    running `layout`'s kernels makes: the batch-chunk solvers over it size chunks by them."""
    return tuple(pr * s for t, (_, _, s, _, pr) in _copies(problem, layout).items()
                 if t != "w")


def transpose_job(data_type: str, target: Target, tile: tuple[int, int]) -> CompileJob:
    """The transpose kernel's object of one element type and tile."""
    spec = spec_module()
    config = (("BLOCK_R", tile[0]), ("BLOCK_S", tile[1]), ("num_stages", 1),
              ("num_warps", int(spec.TRANSPOSE_WARPS)))
    return conv_triton_job(CONV_KERNEL_FILE, "ieee", TRANSPOSE_KERNEL, data_type, config, False,
                           False, target)


def transpose_step(data_type: str, target: Target, src: str, dst: str,
                   shape: tuple[int, int, int], src_s: int | None = None,
                   padded: tuple[int, int] | None = None) -> tuple[CompileJob, Launch]:
    """`transpose_021` of the [b][r][s] `shape` from `src` (rows `src_s` apart, s where None)
    into `dst`, padded to [padded b][s][padded r] where given: its object and launch."""
    b, r, s = shape
    pb, pr = padded or (b, r)
    spec = spec_module()
    tile = spec.transpose_tile(r, s, int(spec.ELEMENT_BYTES[data_type]))
    args = (kernel_arg("src_ptr", "ptr:" + src, None),
            kernel_arg("dst_ptr", "ptr:" + dst, None), kernel_arg("B", "i32", b),
            kernel_arg("R", "i32", r), kernel_arg("S", "i32", s),
            kernel_arg("SRC_S", "i32", src_s or s), kernel_arg("DST_B", "i32", pb),
            kernel_arg("DST_R", "i32", pr), *scratch_args())
    grid = spec.grid(TRANSPOSE_KERNEL, {"B": pb, "R": pr, "S": s},
                     {"BLOCK_R": tile[0], "BLOCK_S": tile[1]})
    launch = Launch(TRANSPOSE_KERNEL, grid, (int(spec.TRANSPOSE_WARPS) * 32, 1, 1), args,
                    needs_meta=True)
    return transpose_job(data_type, target, tile), launch


class ConvTritonImplicitGemmRelayout(WorkspaceParts, InnerParameters,
                                      ConvTritonImplicitGemm):
    """One direction of the Triton implicit GEMM for problems of one layout, through the
    kernels of the other (`layout`: the one its kernels run in, NHWC or NCHW)."""

    inner: ConvTritonImplicitGemm

    def __init__(self, direction: str, math: str = "ieee", layout: str = "NHWC") -> None:
        super().__init__(direction, math)
        self.layout = layout
        self.inner = ConvTritonImplicitGemm(direction, math)
        self.name = (f"{self.inner.name[:-3]}Via{layout.capitalize()}"
                     f"{self.inner.name[-3:]}")  # ...ViaNhwcBwd
        self.rank_first = True

    @property
    def ranking_name(self) -> str:
        return self.inner.name

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        # Where it applies, the spec's tables say it is the faster path (the direct solver's
        # rule, inherited, would say the opposite there); the registry's precedence puts a
        # Winograd or 1x1 GEMM solver that claims the problem ahead of it.
        return True

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        """The problem the inner kernel runs: the other layout's, channel-padded where the
        plain NHWC form misses the aligned objects (`padded_nhwc`)."""
        return (self.layout == "NHWC" and padded_nhwc(problem)) or relaid(problem, self.layout)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or \
                via_layout(p, target, self.math) != self.layout:
            return False
        if not self.inner.is_applicable(self._relaid(p), target):
            return False
        spec = spec_module()
        elem = int(spec.ELEMENT_BYTES[p.in_type])
        return all(spec.transpose_fits(b, r, s, elem, pb, pr)
                   for b, r, s, pb, pr in _copies(p, self.layout).values())

    # ------------------------------------------------------------------ kernels
    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The transpose kernel for each element type the solver takes on `target` and each
        tile, on the kinds where it applies (the conv objects are the inner solver's)."""
        kind = target_kind(target.arch)
        problems = "NCHW" if self.layout == "NHWC" else "NHWC"  # the layout it serves
        if kind is None or not spec_module().via_cases(kind, problems) or \
                self._kind(target) is None:
            return []
        return [transpose_job(t, target, tile) for t in ("FP16", "BF16", "FP32")
                if self._type_applicable(t, target) for tile in spec_module().TRANSPOSE_TILES]

    # ------------------------------------------------------------------ workspace
    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """({slot: byte offset}, total bytes) of the workspace: the relaid copies of the
        tensors `_copies` lists (the output's only where no reduce launch writes the caller's,
        which a padded one never does), then the inner kernel's own partial sums."""
        elem = int(spec_module().ELEMENT_BYTES[problem.in_type])
        out = spec_module().KERNELS[self._kernel(problem)]["writes"][0]
        direct = int(self._config(params)["SPLIT_K"]) > 1 and not self._padded(problem)
        offsets: dict[str, int] = {}
        at = 0
        for tensor, (_, _, s, pb, pr) in _copies(problem, self.layout).items():
            if tensor == out and direct:
                continue
            offsets[_SLOTS[tensor]] = at
            at += workspace_round(pb * pr * s * elem)
        part = self.inner.workspace_for(self._relaid(problem), params)
        offsets[_SLOTS["part"]] = at if part else 0  # unused without a split: any address
        return offsets, at + workspace_round(part)

    def _padded(self, problem: ConvProblem) -> bool:
        return self.layout == "NHWC" and padded_nhwc(problem) is not None

    def _kernel(self, problem: ConvProblem) -> str:
        return self.inner._view(self._relaid(problem))[2]

    # ------------------------------------------------------------------ launches
    def _names(self, problem: ConvProblem) -> dict[str, str]:
        """The kernel's tensors (x, w, y) -> the caller's names for them."""
        return kernel_tensors(problem)

    def _transpose(self, problem: ConvProblem, target: Target, src: str, dst: str,
                   shape: tuple[int, int, int], src_s: int | None = None,
                   padded: tuple[int, int] | None = None) -> tuple[CompileJob, Launch]:
        """`transpose_step` in the problem's element type."""
        return transpose_step(problem.in_type, target, src, dst, shape, src_s, padded)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Each tensor the kernel reads, into the kernel's layout in its workspace part,
        channel-padded where `_copies` says (none for a tensor that is the same bytes in
        both and not padded)."""
        copies = _copies(problem, self.layout)
        names = self._names(problem)
        reads = spec_module().KERNELS[self._kernel(problem)]["reads"]
        pads = self.layout == "NHWC"  # only NCHW -> NHWC copies are ever padded
        return tuple(self._transpose(problem, target, names[t], _SLOTS[t],
                                     self._into(copies[t][:3]), None,
                                     copies[t][3:] if pads else None)
                     for t in ("x", "w", "y") if t in reads and t in copies)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The inner kernel's launch, its tensors in the workspace."""
        from .._record import replace

        inner = self.inner.launch(self._relaid(problem), params, specialised)
        names = self._names(problem)
        slots, total = self._layout(problem, params)
        # A split launch writes partials, not its output: that pointer stays the caller's.
        to_slot = {"ptr:" + names[t]: "ptr:" + _SLOTS[t] for t in ("x", "w", "y")
                   if _SLOTS[t] in slots}
        to_slot["ptr:workspace"] = "ptr:" + _SLOTS["part"]
        return replace(moved(inner, to_slot), workspace_bytes=total)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target,
                   partials_channels_last: bool | None = None
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The inner kernel's reduce (partials from the workspace, in the order the inner
        kernel wrote them, into the caller's output with its strides), or the output's
        transpose back into the caller's layout."""
        from .._record import replace

        kernel = self._kernel(problem)
        out = spec_module().KERNELS[kernel]["writes"][0]
        names = self._names(problem)
        split = int(self._config(params)["SPLIT_K"]) > 1 and splits_reduction(kernel)
        steps: list[tuple[CompileJob, Launch]] = []
        if split and not self._padded(problem):
            # The caller's problem's reduce, its strides, over the partials in the order the
            # inner kernel wrote them (a channels-last object's: channels last).
            (job, launch), = super().follow_ups(
                problem, params, target, self.inner._view(self._relaid(problem))[3])
            args = tuple(kernel_arg(a.name, "ptr:" + _SLOTS["part"], None)
                         if a.kind == "ptr:workspace" and a.name == "ws_ptr" else a
                         for a in launch.args)
            return ((job, replace(launch, args=args)),)
        if split:  # padded: the padded problem's reduce into the padded output's part
            steps = self._inner_follow_ups(problem, params, target)
        copies = _copies(problem, self.layout)
        if out not in copies:  # the same bytes in both layouts: the kernel wrote the caller's
            return tuple(steps)
        b, r, s, _, pr = copies[out]
        if self.layout == "NHWC":  # [pb][s][pr] (the real r of each row) -> [b][r][s]
            steps.append(self._transpose(problem, target, _SLOTS[out], names[out], (b, s, r),
                                         pr))
        else:  # [b][r][s] -> the caller's [b][s][r]
            steps.append(self._transpose(problem, target, _SLOTS[out], names[out], (b, r, s)))
        return tuple(steps)

    def _inner_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                          ) -> list[tuple[CompileJob, Launch]]:
        """The inner solver's follow-ups on the relaid problem (a split's reduce), its
        tensors and partials in this solver's workspace parts."""
        from .._record import replace

        names = self._names(problem)
        slots = self._layout(problem, params)[0]
        moved = {"ptr:" + names[t]: "ptr:" + _SLOTS[t] for t in ("x", "w", "y")
                 if _SLOTS[t] in slots}
        steps = []
        for job, launch in self.inner.follow_ups(self._relaid(problem), params, target):
            args = tuple(kernel_arg(a.name, "ptr:" + _SLOTS["part"], None)
                         if a.kind == "ptr:workspace" and a.name == "ws_ptr" else
                         kernel_arg(a.name, moved.get(a.kind, a.kind), a.value)
                         for a in launch.args)
            steps.append((job, replace(launch, args=args)))
        return steps

    def _into(self, shape: tuple[int, int, int]) -> tuple[int, int, int]:
        """The [B][R][S] a tensor is in the caller's layout, whose transpose is the layout the
        kernel runs in: NCHW [b][r][s] into NHWC, or NHWC [b][s][r] into NCHW."""
        b, r, s = shape
        return (b, r, s) if self.layout == "NHWC" else (b, s, r)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """The inner kernel's estimate plus the transposes (after the direct solver on a tie)."""
        return super().heuristic_rank(problem, target) + 1.0


def _via_solvers() -> list[Solver]:
    """A Via solver for each (math, direction, layout) that some kind's VIA_NHWC,
    VIA_NHWC_ONE_TAP, VIA_NCHW or VIA_NCHW_FEW_C lists (none without the kernels)."""
    if not have_kernels():
        return []
    spec = spec_module()
    maths = {t: m for m, t in MATH_TYPE.items()}
    listed = {(maths.get(c.split("-")[0], "ieee"), c[-1], layout)
              for layout, table in (("NHWC", spec.VIA_NHWC), ("NHWC", spec.VIA_NHWC_ONE_TAP),
                                    ("NCHW", spec.VIA_NCHW), ("NCHW", spec.VIA_NCHW_FEW_C))
              for cases in table.values() for c in cases}
    return [ConvTritonImplicitGemmRelayout(d, m, lay) for lay in ("NHWC", "NCHW")
            for m in ("ieee", "tf32") for d in ("F", "B", "W") if (m, d, lay) in listed]


VIA_SOLVERS: list[Solver] = _via_solvers()
