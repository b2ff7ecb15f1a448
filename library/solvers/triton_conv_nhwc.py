"""ConvTritonImplicitGemmViaNhwc{Fwd,Bwd,Wrw} (+ Tf32): an NCHW problem on the NHWC kernels.

The Triton implicit GEMM reads NHWC operands along channels, the reduction's inner dimension,
which is what the tensor cores want; in NCHW the same loads run along pixels, and on the H100
several cases measure 1.7-2.5x slower than the same layer in NHWC (the spec's `VIA_NHWC`
lists them, with the measurement behind it). For those cases these solvers transpose the
NCHW operands into the workspace (`transpose_021`), run the NHWC kernel of
`ConvTritonImplicitGemm` on them with the same parameters, and transpose the result back;
where that kernel splits its reduction, the reduce launch writes the NCHW output directly
(it takes any strides), so the output needs no transpose. MIOpen's NHWC implicit-GEMM solvers
serve NCHW problems the same way.

Every conv object is the NHWC solver's own (`compile_job` is its job on the NHWC problem);
only the transpose kernel (one object per element type) is added to a package. Parameters,
defaults and the ranking's model are those of the NHWC solver (`ranking_name`); the miss
ranking puts these solvers first in the cases `VIA_NHWC` lists (`ranks_first`), and the NCHW
solver of the same math then no longer ranks first.
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from ._conv import ConvView, conv_view
from .base import CompileJob, Launch, Params
from .triton_conv import (
    KERNEL_FILE,
    ConvTritonImplicitGemm,
    _arg,
    _scratch_args,
    _sizes,
    _splits,
    _target_kind,
    _triton_job,
    spec_module,
    via_nhwc,
)

__all__ = ["ConvTritonImplicitGemmViaNhwc", "TRANSPOSE_KERNEL"]

TRANSPOSE_KERNEL = "transpose_021"
_ALIGN = 256  # byte alignment of each part of the workspace
# The workspace parts, by the conv kernel's tensor they stand for.
_SLOTS = {"x": "ws_x", "w": "ws_w", "y": "ws_y", "part": "ws_part"}


@lru_cache(maxsize=4096)
def nhwc_problem(problem: ConvProblem) -> ConvProblem:
    """The same problem with NHWC activations and KRSC (channels-last) weights."""
    from .._record import replace

    return replace(problem, in_layout="NHWC", wei_layout="NHWC", out_layout="NHWC")


def _round(n: int) -> int:
    return -(-int(n) // _ALIGN) * _ALIGN


@lru_cache(maxsize=4096)
def _shapes(view: ConvView) -> dict[str, tuple[int, int, int]]:
    """Each tensor as the [B][R][S] its NCHW form is (x: n, channels, pixels; w: filters,
    channels per group, taps; y: n, filters, pixels)."""
    z = _sizes(view)
    g = z["G"]
    return {"x": (z["N"], g * z["C"], z["H"] * z["W"]),
            "w": (g * z["K"], z["C"], z["R"] * z["S"]),
            "y": (z["N"], g * z["K"], z["P"] * z["Q"])}


class ConvTritonImplicitGemmViaNhwc(ConvTritonImplicitGemm):
    """One direction of the Triton implicit GEMM for NCHW problems, through the NHWC kernels."""

    def __init__(self, direction: str, math: str = "ieee") -> None:
        super().__init__(direction, math)
        self.nhwc = ConvTritonImplicitGemm(direction, math)
        self.name = f"{self.nhwc.name[:-3]}ViaNhwc{self.nhwc.name[-3:]}"  # ...ViaNhwcFwd
        self.rank_first = True

    @property
    def ranking_name(self) -> str:
        return self.nhwc.name

    def ranks_first(self, problem: ConvProblem, target: Target) -> bool:
        return True  # it applies only where VIA_NHWC says it is the faster path

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if (p.in_layout, p.wei_layout, p.out_layout) != ("NCHW", "NCHW", "NCHW"):
            return False
        if not via_nhwc(p, target, self.math) or not self.nhwc.is_applicable(
                nhwc_problem(p), target):
            return False
        fits = spec_module().transpose_fits
        return all(fits(*shape) for shape in _shapes(conv_view(p)).values())

    # ------------------------------------------------------------------ parameters (NHWC's)
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.nhwc.param_space(nhwc_problem(problem), target)

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.nhwc.params_valid(nhwc_problem(problem), target, params)

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        return self.nhwc.default_params(nhwc_problem(problem), target)

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.nhwc.usual_params(nhwc_problem(problem), target)

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        return self.nhwc.defaults_rule(nhwc_problem(problem), target)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.nhwc.seed_params(nhwc_problem(problem), target)

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The NHWC solver's job: the same object."""
        return self.nhwc.compile_job(nhwc_problem(problem), params, target, specialised)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        return self.nhwc.unaligned_job(nhwc_problem(problem), params, target)

    def _transpose_job(self, data_type: str, target: Target) -> CompileJob:
        spec = spec_module()
        config = (("num_stages", 1), ("num_warps", int(spec.TRANSPOSE_WARPS)))
        return _triton_job(KERNEL_FILE, "ieee", TRANSPOSE_KERNEL, data_type, config, False,
                           False, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The transpose kernel for each element type the solver takes on `target`, on the
        kinds where it applies (the conv objects are the NHWC solver's)."""
        kind = _target_kind(target.arch)
        if kind is None or not spec_module().VIA_NHWC.get(kind) or \
                self._kind(target) is None:
            return []
        return [self._transpose_job(t, target) for t in ("FP16", "BF16", "FP32")
                if self._type_applicable(t, target)]

    # ------------------------------------------------------------------ workspace
    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """({slot: byte offset}, total bytes) of the workspace: the NHWC copies of the three
        tensors (the output's only where no reduce launch writes it), then the NHWC kernel's
        own partial sums."""
        view = conv_view(problem)
        elem = int(spec_module().ELEMENT_BYTES[problem.in_type])
        out = spec_module().OUTPUT_OF.get(self._kernel(problem), "")
        split = int(self._config(params)["SPLIT_K"]) > 1
        offsets: dict[str, int] = {}
        at = 0
        for tensor, (b, r, s) in _shapes(view).items():
            if tensor == out and split:
                continue
            offsets[_SLOTS[tensor]] = at
            at += _round(b * r * s * elem)
        part = self.nhwc.workspace_for(nhwc_problem(problem), params)
        offsets[_SLOTS["part"]] = at if part else 0  # unused without a split: any address
        return offsets, at + _round(part)

    def _kernel(self, problem: ConvProblem) -> str:
        return self.nhwc._view(nhwc_problem(problem))[2]

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return self._layout(problem, params)[0]

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return self._layout(problem, params)[1]

    # ------------------------------------------------------------------ launches
    def _names(self, problem: ConvProblem) -> dict[str, str]:
        """The conv kernel's tensors (x, w, y) -> the caller's names for them."""
        view = conv_view(problem)
        return {"x": view.in_tensor, "w": view.wei_tensor, "y": view.out_tensor}

    def _transpose(self, problem: ConvProblem, target: Target, src: str, dst: str,
                   shape: tuple[int, int, int]) -> tuple[CompileJob, Launch]:
        b, r, s = shape
        spec = spec_module()
        args = (_arg("src_ptr", "ptr:" + src, None), _arg("dst_ptr", "ptr:" + dst, None),
                _arg("B", "i32", b), _arg("R", "i32", r), _arg("S", "i32", s),
                *_scratch_args())
        launch = Launch(TRANSPOSE_KERNEL, spec.transpose_grid(b, r, s),
                        (int(spec.TRANSPOSE_WARPS) * 32, 1, 1), args, needs_meta=True)
        return self._transpose_job(problem.in_type, target), launch

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Each tensor the kernel reads, NCHW -> NHWC into its workspace part."""
        shapes = _shapes(conv_view(problem))
        names = self._names(problem)
        reads = spec_module().KERNELS[self._kernel(problem)]["reads"]
        return tuple(self._transpose(problem, target, names[t], _SLOTS[t], shapes[t])
                     for t in ("x", "w", "y") if t in reads)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The NHWC kernel's launch, its tensors in the workspace."""
        from .._record import replace

        inner = self.nhwc.launch(nhwc_problem(problem), params, specialised)
        names = self._names(problem)
        slots = self.workspace_slots(problem, params)
        # A split launch writes partials, not its output: that pointer stays the caller's.
        to_slot = {"ptr:" + names[t]: "ptr:" + _SLOTS[t] for t in ("x", "w", "y")
                   if _SLOTS[t] in slots}
        to_slot["ptr:workspace"] = "ptr:" + _SLOTS["part"]
        args = []
        for a in inner.args:
            if a.name in ("global_scratch", "profile_scratch"):
                args.append(a)
            else:
                args.append(_arg(a.name, to_slot.get(a.kind, a.kind), a.value))
        return replace(inner, args=tuple(args),
                       workspace_bytes=self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The NHWC kernel's reduce (partials from the workspace into the NCHW output, with
        its strides), or the output's NHWC -> NCHW transpose."""
        from .._record import replace

        kernel = self._kernel(problem)
        out = spec_module().OUTPUT_OF[kernel]
        names = self._names(problem)
        if int(self._config(params)["SPLIT_K"]) > 1 and _splits(kernel):
            # The NCHW problem's reduce: the same partials (logical order), NCHW strides.
            (job, launch), = super().follow_ups(problem, params, target)
            args = tuple(_arg(a.name, "ptr:" + _SLOTS["part"], None)
                         if a.kind == "ptr:workspace" and a.name == "ws_ptr" else a
                         for a in launch.args)
            return ((job, replace(launch, args=args)),)
        b, r, s = _shapes(conv_view(problem))[out]
        # The NHWC copy is [b][s][r]; back to [b][r][s].
        return (self._transpose(problem, target, _SLOTS[out], names[out], (b, s, r)),)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """The NHWC kernel's estimate plus the transposes (after the NCHW solver on a tie)."""
        return super().heuristic_rank(problem, target) + 1.0
