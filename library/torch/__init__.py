"""miopenkernels from PyTorch (`pip install miopenkernels[torch]`).

`conv2d`, `conv3d`, `conv_transpose2d` take `torch.nn.functional`'s arguments and run the
package's solvers as `torch.library` custom ops (autograd, `torch.compile`, CUDA graphs,
autocast); `Conv2d`, `Conv3d`, `ConvTranspose2d` are torch's modules over them, and
`convert(model)` swaps a model's convolutions in place. docs/torch.md has the tour.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as exc:  # the extra is optional: say how to get it
    raise ImportError("miopenkernels.torch needs PyTorch: pip install "
                      "'miopenkernels[torch]'") from exc

from ._handles import handle_for, set_handle, solution_for
from .convert import ConvertReport, convert
from .modules import Conv2d, Conv3d, ConvTranspose2d
from .ops import conv2d, conv3d, conv_transpose2d

__all__ = [
    "Conv2d",
    "Conv3d",
    "ConvTranspose2d",
    "ConvertReport",
    "conv2d",
    "conv3d",
    "conv_transpose2d",
    "convert",
    "handle_for",
    "set_handle",
    "solution_for",
]
