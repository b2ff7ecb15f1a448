"""The convolution problem and its MIOpen FindDb key.

A `ConvProblem` describes one layer as a framework sees it: input x (N, C, spatial), weights
(K, C/G, filter), output y (N, K, out spatial), and the direction to compute. MIOpen's key writes
the tensors in the order the solver sees them: for backward data (B) and backward weights (W) the
key's "input" is dy and its "output" is dx (B) or x (W), so the leading channel count is the layer's
K. A transposed convolution is solved as the opposite direction of the plain convolution whose
input and output are swapped (MIOpen does the same), so its key shows that direction.
"""

from __future__ import annotations

import re
from typing import Any

from ._lazy_re import lazy
from ._numbers import INT32, parse_int
from ._record import dataclass, field
from .errors import ProblemError

__all__ = [
    "ConvProblem",
    "DIRECTIONS",
    "DATA_TYPES",
    "COMPUTE_TYPES",
    "LAYOUTS",
    "FINDDB_TF32_SUFFIX",
]

DIRECTIONS = ("F", "B", "W")
#: The FindDb key suffix of records made under the TF32 math mode (`config.MathMode`): the
#: problem is the same, its measured choice is not.
FINDDB_TF32_SUFFIX = "_tf32"
DIRECTION_NAMES = {"F": "forward", "B": "backward data", "W": "backward weights"}
# Every data type name MIOpen writes into a key; only COMPUTE_TYPES have kernels here.
DATA_TYPES = ("FP32", "FP16", "BF16", "INT8", "INT32", "FP64", "FP8", "BF8", "INT64")
COMPUTE_TYPES = ("FP32", "FP16", "BF16")
TYPE_BYTES = {
    "FP32": 4, "FP16": 2, "BF16": 2, "INT8": 1, "INT32": 4, "FP64": 8, "FP8": 1, "BF8": 1,
    "INT64": 8,
}
LAYOUTS_2D = ("NCHW", "NHWC")
LAYOUTS_3D = ("NCDHW", "NDHWC")
LAYOUTS = LAYOUTS_2D + LAYOUTS_3D
_DEFAULT_LAYOUT = {2: "NCHW", 3: "NCDHW"}
_TYPE_RE = lazy("|".join(sorted(DATA_TYPES, key=len, reverse=True)))


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
        if self.direction not in DIRECTIONS:
            raise ProblemError(f"direction {self.direction!r} is not one of F, B, W")
        if self.mode not in ("conv", "trans"):
            raise ProblemError(f"mode {self.mode!r} is not 'conv' or 'trans'")
        if self.c % self.groups or self.k % self.groups:
            raise ProblemError(
                f"group count {self.groups} must divide both C={self.c} and K={self.k}"
            )
        allowed = LAYOUTS_2D if dims == 2 else LAYOUTS_3D
        for name, layout in (("in", self.in_layout), ("wei", self.wei_layout),
                             ("out", self.out_layout)):
            if layout not in allowed:
                raise ProblemError(
                    f"{name} layout {layout!r} is not one of "
                    f"{', '.join(allowed)} for a {dims}D problem"
                )
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
        i, w, o = self._key_types()
        return i if i == w == o else i + w + o

    @property
    def layout(self) -> str:
        """The key's layout field: the default layout alone, else in-wei-out."""
        i, w, o = self._key_layouts()
        if i == w == o == _DEFAULT_LAYOUT[self.spatial_dim]:
            return i
        return f"{i}-{w}-{o}"

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
        c, i, k, o = self._key_tensors()
        f, p, s, d = self.filter, self.pad, self.stride, self.dilation
        if len(i) == 2:
            sizes = (f"{c}-{i[0]}-{i[1]}-{f[0]}x{f[1]}-{k}-{o[0]}-{o[1]}-{self.n}-"
                     f"{p[0]}x{p[1]}-{s[0]}x{s[1]}-{d[0]}x{d[1]}")
        else:
            sizes = (f"{c}-{i[0]}-{i[1]}-{i[2]}-{f[0]}x{f[1]}x{f[2]}-{k}-{o[0]}-{o[1]}-{o[2]}-"
                     f"{self.n}-{p[0]}x{p[1]}x{p[2]}-{s[0]}x{s[1]}x{s[2]}-{d[0]}x{d[1]}x{d[2]}")
        text = f"{sizes}-{self.bias}-{self.layout}-{self.data_type}-{self.key_direction}"
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
        return _parse_key(key)

    @classmethod
    def from_record_key(cls, key: str) -> ConvProblem:
        """Parse a FindDb record's key: MIOpen's key, or one made under the TF32 math mode
        (`FINDDB_TF32_SUFFIX` appended); the problem is the same."""
        return _parse_key(key.removesuffix(FINDDB_TF32_SUFFIX))


def _looks_like_key(text: str) -> bool:
    return " " not in text and bool(re.match(r"^\d+-\d+-", text))


def _split_types(text: str) -> tuple[str, str, str]:
    names = _TYPE_RE.findall(text)
    if "".join(names) != text or len(names) not in (1, 3):
        raise ProblemError(f"data type field {text!r} is not a MIOpen type or in/wei/out triple")
    if len(names) == 1:
        return names[0], names[0], names[0]
    return names[0], names[1], names[2]


def _num(text: str, what: str) -> int:
    """One numeric field of a problem key: ASCII digits within int32."""
    return parse_int(text, f"problem key field {what}", 0, INT32[1], ProblemError)


def _nums(texts: list[str], names: str) -> tuple[int, ...]:
    return tuple(_num(v, name) for v, name in zip(texts, names.split(), strict=True))


def _ints(text: str, dims: int, what: str) -> tuple[int, ...]:
    parts = text.split("x")
    if len(parts) != dims:
        raise ProblemError(f"{what} field {text[:40]!r} is not {dims} integers joined by 'x'")
    return tuple(_num(p, what) for p in parts)


def _parse_key(key: str) -> ConvProblem:
    text = key.strip()
    groups = 1
    m = re.search(r"_g([0-9]+)$", text)
    if m:
        groups = parse_int(m.group(1), "problem key group count", 1, INT32[1], ProblemError)
        text = text[: m.start()]
    fields = text.split("-")
    # 2D: C H W f K oH oW N p s d bias LAYOUT(1 or 3) TYPE DIR -> 15 or 17 fields
    # 3D: C D H W f K oD oH oW N p s d bias LAYOUT TYPE DIR   -> 17 or 19 fields
    if len(fields) < 15 or not (fields[0].isascii() and fields[0].isdigit()):
        raise ProblemError(f"not a MIOpen problem key: {key[:80]!r}")
    # The filter field (with 'x') tells 2D from 3D.
    dims = fields[3].count("x") + 1 if "x" in fields[3] else fields[4].count("x") + 1
    n_num = 12 if dims == 2 else 14  # numeric fields before the layout (bias included)
    nums = fields[:n_num]
    try:
        if dims == 2:
            c, h, w = _nums(nums[0:3], "C H W")
            filt = _ints(nums[3], 2, "filter")
            k, oh, ow, n = _nums(nums[4:8], "K oH oW N")
            kin: tuple[int, ...] = (h, w)
            kout: tuple[int, ...] = (oh, ow)
            pad, stride, dil = (_ints(nums[i], 2, name) for i, name in
                                ((8, "padding"), (9, "stride"), (10, "dilation")))
            bias = _num(nums[11], "bias")
        elif dims == 3:
            c, d, h, w = _nums(nums[0:4], "C D H W")
            filt = _ints(nums[4], 3, "filter")
            k, od, oh, ow, n = _nums(nums[5:10], "K oD oH oW N")
            kin, kout = (d, h, w), (od, oh, ow)
            pad, stride, dil = (_ints(nums[i], 3, name) for i, name in
                                ((10, "padding"), (11, "stride"), (12, "dilation")))
            bias = _num(nums[13], "bias")
        else:
            raise ProblemError(f"not a MIOpen problem key (filter field): {key!r}")
    except (ValueError, IndexError) as exc:
        raise ProblemError(f"not a MIOpen problem key: {key[:80]!r} ({exc})") from None
    rest = fields[n_num:]
    if len(rest) not in (3, 5):
        raise ProblemError(f"not a MIOpen problem key (layout/type/direction): {key!r}")
    direction = rest[-1]
    if direction not in DIRECTIONS:
        raise ProblemError(f"key direction {direction!r} is not F, B or W in {key!r}")
    layouts = rest[:-2] if len(rest) == 5 else [rest[0]] * 3
    ti, tw, to = _split_types(rest[-2])
    if direction == "F":
        prob = ConvProblem(
            n=n, c=c, k=k, in_spatial=kin, filter=filt, pad=pad, stride=stride, dilation=dil,
            groups=groups, direction="F", in_layout=layouts[0], wei_layout=layouts[1],
            out_layout=layouts[2], in_type=ti, wei_type=tw, out_type=to, bias=bias,
        )
        expected = kout
    else:
        prob = ConvProblem(
            n=n, c=k, k=c, in_spatial=kout, filter=filt, pad=pad, stride=stride, dilation=dil,
            groups=groups, direction=direction, in_layout=layouts[2], wei_layout=layouts[1],
            out_layout=layouts[0], in_type=to, wei_type=tw, out_type=ti, bias=bias,
        )
        expected = kin
    if prob.out_spatial != expected:
        raise ProblemError(
            f"key {key!r} is inconsistent: output size {expected} but the shape gives "
            f"{prob.out_spatial}"
        )
    return prob
