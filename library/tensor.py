"""Tensors as the runtime sees them: a device address, a shape, strides, a dtype.

Numpy arrays are copied to the device (and outputs back); objects with `__cuda_array_interface__`
(PyTorch, CuPy, Numba) or DLPack (`__dlpack__`) on the GPU are used in place: only their device
pointer is taken, no copy. A plan reads torch tensors directly (`data_ptr()`, sizes, strides,
dtype: `torch_layout`), the cheapest exact route.

Layouts: a tensor is accepted when its memory is the problem's layout. Either its shape is the
memory-order shape (`memory_shape`: (N, H, W, C) for an NHWC problem) and it is C-contiguous, or
its shape is the logical one, (N, C, H, W), with the strides of the problem's layout (a torch
`channels_last` tensor for NHWC, `channels_last_3d` for NDHWC). Anything else is a
`LayoutError` naming the layout the tensor has and the one the problem wants
(`check_layout`). Numpy callers allocate with `memory_shape(problem, role)`.
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import TYPE_CHECKING, Any

from ._record import dataclass, field
from .backends.base import Backend, Buffer
from .errors import BackendError, LayoutError, ProblemError
from .problem import TYPE_BYTES

if TYPE_CHECKING:
    import numpy as np

    from .problem import ConvProblem

__all__ = ["DeviceTensor", "as_device", "bind", "finish", "numpy_dtype", "memory_shape",
           "check_layout", "stream_handle", "torch_layout", "TORCH_TYPES"]

# MIOpen type name -> numpy dtype name (BF16 travels as uint16 bits in numpy). numpy is
# imported only where a numpy array is met, so device tensors never pay for it.
_NUMPY_TYPES = {"FP32": "float32", "FP16": "float16", "BF16": "uint16", "FP64": "float64",
                "INT8": "int8", "INT32": "int32"}


def _numpy() -> Any:
    """numpy if the program imported it (a numpy array exists only then), else None."""
    return sys.modules.get("numpy")


_TYPESTR = {"<f4": "FP32", "<f2": "FP16", "<f8": "FP64", "|i1": "INT8", "<i4": "INT32",
            "<V2": "BF16", "<u2": "BF16"}
# DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat.
_DLPACK = {(2, 32): "FP32", (2, 16): "FP16", (2, 64): "FP64", (4, 16): "BF16", (0, 8): "INT8",
           (0, 32): "INT32"}
_KDLCUDA, _KDLROCM = 2, 10


# torch dtype name (str(dtype)) -> MIOpen type name.
TORCH_TYPES = {"torch.float32": "FP32", "torch.float16": "FP16", "torch.bfloat16": "BF16",
               "torch.float64": "FP64", "torch.int8": "INT8", "torch.int32": "INT32"}
_ROLES = {"x": ("in_shape", "in_layout", "in_type"), "w": ("wei_shape", "wei_layout", "wei_type"),
          "y": ("out_shape", "out_layout", "out_type")}


def _channel_last(layout: str) -> bool:
    return layout.endswith("C")


def memory_shape(problem: ConvProblem, role: str) -> tuple[int, ...]:
    """The memory-order shape of the layer's tensor `role` ('x', 'w' or 'y'): the logical
    (N, C, *spatial) shape with C moved last for a channels-last layout (NHWC, NDHWC). A numpy
    array passed to `Handle.run` or a plan must have this shape (C order)."""
    shape_attr, layout_attr, _ = _ROLES[role]
    shape = tuple(getattr(problem, shape_attr))
    if _channel_last(getattr(problem, layout_attr)):
        return (shape[0], *shape[2:], shape[1])
    return shape


def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for dim in reversed(shape):
        out.append(step)
        step *= dim
    return tuple(reversed(out))


def _same_strides(shape: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Equal strides where they matter: a dimension of size 1 may have any stride."""
    return all(d == 1 or x == y for d, x, y in zip(shape, a, b, strict=True))


def _layout_strides(logical: tuple[int, ...], channel_last: bool) -> tuple[int, ...]:
    """Strides (elements) of a dense tensor of logical shape (N, C, *spatial) in that layout."""
    if not channel_last:
        return _dense_strides(logical)
    mem = _dense_strides((logical[0], *logical[2:], logical[1]))
    return (mem[0], mem[-1], *mem[1:-1])


def check_layout(problem: ConvProblem, role: str, shape: tuple[int, ...],
                 strides: tuple[int, ...] | None, type_name: str) -> None:
    """Raise LayoutError unless a tensor of `shape` and `strides` (elements; None: dense C
    order) and MIOpen type `type_name` ('' when it has none) holds the layer's tensor `role` in
    the problem's layout; see the module docstring for what is accepted."""
    shape_attr, layout_attr, type_attr = _ROLES[role]
    want_type = getattr(problem, type_attr)
    if type_name and type_name != want_type:
        raise LayoutError(f"tensor {role} is {type_name}; the problem says {want_type}")
    logical = tuple(getattr(problem, shape_attr))
    layout = getattr(problem, layout_attr)
    mem = memory_shape(problem, role)
    dense = _dense_strides(shape) if strides is None else strides
    if shape == mem and _same_strides(shape, dense, _dense_strides(mem)):
        return
    if shape == logical and _same_strides(shape, dense,
                                          _layout_strides(logical, _channel_last(layout))):
        return
    if len(shape) != len(logical) or sorted(shape) != sorted(logical):
        raise LayoutError(f"tensor {role} has shape {shape}; the problem ({layout}) wants "
                          f"{logical} with {layout} strides, or memory shape {mem}")
    has = "a strided view"
    for name, cl in (("NCHW" if len(logical) == 4 else "NCDHW", False),
                     ("NHWC" if len(logical) == 4 else "NDHWC", True)):
        if shape == logical and _same_strides(shape, dense, _layout_strides(logical, cl)):
            has = f"layout {name}"
    hint = ("a torch tensor in channels_last memory format, or a numpy array of memory shape "
            f"{mem} (miopenkernels.tensor.memory_shape)" if _channel_last(layout) else
            "a contiguous tensor (.contiguous())")
    raise LayoutError(f"tensor {role} of shape {shape}, strides {tuple(dense)} has {has}; the "
                      f"problem wants {layout}: pass {hint}")


def torch_layout(t: Any) -> tuple[tuple[int, ...], tuple[int, ...], str, int]:
    """(shape, strides in elements, MIOpen type, device index or -1 for the CPU) of a torch
    tensor, read directly (no __cuda_array_interface__ dictionary)."""
    type_name = TORCH_TYPES.get(str(t.dtype))
    if type_name is None:
        raise BackendError(f"torch dtype {t.dtype} is not a supported tensor type")
    return tuple(t.shape), tuple(t.stride()), type_name, t.get_device()


def is_torch(obj: object) -> bool:
    """Whether `obj` is a torch tensor (torch already imported: no import here)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def is_host(obj: object) -> bool:
    """Whether `obj` is a numpy array (host memory, copied for a call)."""
    np = _numpy()
    return np is not None and isinstance(obj, np.ndarray)


def _torch_host(t: Any) -> Any:
    """A CPU torch tensor as a numpy array sharing its memory (BF16 as its uint16 bits), in
    memory order when it is dense in another order (channels_last): so a copied output lands
    back in the tensor."""
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
    view = t.detach().permute(order) if t.is_contiguous(memory_format=_torch_format(t)) and \
        order != list(range(t.dim())) else t.detach()
    if str(view.dtype) == "torch.bfloat16":
        import torch

        view = view.view(torch.int16)
        return view.numpy().view("uint16")
    return view.numpy()


def _torch_format(t: Any) -> Any:
    import torch

    if t.dim() == 4:
        return torch.channels_last
    if t.dim() == 5:
        return torch.channels_last_3d
    return torch.contiguous_format


def numpy_dtype(type_name: str) -> np.dtype[Any]:
    import numpy as np

    try:
        return np.dtype(_NUMPY_TYPES[type_name])
    except KeyError:
        raise BackendError(f"data type {type_name} has no host representation here") from None


@dataclass
class DeviceTensor:
    """A device address plus what the runtime checks: byte size and MIOpen type."""

    ptr: int
    nbytes: int
    type_name: str
    shape: tuple[int, ...]
    source: Any = field(default=None, repr=False)  # the caller's object (kept alive)
    buffer: Buffer | None = field(default=None, repr=False)  # ours, when we copied
    _keep: Any = field(default=None, repr=False)
    temporary: bool = False  # made for one call (copied numpy data): released after it
    strides: tuple[int, ...] | None = None  # elements; None: dense in C order

    @property
    def copied(self) -> bool:
        return self.buffer is not None

    def copy_back(self, backend: Backend) -> None:
        """Write device contents back into the numpy array this tensor came from."""
        np = _numpy()
        if self.buffer is not None and np is not None and isinstance(self.source, np.ndarray):
            if not self.source.flags.c_contiguous:
                raise BackendError("output numpy arrays must be C-contiguous")
            backend.copy_out(self.source, self.buffer)

    def release(self) -> None:
        if self.buffer is not None:
            self.buffer.free()
            self.buffer = None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None, item: int) -> bool:
    if strides is None:
        return True
    expect = item
    for dim, stride in zip(reversed(shape), reversed(strides), strict=True):
        if dim > 1 and stride != expect:
            return False
        expect *= dim
    return True


def _from_cai(obj: Any) -> DeviceTensor:
    iface = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in iface["shape"])
    typestr = iface["typestr"]
    type_name = _TYPESTR.get(typestr)
    if type_name is None:
        raise BackendError(f"tensor element type {typestr!r} is not supported")
    item = int(typestr[2:])
    strides = iface.get("strides")
    elems = None
    if strides and not _contiguous(shape, tuple(strides), item):
        elems = tuple(int(s) // item for s in strides)  # the plan checks it against the layout
    nbytes = math.prod(shape) * item
    return DeviceTensor(int(iface["data"][0]), nbytes, type_name, shape, obj, strides=elems)


def _from_dlpack(obj: Any) -> DeviceTensor:
    dev_type, _ = obj.__dlpack_device__()
    if int(dev_type) not in (_KDLCUDA, _KDLROCM):
        raise BackendError(f"DLPack tensor is on device type {dev_type}, not a GPU")
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    # DLManagedTensor starts with its DLTensor. The capsule is not consumed: holding it keeps
    # the producer's memory alive, and its destructor returns it.
    addr = get(capsule, b"dltensor")
    dl = _DLTensor.from_address(addr)
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    strides = tuple(dl.strides[i] for i in range(dl.ndim)) if dl.strides else None
    type_name = _DLPACK.get((dl.dtype.code, dl.dtype.bits))
    if type_name is None or dl.dtype.lanes != 1:
        raise BackendError(f"DLPack element type (code {dl.dtype.code}, {dl.dtype.bits} bits) "
                           "is not supported")
    item = dl.dtype.bits // 8
    if strides is not None and _contiguous(shape, tuple(s * item for s in strides), item):
        strides = None
    nbytes = math.prod(shape) * item
    return DeviceTensor(int(dl.data or 0) + int(dl.byte_offset), nbytes, type_name, shape, obj,
                        _keep=capsule, strides=strides)


def as_device(obj: Any, backend: Backend, upload: bool = True) -> DeviceTensor:
    """The device view of `obj`: GPU objects in place, numpy arrays copied in (if `upload`)."""
    if isinstance(obj, DeviceTensor):
        return obj
    if isinstance(obj, Buffer):
        return DeviceTensor(obj.ptr, obj.nbytes, "", (obj.nbytes,), obj)
    if is_torch(obj) and not obj.is_cuda:
        obj = _torch_host(obj)  # a CPU tensor (the null backend): its memory, as numpy
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)
    np = _numpy()
    if np is not None and isinstance(obj, np.ndarray):
        arr = obj
        names = {v: k for k, v in _NUMPY_TYPES.items() if k != "BF16"}
        type_name = names.get(arr.dtype.name, "BF16" if arr.dtype.name == "uint16" else "")
        if not type_name:
            raise BackendError(f"numpy dtype {arr.dtype} is not a supported tensor type")
        elems = None if arr.flags.c_contiguous else tuple(
            st // arr.itemsize for st in arr.strides)
        buf = backend.alloc(arr.nbytes)
        if upload:
            backend.copy_in(buf, arr)
        return DeviceTensor(buf.ptr, arr.nbytes, type_name, arr.shape, arr, buffer=buf,
                            strides=elems)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj)
    raise BackendError(
        f"cannot use a {type(obj).__name__} as a tensor: pass a numpy array, or a GPU tensor with "
        "__cuda_array_interface__ or DLPack (PyTorch, CuPy)"
    )


_SPEC = {"x": ("in_shape", "in_type"), "w": ("wei_shape", "wei_type"),
         "y": ("out_shape", "out_type")}


def bind(problem: ConvProblem, backend: Backend, x: object, w: object, y: object,
         upload_output: bool = False, checked: set[object] | None = None
         ) -> dict[str, DeviceTensor]:
    """Device views of the layer's tensors, checked against the problem's layouts, sizes and
    types (tensor.check_layout; raw Buffers by byte size). `checked` keeps the (role, shape,
    strides, type) already accepted, so a repeated layout is not checked again."""
    out_role = {"F": "y", "B": "x", "W": "w"}[problem.direction]
    bound: dict[str, DeviceTensor] = {}
    try:
        for role, obj in (("x", x), ("w", w), ("y", y)):
            t = as_device(obj, backend, upload=upload_output or role != out_role)
            t.temporary = t.temporary or (t is not obj and t.copied)
            bound[role] = t
            key = (role, t.shape, t.strides, t.type_name)
            if checked is not None and key in checked:
                continue
            if t.type_name and (len(t.shape) > 1 or t.strides is not None):
                check_layout(problem, role, tuple(t.shape), t.strides, t.type_name)
            else:  # raw memory (a Buffer, a flat array): its size and type alone
                shape_attr, type_attr = _SPEC[role]
                type_name = getattr(problem, type_attr)
                want = math.prod(getattr(problem, shape_attr)) * TYPE_BYTES[type_name]
                if t.nbytes != want:
                    raise ProblemError(f"tensor {role} has {t.nbytes} bytes; the problem needs "
                                       f"{want} ({type_name}, shape "
                                       f"{getattr(problem, shape_attr)})")
                if t.type_name and t.type_name != type_name:
                    raise ProblemError(f"tensor {role} is {t.type_name}; the problem says "
                                       f"{type_name}")
            if checked is not None:
                checked.add(key)
    except BaseException:
        for t in bound.values():
            if t.temporary:
                t.release()
        raise
    return bound


def finish(backend: Backend, problem: ConvProblem, bound: dict[str, DeviceTensor]) -> None:
    """Copy a copied output back and release the call's temporary tensors."""
    out = bound[{"F": "y", "B": "x", "W": "w"}[problem.direction]]
    if out.copied:
        backend.synchronize()
        out.copy_back(backend)
    for t in bound.values():
        if t.temporary:
            t.release()


def stream_handle(stream: Any) -> int:
    """A raw CUDA/HIP stream handle from an int, or an object with `.cuda_stream` (torch) or
    `.handle` (cuda.core, hip-python); 0 is the default stream."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for name in ("cuda_stream", "handle", "ptr"):
        value = getattr(stream, name, None)
        if value is not None:
            return int(value)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise BackendError(f"cannot use a {type(stream).__name__} as a stream: pass a raw "
                           "handle (int) or an object with .cuda_stream or .handle") from None
