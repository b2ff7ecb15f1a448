"""ConvBlasGemm1x1{Fwd,Bwd,Wrw} (and Tf32): 1x1 convolutions at stride 1 without padding as
one call of the vendor's GEMM library (cuBLAS: backends/cublas.py), as MIOpen's
GemmFwd1x1_0_1, GemmBwd1x1_stride1 and GemmWrw1x1_stride1 call rocBLAS.

With a 1x1 filter at stride 1 and no padding every direction is a plain matrix product over
the pixels: forward Y = X W^T, backward data X = Y W, backward weights W = Y^T X, with X
(pixels x C), Y (pixels x K) and W (K x C, both weight layouts). Channels-last activations
are one matrix over every image's pixels, one GEMM; channel-planar ones (NCHW) are a matrix
per image, a strided batch over the images with W shared (forward and backward data: their
backward weights would sum the images' products, which one call cannot). `gemm_call` works
the call out in cuBLAS's column-major terms from the kernels' view (`conv_view`: transposed
convolutions, 2-D and 3-D alike), without a GPU: tests/unit/test_blas_1x1.py runs it on numpy.
A filter that covers the whole input without padding (one output pixel an image: DCGAN's 4x4
projection of its latent, a discriminator's head) is the same product over the window's C*R*S
elements where x's images and the filters hold them in one order (`_window`): one call in
either layout, backward weights included.

Nothing is compiled and nothing is shipped: no kdb entry, no parameters. The solvers are not
in the build's registry (`SOLVERS`): a runtime adds them where the library loads on an
NVIDIA device (`solvers.library_solvers`, `offered`), and `find` times them beside the kernels.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ..problem import ConvProblem
from ..target import Target
from ._conv import (
    ALGO_PREFIX,
    DIRECTION_SUFFIX,
    ConvView,
    channels_last_twin,
    conv_view,
    macs,
)
from .base import CompileJob, Launch, Params, Solver
from .blas_call import GemmCall, _Matrix, product_call

__all__ = ["ConvBlasGemm1x1", "BLAS_SOLVERS", "GemmCall", "gemm_call", "offered",
           "blas_first", "misaligned_via", "BLAS_FIRST", "BLAS_FIRST_ESTIMATED", "BLAS_FEW",
           "BLAS_MOST_MACS", "NARROW_POINTWISE", "UNCAPPED_FILTERS", "VIA_FIRST",
           "VIA_MISALIGNED", "narrow_pointwise"]

#: Per arch (DbId), the cases (`<type>-<direction>-<layout family>`) where the miss ranking
#: puts the GEMM library first (`claims_first`), each with the fewest pixels per image it
#: claims from; elsewhere the model weighs it with the rest. sm90: what `python
#: bench/first_place.py` fits from the H200 runs of the library against the kernels over the
#: zoo part's 1x1 stride-1 layers (bench/results/alternatives_blas_*_h200.json, batch 32, GPU
#: time; tests/unit/test_blas_1x1.py checks the two agree), against cuDNN with the best
#: kernel's in brackets. FP16: forward NHWC 0.93 (1.38), backward data NHWC 0.91 (1.58) and
#: NCHW 0.99 (1.50) from 64 pixels (against the Via solver too, BLAS_FEW below), backward
#: weights NHWC 0.94 (1.34); forward NCHW 1.00 (1.53) from 64
#: pixels per image: below that a batch of per-image GEMMs of 49 columns (7x7 maps) fills
#: cuBLAS's tiles badly (1.28 against 0.93). BF16: 0.90 (1.40), 0.90 (1.57), 1.05 (2.69), 0.93
#: (1.34), forward NCHW 1.00 (1.49) from 64 pixels. FP32 (IEEE, alternatives_blas_fp32_h200
#: .json, against the three-TF32-product kernels; that run's cuDNN ran with TF32 on, so only
#: the two solvers' ratio holds): forward NHWC 2.48 (3.36), backward data NHWC 2.20 (2.94);
#: NCHW not listed (forward 2.25 against 2.27 where it would claim, backward data 3 layers).
#: A channel-planar problem of
#: one pixel an image (a squeeze-and-excitation layer) is the channels-last one's bytes and
#: call, and takes its case (`_case`): over the zoo's such layers at batch 32 on the H200 the
#: library took 0.75, 0.90 and 0.82 of cuDNN's GPU time (F, B, W) in NHWC, where in NCHW the
#: kernels took 1.03, 1.38 and 1.04 (bench/results/zoo_h200-fb-9ec5af9.json,
#: zoo_h200-w-9ec5af9.json).
BLAS_FIRST: dict[str, dict[str, int]] = {
    "sm90": {"FP16-F-NHWC": 0, "FP16-B-NHWC": 0, "FP16-B-NCHW": 64, "FP16-W-NHWC": 0,
             "FP16-F-NCHW": 64, "BF16-F-NHWC": 0, "BF16-B-NHWC": 0, "BF16-B-NCHW": 0,
             "BF16-W-NHWC": 0, "BF16-F-NCHW": 64, "FP32-F-NHWC": 0, "FP32-B-NHWC": 0},
}

#: Per arch, one-call cases listed as BLAS_FIRST lists them (fewest pixels per image) where no
#: run has timed the library in that direction: it ranks first there on the time its other
#: two directions measured on the same layers, which bench/blas_estimate.py turns into an
#: estimate (their larger time times the ratio the library's three directions measured on
#: 16-bit layers: 225 FP16 layers, median 1.17, 90% point 1.63). sm90 FP32 backward weights
#: channels-last (squeeze-and-excitation layers of one pixel included, in either layout), where
#: the three-TF32-product kernel ran: over the 15 zoo layers the runs hold
#: (bench/results/blas_estimate_fp32_w_h200.json) it took 3.33 of cuDNN's GPU time (IEEE), the
#: library estimated at 1.00 (1.39 pessimistic), 0.50 of the kernel's or, where it is the
#: smaller, of the IEEE kernel's route through the channel-planar twin's transposes
#: (triton_ieee_first's evidence); the 4 held-out layers 7.55 -> 2.76. A run that times it
#: (bench/solver_alternatives.py, then bench/first_place.py) moves a case into BLAS_FIRST.
#: tests/unit/test_bench_blas_estimate.py recomputes the figures. The H200 run of
#: bench/gpu_rules.sh's blas_w step (bench/results/alternatives_blas_fp32_w_h200.json) timed
#: it on 13 of those layers: 0.56 of cuDNN (at most 0.89), the IEEE kernel 0.90 and the
#: three-product one 2.42; 13 layers are under first_place.py's MIN_CLAIMED, so the entry
#: stays here.
BLAS_FIRST_ESTIMATED: dict[str, dict[str, int]] = {"sm90": {"FP32-W-NHWC": 0}}

#: Per arch, the one-call cases where, below BLAS_FIRST's pixels per image, the library still
#: ranks first on the problems whose product's reduction (`GemmCall.k`) is at most this; fitted
#: by bench/first_place.py on those layers against the runtime's alternative there. sm90 FP16
#: NCHW backward data at 7x7, against the Via solver (bench/results/zoo_h200-fb-bf2b0b9's
#: picks): a batch of per-image GEMMs of 49 columns over up to 192 channels took 0.90 of
#: cuDNN where the Via solver took 1.17 (8 of 14 layers); over 960-2048 channels (the other
#: 6) the library took 2.14 where the Via solver took 0.96.
BLAS_FEW: dict[str, dict[str, int]] = {"sm90": {"FP16-B-NCHW": 192}}

#: Per arch, the one-call cases where the library ranks first only on problems of at most this
#: many multiply-adds (above them the kernels ran faster); fitted by bench/first_place.py on
#: the claimed layers. sm90 FP32 forward NHWC: cuBLAS's IEEE GEMM wins on small products, the
#: three-TF32-product kernel on large ones; the split takes the zoo part's picks from 2.48 to
#: 2.30 of that run's cuDNN time (TF32 on); the layers it gives the kernel went 4.35 -> 3.42
#: (32, zoo) and 4.92 -> 3.57 (10, held out), bench/results/ranking_zoo_compare-47f3b4d.json.
BLAS_MOST_MACS: dict[str, dict[str, int]] = {"sm90": {"FP32-F-NHWC": 1335885824}}
#: Problems of at most this many filters keep the library past BLAS_MOST_MACS: a GEMM that
#: narrow streams its rows, its time growing with its bytes as cuDNN's does (3D U-Net's
#: 1x1x1 64 -> 3 at 128^3, FP32 NDHWC: the library 0.38 of cuDNN at batch 1, under the cap;
#: at batch 8, over it, the three-product 3-D kernel took 3.56: bench/results/
#: fewk_h100-6a76905/zoo_b8_b1.json). The cap was fitted on wider layers.
UNCAPPED_FILTERS = 8

#: Per arch, FP32 1x1 layers of few channels a side at IEEE accuracy, forward and backward
#: data (`narrow_pointwise`): up to the first count the library leaves them to the FP32-unit
#: kernels (triton_fma's few-channel forward, triton_fma_bwd's on flipped filters), up to the
#: second it claims them in either layout. The SD VAE's 4 -> 4 and 8 -> 8 layers at 64x64,
#: batches 32, 8 and 1, on one H100 (bench/results/fp32_tails_h100/pointwise_*.json, GPU time
#: over IEEE cuDNN's): 4 -> 4 on the FP32 units 0.65-1.04 forward and 0.91-1.54 backward
#: data, where the library took 0.67-1.78 and 0.88-3.10; 8 -> 8 channel-planar on the
#: library 0.70-0.93 forward and 0.44-0.65 backward data, where the three-product implicit
#: GEMM took 2.11-2.50 and 0.91-1.02.
NARROW_POINTWISE: dict[str, tuple[int, int]] = {"sm90": (4, 8)}


def narrow_pointwise(problem: ConvProblem, target: Target, library: bool = False) -> bool:
    """An FP32 forward or backward data of a 1x1 filter at stride 1 of at most
    NARROW_POINTWISE[arch][0] channels a side; with `library`, of more, up to [1]."""
    p = problem
    units, most = NARROW_POINTWISE.get(target.arch, (0, 0))
    return p.in_type == "FP32" and p.key_direction in ("F", "B") and p.groups == 1 and \
        set(p.filter) == {1} == set(p.stride) and \
        (units < max(p.c, p.k) <= most if library else max(p.c, p.k) <= units)


#: Per arch, the channel-planar backward-weights cases where the library through channels-last
#: copies (solvers/blas_relayout.py) ranks first, each with the least C*K/(C+K) it claims from
#: (the copies move C+K elements per pixel, the product does C*K multiply-adds) on more than
#: one pixel, where the Triton 1x1 GEMM does not rank first (solvers.YIELDS_TO: where its
#: aligned object applies, pixels a multiple of 16; the 36 zoo layers whose choice moved from the
#: copies to it took 1.27 of cuDNN's GPU time before and 1.08 after, in the committed
#: timings: bench/results/ranking_zoo_compare-39642db.json). Fitted as BLAS_FIRST
#: (bench/first_place.py) on the zoo's other layers from the H200 runs against the kernels
#: (alternatives_blas_via_w_h200.json: the Via solver, the Triton 1x1 GEMM and the implicit
#: GEMM; alternatives_blas_bf16_h200.json: the implicit GEMM and its Via solver). FP16 from 32:
#: 0.88 of cuDNN where the best kernel takes 1.15 (48 of 63 layers); BF16 from 32: 0.87
#: against 1.18 (43 of 56); below it the copies cost more than the product saves.
VIA_FIRST: dict[str, dict[str, int]] = {"sm90": {"FP16-W-NCHW": 32, "BF16-W-NCHW": 32}}


#: Per arch, the channel-planar one-call cases (forward and backward data: a product per
#: image) where, on the problems BLAS_FIRST gives the library whose image planes are
#: misaligned for 16-byte loads (pixels times the element size not a multiple of 16), it goes
#: through channels-last copies (solvers/blas_relayout.py) instead, each with the least
#: C*K/(C+K) it does so from (the copies move C+K elements a pixel, the product does C*K
#: multiply-adds). sm90 FP16 from 150: no run timed the copies' route; bench/via_estimate.py
#: (`--only misaligned-1x1 --twin-solver ConvBlasGemm1x1Fwd`) puts it, the channels-last
#: call's measured time plus the copies at the cost per byte the Via solvers' layers measured,
#: at 0.30-0.94 of the per-image call's time on the 27 such forward layers of the zoo and
#: held-out networks (65x65, 25x34, 17x17, 14x14 and 13x13 planes; 1.05 at most at the
#: copies' 90% point), 1.72 -> 0.83 of cuDNN, and at 0.31-0.84 on the 17 backward-data ones
#: (0.99), 1.45 -> 0.81; below 150 it lost on most (10 of 100 and 5 of 78 faster). BF16 from
#: 150 on its own run's layers (every fourth: via_estimate_misaligned_{f,b}_bf16_h200): forward
#: 0.35-0.64 on 9 (0.72 pessimistic; 1.74 -> 0.82 of cuDNN), backward data 0.32-0.83 on 11
#: (1.05; 1.57 -> 0.84). tests/unit/test_blas_relayout.py recomputes the figures.
VIA_MISALIGNED: dict[str, dict[str, int]] = {
    "sm90": {"FP16-F-NCHW": 150, "FP16-B-NCHW": 150, "BF16-F-NCHW": 150, "BF16-B-NCHW": 150}}


def _pixels(v: ConvView, side: str) -> int:
    f = v.field
    return f(f"{side}_d") * f(f"{side}_h") * f(f"{side}_w")


def _activation(v: ConvView, side: str, name: str, channels: int, fold: bool
                ) -> _Matrix | None:
    """The pixels x channels matrix of x (`side` "in", strides xs) or y ("out", ys): per
    image, or over every image (`fold`); None where its pixels are not evenly strided."""
    f = v.field
    s = "xs" if side == "in" else "ys"
    sc, sd, sh, sw, sn = (f(f"{s}_{a}") for a in ("c" if side == "in" else "k", "d", "h", "w",
                                                   "n"))
    h, w = f(f"{side}_h"), f(f"{side}_w")
    pixels = _pixels(v, side)
    if pixels == 1 and sc == 1:  # one pixel an image: the same bytes in either layout
        sd = sh = sw = sn
    if sh != w * sw or sd != h * sh:
        return None
    if sc == 1:  # channels last: rows of pixels
        if fold:
            return _Matrix(name, pixels * f("n"), channels, False, sw, 0) \
                if sn == pixels * sw else None
        return _Matrix(name, pixels, channels, False, sw, sn)
    if sw == 1 and not fold:  # channel planes: stored channels x pixels
        return _Matrix(name, pixels, channels, True, sc, sn)
    return None


_AXES = ("d", "h", "w")


def _flat_order(v: ConvView, tensor: str, sizes: tuple[int, ...]) -> set[str]:
    """The orders ("planar": channel, then the window's d, h, w; "last": d, h, w, then the
    channel) in which `tensor` ("xs": one image of x, "ws": one filter) is one packed run of
    its channels times `sizes` (the window) elements; every order where a size is 1 allows."""
    f = v.field
    dims = dict(zip(("c", *_AXES), (f("c"), *sizes), strict=True))
    strides = {a: f(f"{tensor}_{a}") for a in dims}
    out = set()
    for name, order in (("planar", ("c", *_AXES)), ("last", (*_AXES, "c"))):
        step, ok = 1, True
        for a in reversed(order):
            ok = ok and (dims[a] == 1 or strides[a] == step)
            step *= dims[a]
        if ok:
            out.add(name)
    return out


def _window(v: ConvView) -> tuple[_Matrix, _Matrix, _Matrix] | None:
    """(x, y, w) as images x window, images x filters and filters x window matrices where the
    filter covers the whole input without padding, one output pixel an image (DCGAN's 4x4
    latent projection and its discriminator's head): the convolution is then one product over
    the window's C*R*S elements, where x's images and the filters hold them in one order."""
    f = v.field
    window = tuple(f(f"fil_{a}") for a in _AXES)
    if any(f(f"out_{a}") != 1 or f(f"pad_{a}") or f(f"in_{a}") != window[i] or
           (window[i] > 1 and f(f"dil_{a}") != 1) for i, a in enumerate(_AXES)) or \
            math.prod(window) == 1:
        return None
    if not _flat_order(v, "xs", window) & _flat_order(v, "ws", window) or \
            (f("k") > 1 and f("ys_k") != 1):
        return None
    n, k, flat = f("n"), f("k"), f("c") * math.prod(window)
    return (_Matrix(v.in_tensor, n, flat, False, f("xs_n"), 0),
            _Matrix(v.out_tensor, n, k, False, max(f("ys_n"), k), 0),
            _Matrix(v.wei_tensor, k, flat, False, f("ws_k"), 0))


def _one_by_one(v: ConvView) -> tuple[_Matrix, _Matrix, _Matrix, int] | None:
    """(x, y, w, batch) of a 1x1 filter at stride 1 without padding: pixels x channels
    matrices per image, or over every image where the activations are channels-last."""
    f = v.field
    if any(f(a) != 1 for a in ("fil_d", "fil_h", "fil_w", "str_d", "str_h", "str_w")) or \
            any(f(a) for a in ("pad_d", "pad_h", "pad_w")):
        return None
    if _pixels(v, "in") != _pixels(v, "out") or f("ws_c") != 1 or f("ws_k") != f("c"):
        return None
    c, k = f("c"), f("k")
    w = _Matrix(v.wei_tensor, k, c, False, c, 0)
    fold = f("xs_c") == 1 and f("ys_k") == 1  # channels last
    if v.direction == "W" and not fold:
        return None
    x = _activation(v, "in", v.in_tensor, c, fold)
    y = _activation(v, "out", v.out_tensor, k, fold)
    if x is None or y is None:
        return None
    return x, y, w, 1 if fold else f("n")


@lru_cache(maxsize=4096)
def gemm_call(problem: ConvProblem) -> GemmCall | None:
    """The one library call that computes `problem`, or None where none does (neither a 1x1
    filter at stride 1 without padding nor a filter over the whole input (`_window`), groups,
    or backward weights of 1x1 channel planes)."""
    v = conv_view(problem)
    if v.field("g") != 1:
        return None
    window = _window(v)
    operands = (*window, 1) if window is not None else _one_by_one(v)
    if operands is None:
        return None
    x, y, w, batch = operands
    # out = left @ right, row-major, as the direction reads it.
    if v.direction == "F":
        out, left, right = y, x, w.t()
    elif v.direction == "B":
        out, left, right = x, y, w
    else:
        out, left, right = w, y.t(), x
    return product_call(out, left, right, batch)


class ConvBlasGemm1x1(Solver):
    """One direction of the GEMM-library 1x1 convolution, at one FP32 math."""

    language = "library"
    tunable = False

    def __init__(self, direction: str, math: str = "ieee") -> None:
        self.direction = direction
        self.math = math
        self.directions = frozenset({direction})
        infix = "Tf32" if math == "tf32" else ""
        self.name = f"ConvBlasGemm1x1{infix}{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoGEMM"}

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or target.vendor != "nvidia":
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in ("FP16", "BF16", "FP32"):
            return False
        if self.math == "tf32" and p.in_type != "FP32":
            return False
        return gemm_call(p) is not None

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the library ranks first, but for the problems it takes through copies
        (`misaligned_via`: the copies' solver's)."""
        return blas_first(problem, target, self.math) and \
            not misaligned_via(problem, target, self.math)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        raise NotImplementedError(f"{self.name} calls a library: it compiles nothing")

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        return []

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False) -> Launch:
        raise NotImplementedError(f"{self.name} calls a library: it launches no kernel of ours")

    #: The shapes the solver's call computes, as its error names them.
    shapes = "a 1x1 stride-1 problem"

    def call(self, problem: ConvProblem) -> GemmCall | None:
        """The library call that computes `problem` (`gemm_call`), or None."""
        return gemm_call(problem)

    def library_launch(self, backend: Any, problem: ConvProblem) -> Any:
        """The call, shaped as a prepared launch (backends/cublas.py `GemmLaunch`)."""
        from ..backends.cublas import GemmLaunch, load
        from ..errors import BackendError

        blas = load()
        call = self.call(problem)
        if blas is None or call is None:
            raise BackendError(f"{self.name} needs cuBLAS (pip install 'miopenkernels[blas]') "
                               f"and {self.shapes}; {problem.key()} has "
                               f"{'no cuBLAS' if blas is None else 'another shape'}")
        return GemmLaunch(backend, blas, call.astuple(), problem.in_type, self.math,
                          call.c_type)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks, threads, efficiency) of a 128x128-tile GEMM over the call, for the miss
        ranking's features (the library picks its own kernel)."""
        call = self.call(problem)
        assert call is not None
        return (math.ceil(call.m / 128) * math.ceil(call.n / 128) * call.batch, 256, 1.0)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        speed = 4.0 if problem.in_type == "FP32" and self.math == "ieee" else 25.0
        return 5.0 + macs(problem) / (1e6 * speed)


BLAS_SOLVERS: list[Solver] = [ConvBlasGemm1x1(d, m) for m in ("ieee", "tf32")
                              for d in ("F", "B", "W")]


def _case(problem: ConvProblem, math_mode: str = "ieee") -> str:
    """`<type>-<direction>-<layout family>`, the type TF32 for FP32 under the TF32 math (the
    tables' FP32 cases are IEEE ones); a problem whose activations hold one pixel an
    image is the same bytes in both layouts and one call either way: the channels-last
    case's; so is one whose filter covers the whole input (`_window`: one call over the
    images in either layout)."""
    one_pixel = math.prod(problem.in_spatial) == 1 == math.prod(problem.out_spatial)
    window = _window(conv_view(problem)) is not None
    layout = "NHWC" if problem.in_layout in ("NHWC", "NDHWC") or one_pixel or window \
        else "NCHW"
    data_type = "TF32" if math_mode == "tf32" and problem.in_type == "FP32" else problem.in_type
    return f"{data_type}-{problem.key_direction}-{layout}"


#: Whether a runtime in this process offers the solvers (`offered` found the library
#: on a CUDA backend): only then do they claim first place, and the kernels' families give
#: way; a process without them (the null backend, a build) ranks as before.
_offered = [False]


def library_offered() -> bool:
    """Whether a runtime in this process offers the GEMM-library solvers (`offered`)."""
    return _offered[0]


def blas_first(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether the GEMM library ranks first on `problem` where it is offered: in one call
    (BLAS_FIRST, or BLAS_FIRST_ESTIMATED where it has no entry; below its pixels, BLAS_FEW; up
    to BLAS_MOST_MACS but for products of UNCAPPED_FILTERS filters or fewer; through copies
    where VIA_MISALIGNED says), or for channel-planar
    backward weights through its channels-last twin's copies (VIA_FIRST; the registry's
    YIELDS_TO then gives the copies' claim way to the Triton 1x1 GEMM's), for a solver of
    `math_mode` (`_case`)."""
    if not _offered[0]:
        return False
    p = problem
    call = gemm_call(p)
    if call is not None:
        if math_mode == "ieee" and narrow_pointwise(p, target):
            return False  # the FP32-unit kernels'
        if math_mode == "ieee" and narrow_pointwise(p, target, library=True):
            return True
        if misaligned_via(p, target, math_mode):
            return True  # through the copies (solvers/blas_relayout.py)
        case = _case(p, math_mode)
        least = BLAS_FIRST.get(target.arch, {}).get(
            case, BLAS_FIRST_ESTIMATED.get(target.arch, {}).get(case))
        most_macs = BLAS_MOST_MACS.get(target.arch, {}).get(case)
        if most_macs is not None and macs(p) > most_macs and p.k // p.groups > UNCAPPED_FILTERS:
            return False
        if least is None or math.prod(p.in_spatial) >= least:
            return least is not None
        most = BLAS_FEW.get(target.arch, {}).get(case)
        return most is not None and call.k <= most
    least = VIA_FIRST.get(target.arch, {}).get(_case(p, math_mode))
    return least is not None and p.key_direction == "W" and math.prod(p.in_spatial) > 1 and \
        p.c * p.k >= least * (p.c + p.k) and gemm_call(channels_last_twin(p)) is not None


def misaligned_via(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether the library takes a 2-D channel-planar one-call problem through channels-last
    copies where it is offered (VIA_MISALIGNED): one BLAS_FIRST gives it (pixels per image
    from the case's), whose image planes are misaligned for 16-byte loads and whose
    C*K/(C+K) reaches the case's least."""
    from ..problem import TYPE_BYTES

    p = problem
    if not _offered[0] or len(p.in_spatial) != 2 or gemm_call(p) is None:
        return False  # (measured on 2-D layers)
    case = _case(p, math_mode)
    least = VIA_MISALIGNED.get(target.arch, {}).get(case)
    pixels_from = BLAS_FIRST.get(target.arch, {}).get(case)
    if least is None or pixels_from is None or not case.endswith("NCHW"):
        return False
    pixels = math.prod(p.in_spatial)
    return pixels >= pixels_from and pixels * TYPE_BYTES[p.in_type] % 16 != 0 and \
        p.c * p.k >= least * (p.c + p.k)


def offered(backend: Any) -> bool:
    """Whether a runtime on `backend` offers the GEMM-library solvers: on the CUDA backend
    where cuBLAS loads, never elsewhere (the null backend's reference stands in for our
    kernels alone). Once one does, they claim first place in this process (`_offered`)."""
    if getattr(backend, "name", "") != "cuda":
        return False
    from ..backends.cublas import load

    if load() is None:
        return False
    _offered[0] = True
    return True
