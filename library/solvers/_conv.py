"""What every conv solver shares: the kernels' plain-convolution view of a problem.

Kernels compute the plain convolution `in (N,C,D,H,W) * wei (K,C/G,Z,Y,X) -> out (N,K,...)` in
one of three directions (kernels/mk_conv.h). A transposed convolution is the plain one with x and
y exchanged, solved in the opposite data direction (MIOpen does the same); `ConvView` does that
mapping once, so solvers never look at `problem.mode`.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

from .._record import dataclass
from ..problem import ConvProblem
from ..target import Target
from .base import CompileJob, KernelArg, Launch, Params, Solver, type_supported

__all__ = [
    "ConvView", "conv_view", "TYPE_CODES", "DIR_CODES", "CONV_FIELDS", "common_applicable",
    "type_dir_options", "ceil_div", "DIRECTION_SUFFIX", "ALGO_PREFIX", "ConvKernelSolver",
    "gemm_sizes", "macs", "WORKSPACE_ALIGN", "workspace_round", "relaid", "channels_last_twin",
]

TYPE_CODES = {"FP32": 0, "FP16": 1, "BF16": 2}
DIR_CODES = {"F": 0, "B": 1, "W": 2}
DIRECTION_SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
# MIOpen algorithm names are miopenConvolution<prefix>Algo<kind>.
ALGO_PREFIX = {"F": "Fwd", "B": "BwdData", "W": "BwdWeights"}
# Field order of kernels/mk_conv.h's MK_CONV_FIELDS: the kernel argument order.
CONV_FIELDS = (
    "n", "c", "k", "g", "in_d", "in_h", "in_w", "out_d", "out_h", "out_w", "fil_d", "fil_h",
    "fil_w", "pad_d", "pad_h", "pad_w", "str_d", "str_h", "str_w", "dil_d", "dil_h", "dil_w",
    "xs_n", "xs_c", "xs_d", "xs_h", "xs_w", "ws_k", "ws_c", "ws_d", "ws_h", "ws_w",
    "ys_n", "ys_k", "ys_d", "ys_h", "ys_w",
)
_INT32_MAX = 2**31 - 1
#: Byte alignment of each part of a solver's workspace (its copies, its partial sums).
WORKSPACE_ALIGN = 256


def workspace_round(nbytes: int) -> int:
    """`nbytes` rounded up to a whole number of WORKSPACE_ALIGN (a workspace part's size)."""
    return -(-int(nbytes) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN


def relaid(problem: ConvProblem, layout: str) -> ConvProblem:
    """The same problem with every tensor in `layout` (NHWC: channels-last activations and
    KRSC weights)."""
    from .._record import replace

    return replace(problem, in_layout=layout, wei_layout=layout, out_layout=layout)


def channels_last_twin(problem: ConvProblem) -> ConvProblem:
    """The problem with channels-last tensors (NHWC, NDHWC) in place of channel planes."""
    return relaid(problem, "NDHWC" if len(problem.in_spatial) == 3 else "NHWC")


def _strides(dims: tuple[int, ...], channel_last: bool) -> tuple[int, int, int, int, int]:
    """Element strides of (dim0, dim1, D, H, W) for a 5D logical shape, in NCDHW or NDHWC order."""
    d0, d1, d, h, w = dims
    if channel_last:
        s1 = 1
        sw = d1
        sh = sw * w
        sd = sh * h
        s0 = sd * d
    else:
        sw = 1
        sh = w
        sd = h * w
        s1 = d * h * w
        s0 = s1 * d1
    return s0, s1, sd, sh, sw


def _five(spatial: tuple[int, ...], fill: int) -> tuple[int, int, int]:
    if len(spatial) == 2:
        return fill, spatial[0], spatial[1]
    return spatial[0], spatial[1], spatial[2]


@dataclass(frozen=True)
class ConvView:
    """A problem as the kernels see it: direction solved, shape fields, tensors per pointer."""

    direction: str  # 'F', 'B' or 'W' of the plain convolution
    fields: tuple[tuple[str, int], ...]
    in_tensor: str  # problem tensor passed as the kernel's `in` pointer
    wei_tensor: str
    out_tensor: str
    data_type: str

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return dict(self.fields)

    def field(self, name: str) -> int:
        return self._by_name[name]

    def kernel_args(self) -> tuple[KernelArg, ...]:
        """The three pointers then every shape field as i32, in the kernel's order."""
        return self._kernel_args

    @cached_property
    def _kernel_args(self) -> tuple[KernelArg, ...]:
        ptrs = (
            KernelArg("p_in", "ptr:" + self.in_tensor),
            KernelArg("p_wei", "ptr:" + self.wei_tensor),
            KernelArg("p_out", "ptr:" + self.out_tensor),
        )
        return ptrs + tuple(KernelArg(name, "i32", value) for name, value in self.fields)

    def spec_options(self) -> tuple[str, ...]:
        """-D constants that bake the shape into a specialised kernel."""
        return ("-DMK_SPEC=1", *(f"-DMK_S_{name}={value}" for name, value in self.fields))

    # Plain-convolution GEMM sizes, per group (used by heuristics and launch geometry).
    @property
    def out_positions(self) -> int:
        f = self.field
        return f("n") * f("out_d") * f("out_h") * f("out_w")

    @property
    def in_positions(self) -> int:
        f = self.field
        return f("n") * f("in_d") * f("in_h") * f("in_w")

    @cached_property
    def gemm(self) -> tuple[int, int, int]:
        """`gemm_sizes` of this view, computed once."""
        return _gemm_sizes(self)

    @property
    def taps(self) -> int:
        f = self.field
        return f("fil_d") * f("fil_h") * f("fil_w")


@lru_cache(maxsize=1024)
def conv_view(problem: ConvProblem) -> ConvView:
    """Map a problem (either mode, any direction) onto the kernels' plain convolution.

    Cached: a problem's view is asked for by applicability, launch, jobs and the ranking.
    """
    p = problem
    direction = p.direction
    # Tensor names as the caller passes them for the problem's own direction.
    x_name = "dx" if direction == "B" else "x"
    y_name = "y" if direction == "F" else "dy"
    w_name = "dw" if direction == "W" else "w"
    if p.mode == "trans":
        direction = {"F": "B", "B": "F", "W": "W"}[direction]
        c, k = p.k, p.c
        in_sp, out_sp = p.out_spatial, p.in_spatial
        in_layout, out_layout = p.out_layout, p.in_layout
        in_name, out_name = y_name, x_name
        in_type = p.out_type
    else:
        c, k = p.c, p.k
        in_sp, out_sp = p.in_spatial, p.out_spatial
        in_layout, out_layout = p.in_layout, p.out_layout
        in_name, out_name = x_name, y_name
        in_type = p.in_type
    in_d, in_h, in_w = _five(in_sp, 1)
    out_d, out_h, out_w = _five(out_sp, 1)
    fil = _five(p.filter, 1)
    pad = _five(p.pad, 0)
    stride = _five(p.stride, 1)
    dil = _five(p.dilation, 1)
    g = p.groups
    xs = _strides((p.n, c, in_d, in_h, in_w), in_layout in ("NHWC", "NDHWC"))
    ys = _strides((p.n, k, out_d, out_h, out_w), out_layout in ("NHWC", "NDHWC"))
    ws = _strides((k, c // g, *fil), p.wei_layout in ("NHWC", "NDHWC"))
    values = (
        p.n, c, k, g, in_d, in_h, in_w, out_d, out_h, out_w, *fil, *pad, *stride, *dil,
        *xs, *ws, *ys,
    )
    return ConvView(
        direction=direction,
        fields=tuple(zip(CONV_FIELDS, (int(v) for v in values), strict=True)),
        in_tensor=in_name,
        wei_tensor=w_name,
        out_tensor=out_name,
        data_type=in_type,
    )


@lru_cache(maxsize=4096)
def common_applicable(problem: ConvProblem, target: Target) -> bool:
    """Checks every conv kernel here needs: one compute type throughout, 32-bit indexing
    (kept: each solver of the problem's direction asks)."""
    p = problem
    if not (p.in_type == p.wei_type == p.out_type):
        return False
    if p.in_type not in TYPE_CODES or not type_supported(p.in_type, target):
        return False
    sizes = (_prod(p.in_shape), _prod(p.wei_shape), _prod(p.out_shape))
    # Grid y/z carry channel tiles and groups: CUDA caps those dimensions at 65535.
    return max(sizes) <= _INT32_MAX and p.groups <= 65535 and max(p.c, p.k) <= 65535


@lru_cache(maxsize=4096)
def _dynamic_job(solver: ConvKernelSolver, direction: str, data_type: str, params: Params,
                 target: Target) -> CompileJob:
    """The shape-agnostic job of (solver, solved direction, type, params): kept, since the
    miss ranking asks per candidate whether its object is at hand."""
    options = (f"-DMK_DIR={DIR_CODES[direction]}", f"-DMK_TYPE={TYPE_CODES[data_type]}",
               *solver.param_options(params))
    return CompileJob(solver.kernel_file, options, solver.kernel_name, target)


def type_dir_options(view: ConvView) -> tuple[str, ...]:
    """-D options for the solved direction and element type."""
    return (f"-DMK_DIR={DIR_CODES[view.direction]}", f"-DMK_TYPE={TYPE_CODES[view.data_type]}")


def ceil_div(a: int, b: int) -> int:
    """Blocks needed to cover `a` items with `b` per block."""
    return -(-a // b)


def _prod(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def gemm_sizes(view: ConvView) -> tuple[int, int, int]:
    """(M, N, R) of the per-group GEMM the direction solves (kernels/conv_igemm.hip's table)."""
    return view.gemm


def _gemm_sizes(view: ConvView) -> tuple[int, int, int]:
    f = view.field
    cg, kg = f("c") // f("g"), f("k") // f("g")
    if view.direction == "F":
        return kg, view.out_positions, cg * view.taps
    if view.direction == "B":
        return cg, view.in_positions, kg * view.taps
    return kg, cg * view.taps, view.out_positions


def kernel_tensors(problem: ConvProblem) -> dict[str, str]:
    """The kernels' tensors (x, w, y of the plain convolution) -> the problem's names for them
    (`conv_view`: a transposed problem's are its plain convolution's)."""
    view = conv_view(problem)
    return {"x": view.in_tensor, "w": view.wei_tensor, "y": view.out_tensor}


def macs(problem: ConvProblem) -> int:
    """Multiply-accumulates of the convolution (the same in every direction)."""
    v = conv_view(problem)
    m, n, r = gemm_sizes(v)
    return m * n * r * v.field("g")


class ConvKernelSolver(Solver):
    """A conv solver over one kernel file, one instance per direction (MIOpen names them so).

    Subclasses set `family` (name stem), `algo_kind` (Direct/ImplicitGEMM/GEMM/Winograd),
    `kernel_file`, `symbol` (kernel name stem) and implement the shape test, parameter
    options, grid and cost.
    """

    family = ""
    algo_kind = ""
    symbol = ""
    speed = 1.0  # relative MAC throughput for heuristic_rank

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.name = self.family + DIRECTION_SUFFIX[direction]
        self.directions = frozenset({direction})
        self.algorithm_names = {direction: f"miopenConvolution{ALGO_PREFIX[direction]}Algo"
                                           f"{self.algo_kind}"}

    # Subclass hooks -------------------------------------------------------------------
    def shape_applicable(self, problem: ConvProblem, view: ConvView) -> bool:
        return True

    def param_options(self, params: Params) -> tuple[str, ...]:
        return ()

    def shipped_params(self) -> list[Params]:
        """Parameter sets whose dynamic binaries ship in every package."""
        return [()]

    def grid_block(self, view: ConvView, params: Params) -> tuple[tuple[int, int, int],
                                                                    tuple[int, int, int], int]:
        raise NotImplementedError

    def efficiency(self, view: ConvView, params: Params) -> float:
        return 1.0

    # Protocol -------------------------------------------------------------------------
    @property
    def kernel_name(self) -> str:
        return f"{self.symbol}_{ {'F': 'fwd', 'B': 'bwd', 'W': 'wrw'}[self.direction]}"

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if problem.key_direction != self.direction or not common_applicable(problem, target):
            return False
        return self.shape_applicable(problem, conv_view(problem))

    def compile_job(
        self, problem: ConvProblem, params: Params, target: Target, specialised: bool = False
    ) -> CompileJob:
        view = conv_view(problem)
        if not specialised:
            return _dynamic_job(self, view.direction, view.data_type, tuple(params), target)
        options = type_dir_options(view) + self.param_options(params) + view.spec_options()
        return CompileJob(self.kernel_file, options, self.kernel_name, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        jobs = []
        for type_name, code in TYPE_CODES.items():
            if not type_supported(type_name, target):
                continue
            for params in self.shipped_params():
                options: tuple[str, ...] = (
                    f"-DMK_DIR={DIR_CODES[self.direction]}", f"-DMK_TYPE={code}",
                    *self.param_options(params),
                )
                jobs.append(CompileJob(self.kernel_file, options, self.kernel_name, target))
        return jobs

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False) -> Launch:
        view = conv_view(problem)
        grid, block, shared = self.grid_block(view, params)
        return Launch(self.kernel_name, grid, block, view.kernel_args(), shared_bytes=shared)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        grid, block, _ = self.grid_block(conv_view(problem), params)
        return grid, block

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        view = conv_view(problem)
        params = self.default_params(problem, target)
        # Estimated microseconds at a nominal 1 TMAC/s for speed 1, plus a launch's overhead.
        return 5.0 + macs(problem) / (1e6 * self.speed * self.efficiency(view, params))
