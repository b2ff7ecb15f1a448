"""`Conv2d`, `Conv3d`, `ConvTranspose2d`: torch's modules, computed by the package's solvers.

Subclasses of torch's own, with the same constructor, parameters and state dict, so a torch
module's `state_dict()` loads as it is; only `forward` differs. Padding modes other than zeros
(reflect, replicate, circular) pad with `F.pad` first, as torch's modules do.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F

from .ops import conv2d, conv3d, conv_transpose2d

__all__ = ["Conv2d", "Conv3d", "ConvTranspose2d"]


class Conv2d(torch.nn.Conv2d):
    """`torch.nn.Conv2d` through `miopenkernels.torch.conv2d`."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv2d(input, self.weight, self.bias, self.stride, 0, self.dilation,
                          self.groups)
        return conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)


class Conv3d(torch.nn.Conv3d):
    """`torch.nn.Conv3d` through `miopenkernels.torch.conv3d`."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv3d(input, self.weight, self.bias, self.stride, 0, self.dilation,
                          self.groups)
        return conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)


class ConvTranspose2d(torch.nn.ConvTranspose2d):
    """`torch.nn.ConvTranspose2d` through `miopenkernels.torch.conv_transpose2d`."""

    def forward(self, input: torch.Tensor,
                output_size: list[int] | None = None) -> torch.Tensor:
        padding = cast(tuple[int, ...], self.padding)  # torch refuses strings here
        output_padding = self._output_padding(input, output_size, list(self.stride),
                                              list(padding), list(self.kernel_size), 2,
                                              list(self.dilation))
        return conv_transpose2d(input, self.weight, self.bias, self.stride, padding,
                                output_padding, self.groups, self.dilation)
