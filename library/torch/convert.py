"""`convert(model)`: a model's convolutions computed by the package, swapped in place.

A torch `Conv2d`, `Conv3d` or `ConvTranspose2d` becomes this package's module of the same name
(its class is swapped: parameters, buffers, hooks and the optimiser's references stay as they
are). A module that cannot be served is left alone, and the report says why.
"""

from __future__ import annotations

import torch

from .._record import dataclass, field
from ._problem import DATA_TYPES
from .modules import Conv2d, Conv3d, ConvTranspose2d

__all__ = ["ConvertReport", "convert"]

_SWAPS: dict[type[torch.nn.Module], type[torch.nn.Module]] = {
    torch.nn.Conv2d: Conv2d, torch.nn.Conv3d: Conv3d, torch.nn.ConvTranspose2d: ConvTranspose2d}
_OURS = tuple(_SWAPS.values())


@dataclass
class ConvertReport:
    """What `convert` did: `converted` names the swapped modules, `left` (name, why) the
    convolutions it left to torch."""

    converted: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"converted {len(self.converted)} convolutions, left {len(self.left)}"]
        lines += [f"  left {name or '(model)'}: {why}" for name, why in self.left]
        return "\n".join(lines)


def _why_not(module: torch.nn.Module) -> str | None:
    """Why `module`, a torch convolution, cannot be served here (None: it can)."""
    kind = type(module)
    if isinstance(module, torch.nn.modules.lazy.LazyModuleMixin):
        return f"{kind.__name__} has no weight yet: convert after a first forward"
    if kind not in _SWAPS:
        for base in _SWAPS:
            if isinstance(module, base):
                return (f"{kind.__name__} subclasses {base.__name__}: its own forward may "
                        "compute something else")
        if isinstance(module, torch.nn.modules.conv._ConvNd):
            return (f"{kind.__name__} is not served (2D and 3D convolutions, 2D transposed "
                    "ones)")
        return None
    weight = module.weight  # type: ignore[union-attr]
    assert isinstance(weight, torch.Tensor)
    if weight.dtype not in DATA_TYPES:
        return f"weights are {weight.dtype}: the solvers compute float32, float16, bfloat16"
    if weight.device.type not in ("cuda", "cpu"):
        return f"weights are on {weight.device}: served are CUDA/ROCm GPUs and the CPU"
    return None


def convert(model: torch.nn.Module) -> ConvertReport:
    """Swap `model`'s convolutions (the model itself included) for this package's, in place;
    returns which were swapped and which were left, with why."""
    report = ConvertReport()
    for name, module in model.named_modules():
        if isinstance(module, _OURS):
            continue
        if not isinstance(module, torch.nn.modules.conv._ConvNd):
            continue
        why = _why_not(module)
        if why is not None:
            report.left.append((name, why))
            continue
        # A class swap keeps the module object, so every reference to it stays valid.
        module.__class__ = _SWAPS[type(module)]  # type: ignore[assignment]
        report.converted.append(name)
    return report
