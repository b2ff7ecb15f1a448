"""Tensors as the runtime sees them: a device address, a shape, a dtype.

Numpy arrays are copied to the device (and outputs back); objects with `__cuda_array_interface__`
(PyTorch, CuPy, Numba) or DLPack (`__dlpack__`) on the GPU are used in place: only their device
pointer is taken, no copy.
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import TYPE_CHECKING, Any

from ._record import dataclass, field
from .backends.base import Backend, Buffer
from .errors import BackendError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DeviceTensor", "as_device", "numpy_dtype"]

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
    if not _contiguous(shape, tuple(strides) if strides else None, item):
        raise BackendError(f"tensor of shape {shape} is not contiguous; call .contiguous() "
                           "(or pass memory laid out as the problem's layout)")
    nbytes = math.prod(shape) * item
    return DeviceTensor(int(iface["data"][0]), nbytes, type_name, shape, obj)


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
    if strides is not None and not _contiguous(shape, tuple(s * item for s in strides), item):
        raise BackendError(f"DLPack tensor of shape {shape} is not contiguous")
    nbytes = math.prod(shape) * item
    return DeviceTensor(int(dl.data or 0) + int(dl.byte_offset), nbytes, type_name, shape, obj,
                        _keep=capsule)


def as_device(obj: Any, backend: Backend, upload: bool = True) -> DeviceTensor:
    """The device view of `obj`: GPU objects in place, numpy arrays copied in (if `upload`)."""
    if isinstance(obj, DeviceTensor):
        return obj
    if isinstance(obj, Buffer):
        return DeviceTensor(obj.ptr, obj.nbytes, "", (obj.nbytes,), obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)
    np = _numpy()
    if np is not None and isinstance(obj, np.ndarray):
        arr = obj
        names = {v: k for k, v in _NUMPY_TYPES.items() if k != "BF16"}
        type_name = names.get(arr.dtype.name, "BF16" if arr.dtype.name == "uint16" else "")
        if not type_name:
            raise BackendError(f"numpy dtype {arr.dtype} is not a supported tensor type")
        buf = backend.alloc(arr.nbytes)
        if upload:
            backend.copy_in(buf, arr)
        return DeviceTensor(buf.ptr, arr.nbytes, type_name, arr.shape, arr, buffer=buf)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj)
    raise BackendError(
        f"cannot use a {type(obj).__name__} as a tensor: pass a numpy array, or a GPU tensor with "
        "__cuda_array_interface__ or DLPack (PyTorch, CuPy)"
    )
