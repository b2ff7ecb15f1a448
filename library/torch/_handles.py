"""One Handle per device (and FP32 math mode), and per problem its solution, kept.

GPU tensors get `Handle(device=index)`. CPU tensors get the null backend, which computes the
float64 reference where no GPU runs: it needs the GPU it stands in for, named by
MIOPEN_DEVICE_ARCH / MIOPEN_DEVICE_CU or by `set_handle(Handle(target=...), "cpu")`.
FP32 problems follow `torch.backends.cudnn.allow_tf32` (the TF32 math mode, as cuDNN's); a
handle's math mode is fixed for its life, so a device may hold one handle per mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .. import config
from ..errors import NoDeviceError
from ._launch import Launch, Launcher, prepare

if TYPE_CHECKING:
    from ..handle import Handle
    from ..invoke import ConvSolution
    from ..problem import ConvProblem

__all__ = ["allow_tf32", "calls", "fast", "handle_for", "launcher_for", "math_mode_for",
           "set_handle", "solution_for"]

_handles: dict[tuple[str, config.MathMode], Handle] = {}
_prepared: dict[tuple[int, ConvProblem], tuple[ConvSolution, Launch]] = {}
# A call's (device, direction, layout, dtype, TF32 flag, sizes, geometry) -> its problem and
# launchers: a repeated call builds no ConvProblem and looks up no handle (ops.py fills it).
calls: dict[tuple[object, ...], tuple[ConvProblem, Launch]] = {}
# An eager call's arguments as given (sizes, strides, types and devices, geometry, TF32 flag)
# -> (output sizes, output strides, launcher of checked tensors): a repeated call skips the
# dispatcher and the normalising of its arguments (_eager.py fills it).
fast: dict[tuple[object, ...], tuple[tuple[int, ...], tuple[int, ...], Launcher]] = {}

allow_tf32 = torch._C._get_cudnn_allow_tf32
"""`torch.backends.cudnn.allow_tf32` (cuDNN's TF32 flag), read without the module property."""


def _device_key(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"
    return device.type


def math_mode_for(type_name: str) -> config.MathMode:
    """TF32 for FP32 problems while torch allows cuDNN TF32, else IEEE."""
    if type_name == "FP32" and allow_tf32():
        return config.MathMode.TF32
    return config.MathMode.IEEE


def set_handle(handle: Handle | None, device: torch.device | str = "cpu", *,
               math_mode: config.MathMode | str | None = None) -> None:
    """Serve `device`'s tensors with `handle` (None: forget the device's handles), for
    problems of FP32 math mode `math_mode` ('ieee' or 'tf32'; None: every mode, so FP32 runs
    as the handle's own math mode says whatever `allow_tf32` is)."""
    key = _device_key(device)
    calls.clear()
    fast.clear()
    if math_mode is None or handle is None:
        modes = list(config.MathMode)
    else:
        modes = [math_mode if isinstance(math_mode, config.MathMode)
                 else config.MathMode.parse(math_mode)]
    for mode in modes:
        old = _handles.pop((key, mode), None)
        if handle is not None:
            _handles[(key, mode)] = handle
        if old is not None and old is not handle and all(h is not old
                                                          for h in _handles.values()):
            _forget(old)


def _forget(handle: Handle) -> None:
    for stale in [k for k in _prepared if k[0] == id(handle)]:
        del _prepared[stale]


def _new_handle(key: str, mode: config.MathMode) -> Handle:
    from ..handle import Handle

    if key.startswith("cuda:"):
        return Handle(device=int(key[5:]), math_mode=mode)
    if key != "cpu":
        raise NoDeviceError(f"tensors on {key} are not served: miopenkernels runs on CUDA "
                            "and ROCm GPUs (torch device 'cuda'), and on the CPU through "
                            "the null backend")
    arch, cu = config.device_overrides()
    if arch is None or cu is None:
        raise NoDeviceError(
            "CPU tensors run on the null backend, which needs the GPU it stands in for: set "
            "MIOPEN_DEVICE_ARCH and MIOPEN_DEVICE_CU (e.g. gfx90a and 110), or call "
            "miopenkernels.torch.set_handle(Handle(target=\"gfx90a-110\"), \"cpu\")")
    from ..backends import NullBackend
    from ..target import Target

    target = Target(arch, cu)
    return Handle(backend=NullBackend(target), target=target, math_mode=mode)


def handle_for(device: torch.device | str, type_name: str = "FP32") -> Handle:
    """The handle serving `device`'s tensors of MIOpen type `type_name` (made on first use)."""
    key = (_device_key(device), math_mode_for(type_name))
    handle = _handles.get(key)
    if handle is None:
        handle = _handles[key] = _new_handle(*key)
    return handle


def solution_for(handle: Handle, problem: ConvProblem) -> ConvSolution:
    """The solution `handle` runs for `problem`: found once (immediate mode: a FindDb record,
    else the miss ranking; no benchmark) and kept."""
    return launcher_for(handle, problem)[0]


def launcher_for(handle: Handle, problem: ConvProblem) -> tuple[ConvSolution, Launch]:
    """(solution, its prepared launchers) of `problem` on `handle`, made on first use."""
    key = (id(handle), problem)
    entry = _prepared.get(key)
    if entry is None:
        solution = handle.solutions(problem)[0]
        entry = _prepared[key] = (solution, prepare(handle, problem, solution))
    return entry
