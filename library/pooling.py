"""Pooling problems, as MIOpenDriver's `pool` sub-command writes them."""

from __future__ import annotations

from ._record import dataclass
from .errors import ProblemError

__all__ = ["PoolProblem"]


@dataclass(frozen=True)
class PoolProblem:
    """A max or average pooling layer: x (N, C, *in_spatial) -> y (N, C, *out_spatial)."""

    n: int
    c: int
    in_spatial: tuple[int, ...]
    window: tuple[int, ...]
    pad: tuple[int, ...]
    stride: tuple[int, ...]
    mode: str = "max"
    layout: str = "NCHW"
    data_type: str = "FP32"
    direction: str = "F"

    def __post_init__(self) -> None:
        if self.mode not in ("max", "avg", "avg_in"):
            raise ProblemError(f"pooling mode {self.mode!r} is not max, avg or avg_in")
        if self.direction not in ("F", "B"):
            raise ProblemError(f"pooling direction {self.direction!r} is not F or B")
        if any(w < 1 for w in self.window) or any(s < 1 for s in self.stride):
            raise ProblemError("pooling window and stride must be at least 1")
        if any(o < 1 for o in self.out_spatial):
            raise ProblemError(f"pooling output {self.out_spatial} is empty")

    @property
    def spatial_dim(self) -> int:
        return len(self.in_spatial)

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return tuple(
            (i + 2 * p - w) // s + 1
            for i, w, p, s in zip(self.in_spatial, self.window, self.pad, self.stride, strict=True)
        )

    def key(self) -> str:
        """A readable key in MIOpen's style (pooling has no FindDb)."""
        x = "x".join
        return "-".join([
            str(self.c), *map(str, self.in_spatial), x(map(str, self.window)),
            *map(str, self.out_spatial), str(self.n), x(map(str, self.pad)),
            x(map(str, self.stride)), self.mode, self.layout, self.data_type, self.direction,
        ])

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": "pool", "key": self.key(), "mode": self.mode, "n": self.n, "c": self.c,
            "in_spatial": list(self.in_spatial), "window": list(self.window),
            "pad": list(self.pad), "stride": list(self.stride),
            "out_spatial": list(self.out_spatial), "layout": self.layout,
            "data_type": self.data_type, "direction": self.direction,
        }
