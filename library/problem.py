"""The convolution problem and its MIOpen FindDb key.

A `ConvProblem` describes one layer as a framework sees it: input x (N, C, spatial), weights
(K, C/G, filter), output y (N, K, out spatial), and the direction to compute. MIOpen's key writes
the tensors in the order the solver sees them: for backward data (B) and backward weights (W) the
key's "input" is dy and its "output" is dx (B) or x (W), so the leading channel count is the layer's
K. A transposed convolution is solved as the opposite direction of the plain convolution whose
input and output are swapped (MIOpen does the same), so its key shows that direction.
"""

from __future__ import annotations

from typing import Any

from ._record import dataclass, field
from .errors import ProblemError
from .problem_key import DATA_TYPES, DIRECTIONS, parse_key

__all__ = [
    "ConvProblem",
    "DIRECTIONS",
    "DATA_TYPES",
    "COMPUTE_TYPES",
    "LAYOUTS",
    "FINDDB_TF32_SUFFIX",
]

#: The FindDb key suffix of records made under the TF32 math mode (`config.MathMode`): the
#: problem is the same, its measured choice is not.
FINDDB_TF32_SUFFIX = "_tf32"
DIRECTION_NAMES = {"F": "forward", "B": "backward data", "W": "backward weights"}
# Only COMPUTE_TYPES of the DATA_TYPES have kernels here.
COMPUTE_TYPES = ("FP32", "FP16", "BF16")
TYPE_BYTES = {
    "FP32": 4, "FP16": 2, "BF16": 2, "INT8": 1, "INT32": 4, "FP64": 8, "FP8": 1, "BF8": 1,
    "INT64": 8,
}
LAYOUTS_2D = ("NCHW", "NHWC")
LAYOUTS_3D = ("NCDHW", "NDHWC")
LAYOUTS = LAYOUTS_2D + LAYOUTS_3D
_DEFAULT_LAYOUT = {2: "NCHW", 3: "NCDHW"}


def normal_layouts(dims: int, in_layout: str, wei_layout: str,
                   out_layout: str) -> tuple[str, str, str]:
    """The three layouts of a problem where some are not given (empty): the input's defaults
    to the dimension's NCHW, the others to the input's."""
    in_layout = in_layout or _DEFAULT_LAYOUT[dims]
    return in_layout, wei_layout or in_layout, out_layout or in_layout


def _tuple(value: Any, dims: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * dims
    out = tuple(map(int, value))
    if len(out) != dims:
        raise ProblemError(f"{name} has {len(out)} values, expected {dims} for a {dims}D problem")
    return out


def _type_field(i: str, w: str, o: str) -> str:
    """A key's data type field from its (in, wei, out) types in key order."""
    return i if i == w == o else i + w + o


def _layout_field(i: str, w: str, o: str, dims: int) -> str:
    """A key's layout field from its (in, wei, out) layouts in key order: the default layout
    alone, else in-wei-out."""
    return i if i == w == o == _DEFAULT_LAYOUT[dims] else f"{i}-{w}-{o}"


@dataclass(frozen=True)
class ConvProblem:
    """One convolution layer and the direction to compute.

    Spatial tuples are (H, W) for 2D and (D, H, W) for 3D. `in_spatial` is the layer input x,
    whatever the direction; `out_spatial` is derived.
    """

    n: int
    c: int
    k: int
    in_spatial: tuple[int, ...]
    filter: tuple[int, ...]
    pad: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    groups: int = 1
    direction: str = "F"
    in_layout: str = ""
    wei_layout: str = ""
    out_layout: str = ""
    in_type: str = "FP32"
    wei_type: str = ""
    out_type: str = ""
    mode: str = "conv"
    bias: int = 0
    trans_output_pad: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        dims = len(self.in_spatial)
        if dims not in (2, 3):
            raise ProblemError(f"spatial dimension {dims} is not supported (2 or 3)")
        # Fields live in __dict__ (`_record`): written there, as a frozen record's own
        # __setattr__ refuses them.
        state = self.__dict__
        state["in_spatial"] = _tuple(self.in_spatial, dims, "input size")
        state["filter"] = _tuple(self.filter, dims, "filter size")
        state["pad"] = _tuple(self.pad or 0, dims, "padding")
        state["stride"] = _tuple(self.stride or 1, dims, "stride")
        state["dilation"] = _tuple(self.dilation or 1, dims, "dilation")
        state["trans_output_pad"] = _tuple(self.trans_output_pad or 0, dims, "output padding")
        state["in_layout"], state["wei_layout"], state["out_layout"] = normal_layouts(
            dims, self.in_layout, self.wei_layout, self.out_layout)
        state["wei_type"] = self.wei_type or self.in_type
        state["out_type"] = self.out_type or self.in_type
        self._validate()

    @classmethod
    def _from_normal_fields(cls, fields: dict[str, Any]) -> ConvProblem:
        """What `ConvProblem(**fields)` gives for fields already in normal form (every field
        given; sizes tuples of ints, one per spatial axis; layouts from `normal_layouts`;
        three types named), without normalising them again: a manifest line makes one.
        Checked as any problem is."""
        out = object.__new__(cls)
        out.__dict__.update(fields)
        out._validate()
        return out

    # ----------------------------------------------------------------- validation
    def _validate(self) -> None:
        dims = self.spatial_dim
        # One pass over the sizes first: a manifest of 80,000 lines validates 80,000 problems;
        # the checks below name the size that is out of range.
        if min(self.n, self.c, self.k, self.groups, *self.in_spatial, *self.filter,
               *self.stride, *self.dilation) < 1 or min(self.pad) < 0:
            self._size_errors()
        if self.direction not in DIRECTIONS:
            raise ProblemError(f"direction {self.direction!r} is not one of F, B, W")
        if self.mode not in ("conv", "trans"):
            raise ProblemError(f"mode {self.mode!r} is not 'conv' or 'trans'")
        if self.c % self.groups or self.k % self.groups:
            raise ProblemError(
                f"group count {self.groups} must divide both C={self.c} and K={self.k}"
            )
        allowed = LAYOUTS_2D if dims == 2 else LAYOUTS_3D
        if not (self.in_layout in allowed and self.wei_layout in allowed
                and self.out_layout in allowed):
            for name, layout in (("in", self.in_layout), ("wei", self.wei_layout),
                                 ("out", self.out_layout)):
                if layout not in allowed:
                    raise ProblemError(
                        f"{name} layout {layout!r} is not one of "
                        f"{', '.join(allowed)} for a {dims}D problem"
                    )
        if not (self.in_type in DATA_TYPES and self.wei_type in DATA_TYPES
                and self.out_type in DATA_TYPES):
            for data_type in (self.in_type, self.wei_type, self.out_type):
                if data_type not in DATA_TYPES:
                    raise ProblemError(
                        f"data type {data_type!r} is not one of {' '.join(DATA_TYPES)}"
                    )
        if min(self.out_spatial) < 1:
            raise ProblemError(
                f"output size {self.out_spatial} is empty: the filter {self.filter} "
                f"(dilation {self.dilation}) does not fit the padded input {self.in_spatial}"
            )

    def _size_errors(self) -> None:
        """Raise the ProblemError naming the first size out of range."""
        if min(self.n, self.c, self.k, self.groups) < 1:
            name = next(n for n in ("n", "c", "k", "groups") if getattr(self, n) < 1)
            raise ProblemError(f"{name} must be at least 1, got {getattr(self, name)}")
        if min(self.in_spatial) < 1:
            raise ProblemError(f"input size {self.in_spatial} must be positive")
        if min(self.filter) < 1:
            raise ProblemError(f"filter size {self.filter} must be positive")
        if min(self.pad) < 0:
            raise ProblemError(f"padding {self.pad} must not be negative")
        if min(self.stride) < 1:
            raise ProblemError(f"stride {self.stride} must be at least 1")
        if min(self.dilation) < 1:
            raise ProblemError(f"dilation {self.dilation} must be at least 1")

    def with_batch(self, n: int) -> ConvProblem:
        """The same layer at batch size `n` (what `replace(self, n=n)` gives, without checking
        again what a batch size cannot change: the miss ranking asks per first call)."""
        if n == self.n:
            return self
        if not isinstance(n, int) or n < 1:
            raise ProblemError(f"n must be at least 1, got {n}")
        return self._changed("n", n)

    def with_direction(self, direction: str) -> ConvProblem:
        """The same layer in another direction (what `replace` gives, without checking again
        what a direction cannot change: a driver line's `-F 0` asks for three)."""
        if direction == self.direction:
            return self
        if direction not in DIRECTIONS:
            raise ProblemError(f"direction {direction!r} is not one of F, B, W")
        return self._changed("direction", direction)

    def _changed(self, name: str, value: object) -> ConvProblem:
        """A copy with one field changed that no check or worked-out size depends on; the key
        and hash are made again."""
        out = object.__new__(ConvProblem)
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("__record_hash__", "__key__")}
        state[name] = value
        out.__dict__.update(state)
        return out

    # ----------------------------------------------------------------- derived
    @property
    def spatial_dim(self) -> int:
        return len(self.in_spatial)

    @property
    def out_spatial(self) -> tuple[int, ...]:
        """Spatial size of the layer output y (worked out once per problem)."""
        out = self.__dict__.get("__out_spatial__")
        if out is None:
            out = self.__dict__["__out_spatial__"] = self._out_spatial()
        return out

    def _out_spatial(self) -> tuple[int, ...]:
        if self.mode == "trans":
            return tuple([
                s * (i - 1) + d * (f - 1) + 1 - 2 * p + op
                for i, f, p, s, d, op in zip(
                    self.in_spatial, self.filter, self.pad, self.stride, self.dilation,
                    self.trans_output_pad, strict=True,
                )
            ])
        if len(self.in_spatial) == 2:  # the common case, without a loop
            (ih, iw), (fh, fw), (ph, pw) = self.in_spatial, self.filter, self.pad
            (sh, sw), (dh, dw) = self.stride, self.dilation
            return ((ih + 2 * ph - dh * (fh - 1) - 1) // sh + 1,
                    (iw + 2 * pw - dw * (fw - 1) - 1) // sw + 1)
        return tuple([
            (i + 2 * p - d * (f - 1) - 1) // s + 1
            for i, f, p, s, d in zip(
                self.in_spatial, self.filter, self.pad, self.stride, self.dilation, strict=True
            )
        ])

    @property
    def in_shape(self) -> tuple[int, ...]:
        """Logical (N, C, *spatial) shape of x."""
        return (self.n, self.c, *self.in_spatial)

    @property
    def wei_shape(self) -> tuple[int, ...]:
        """Logical weight shape: (K, C/G, *filter); transposed: (C, K/G, *filter)."""
        if self.mode == "trans":
            return (self.c, self.k // self.groups, *self.filter)
        return (self.k, self.c // self.groups, *self.filter)

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Logical (N, K, *out_spatial) shape of y."""
        return (self.n, self.k, *self.out_spatial)

    @property
    def data_type(self) -> str:
        """The key's data type field: one name, or in+wei+out names concatenated."""
        return _type_field(*self._key_types())

    @property
    def layout(self) -> str:
        """The key's layout field: the default layout alone, else in-wei-out."""
        return _layout_field(*self._key_layouts(), self.spatial_dim)

    # ----------------------------------------------------------------- key view
    def _solver_view(self) -> tuple[str, bool]:
        """(direction as solved, whether x and y trade places) for the key.

        A transposed convolution is the plain one with x and y swapped, solved in the opposite
        data direction; backward directions then write dy first.
        """
        direction = self.direction
        swapped = False
        if self.mode == "trans":
            direction = {"F": "B", "B": "F", "W": "W"}[direction]
            swapped = True
        if direction in ("B", "W"):
            swapped = not swapped
        return direction, swapped

    def _key_tensors(self) -> tuple[int, tuple[int, ...], int, tuple[int, ...]]:
        _, swapped = self._solver_view()
        if swapped:
            return self.k, self.out_spatial, self.c, self.in_spatial
        return self.c, self.in_spatial, self.k, self.out_spatial

    def _key_layouts(self) -> tuple[str, str, str]:
        _, swapped = self._solver_view()
        if swapped:
            return self.out_layout, self.wei_layout, self.in_layout
        return self.in_layout, self.wei_layout, self.out_layout

    def _key_types(self) -> tuple[str, str, str]:
        _, swapped = self._solver_view()
        if swapped:
            return self.out_type, self.wei_type, self.in_type
        return self.in_type, self.wei_type, self.out_type

    @property
    def key_direction(self) -> str:
        return self._solver_view()[0]

    def key(self) -> str:
        """The FindDb key exactly as MIOpen serialises it (made once per problem: every
        database lookup of a first call asks for it)."""
        key = self.__dict__.get("__key__")
        if key is None:
            key = self.__dict__["__key__"] = self._make_key()
        return key

    def _make_key(self) -> str:
        # The key view worked out once (what _key_tensors, layout, data_type and
        # key_direction give one by one): a manifest makes a key per line.
        direction, swapped = self._solver_view()
        if swapped:
            c, i, k, o = self.k, self.out_spatial, self.c, self.in_spatial
            layout = _layout_field(self.out_layout, self.wei_layout, self.in_layout, len(i))
            data_type = _type_field(self.out_type, self.wei_type, self.in_type)
        else:
            c, i, k, o = self.c, self.in_spatial, self.k, self.out_spatial
            layout = _layout_field(self.in_layout, self.wei_layout, self.out_layout, len(i))
            data_type = _type_field(self.in_type, self.wei_type, self.out_type)
        f, p, s, d = self.filter, self.pad, self.stride, self.dilation
        if len(i) == 2:
            sizes = (f"{c}-{i[0]}-{i[1]}-{f[0]}x{f[1]}-{k}-{o[0]}-{o[1]}-{self.n}-"
                     f"{p[0]}x{p[1]}-{s[0]}x{s[1]}-{d[0]}x{d[1]}")
        else:
            sizes = (f"{c}-{i[0]}-{i[1]}-{i[2]}-{f[0]}x{f[1]}x{f[2]}-{k}-{o[0]}-{o[1]}-{o[2]}-"
                     f"{self.n}-{p[0]}x{p[1]}x{p[2]}-{s[0]}x{s[1]}x{s[2]}-{d[0]}x{d[1]}x{d[2]}")
        text = f"{sizes}-{self.bias}-{layout}-{data_type}-{direction}"
        if self.groups > 1:
            text += f"_g{self.groups}"
        return text

    def __str__(self) -> str:
        return self.key()

    def perfdb_config(self) -> dict[str, Any]:
        """The PerfDb `config` row (MIOpen's SQLite columns, same B/W swap as the key)."""
        kc, kin, kk, _ = self._key_tensors()
        three = self.spatial_dim == 3
        d, h, w = (kin if three else (1, *kin))
        fd, fh, fw = (self.filter if three else (1, *self.filter))
        pd, ph, pw = (self.pad if three else (0, *self.pad))
        sd, sh, sw = (self.stride if three else (0, *self.stride))
        dd, dh, dw = (self.dilation if three else (0, *self.dilation))
        return {
            "layout": self._key_layouts()[0],
            "data_type": self.data_type,
            "direction": self.key_direction,
            "spatial_dim": self.spatial_dim,
            "in_channels": kc,
            "in_h": h,
            "in_w": w,
            "in_d": d,
            "fil_h": fh,
            "fil_w": fw,
            "fil_d": fd,
            "out_channels": kk,
            "batchsize": self.n,
            "pad_h": ph,
            "pad_w": pw,
            "pad_d": pd,
            "conv_stride_h": sh,
            "conv_stride_w": sw,
            "conv_stride_d": sd,
            "dilation_h": dh,
            "dilation_w": dw,
            "dilation_d": dd,
            "bias": self.bias,
            "group_count": self.groups,
        }

    def perfdb_text_key(self) -> str:
        """Key of the text PerfDb (`<base>.db.txt`): ints joined by x, then layout, type, dir."""
        cfg = self.perfdb_config()
        ints = [
            "spatial_dim", "in_channels", "in_h", "in_w", "in_d", "fil_h", "fil_w", "fil_d",
            "out_channels", "batchsize", "pad_h", "pad_w", "pad_d", "conv_stride_h",
            "conv_stride_w", "conv_stride_d", "dilation_h", "dilation_w", "dilation_d", "bias",
            "group_count",
        ]
        return "x".join([*(str(cfg[i]) for i in ints), cfg["layout"], cfg["data_type"],
                         cfg["direction"]])

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key(),
            "direction": self.direction,
            "mode": self.mode,
            "spatial_dim": self.spatial_dim,
            "n": self.n,
            "c": self.c,
            "k": self.k,
            "groups": self.groups,
            "in_spatial": list(self.in_spatial),
            "filter": list(self.filter),
            "pad": list(self.pad),
            "stride": list(self.stride),
            "dilation": list(self.dilation),
            "out_spatial": list(self.out_spatial),
            "in_shape": list(self.in_shape),
            "wei_shape": list(self.wei_shape),
            "out_shape": list(self.out_shape),
            "layouts": [self.in_layout, self.wei_layout, self.out_layout],
            "types": [self.in_type, self.wei_type, self.out_type],
        }

    # ----------------------------------------------------------------- parsing
    @classmethod
    def from_key(cls, key: str) -> ConvProblem:
        """Parse a FindDb key. The result is a plain (mode conv) problem."""
        problem: ConvProblem = parse_key(key, cls)
        return problem

    @classmethod
    def from_record_key(cls, key: str) -> ConvProblem:
        """Parse a FindDb record's key: MIOpen's key, or one made under the TF32 math mode
        (`FINDDB_TF32_SUFFIX` appended); the problem is the same."""
        problem: ConvProblem = parse_key(key.removesuffix(FINDDB_TF32_SUFFIX), cls)
        return problem

