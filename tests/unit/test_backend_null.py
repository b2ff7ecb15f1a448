"""Null backend, code-object checks, packed launches, tensors, and backends without a GPU."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from find_doubles import SM90, fake_cubin
from miopenkernels.backends import NullBackend, open_backend
from miopenkernels.backends.base import Arg
from miopenkernels.codeobject import check_code_object as _check
from miopenkernels.errors import BackendError, CodeObjectError, NoDeviceError
from miopenkernels.target import Target
from miopenkernels.tensor import as_device


def check_code_object(blob: bytes, target: Target) -> str:
    """The loader's check (bundles and PTX accepted): the kind of object."""
    return _check(blob, target, bare=False).kind


def test_load_accepts_a_cubin_for_the_target_and_finds_its_symbol() -> None:
    be = NullBackend(SM90)
    fn = be.load(fake_cubin(90, ["conv_fwd"])).function("conv_fwd")
    assert fn.name == "conv_fwd"
    with pytest.raises(BackendError, match="not found"):
        be.load(fake_cubin(90, ["conv_fwd"])).function("conv_bwd")


def test_load_refuses_a_cubin_for_another_sm() -> None:
    with pytest.raises(CodeObjectError, match="sm_80.*sm90"):
        NullBackend(SM90).load(fake_cubin(80, ["k"]))


def test_a_cubin_runs_on_later_minor_versions_of_its_major_alone() -> None:
    """CUDA's binary compatibility, which lets sm86 and sm89 packages carry sm80 objects."""
    from miopenkernels.codeobject import runs_on

    for gpu in ("sm86", "sm89"):
        NullBackend(Target(gpu, 84)).load(fake_cubin(80, ["k"]))
        assert runs_on("sm80", gpu) and not runs_on(gpu, "sm80")
    for have, want in (("sm80", "sm90"), ("sm90", "sm100"), ("sm100", "sm120"),
                       ("sm89", "sm86"), ("gfx90a", "gfx942"), ("sm80", "gfx90a")):
        assert not runs_on(have, want)
    with pytest.raises(CodeObjectError, match="sm_86.*sm80"):
        NullBackend(Target("sm80", 108)).load(fake_cubin(86, ["k"]))


def test_old_abi_cubin_keeps_sm_in_low_bits() -> None:
    blob = bytearray(fake_cubin(90, ["k"]))
    blob[8] = 7
    struct.pack_into("<I", blob, 48, 0x5A055A)
    assert check_code_object(bytes(blob), SM90) == "cubin"


def test_amd_object_for_nvidia_target_and_garbage_are_refused() -> None:
    amd = bytearray(fake_cubin(90, ["k"]))
    struct.pack_into("<H", amd, 18, 224)
    with pytest.raises(CodeObjectError, match="not a cubin"):
        check_code_object(bytes(amd), SM90)
    with pytest.raises(CodeObjectError, match="not a code object"):
        check_code_object(b"version https://git-lfs.github.com/spec/v1", SM90)
    struct.pack_into("<I", amd, 48, 0x3F)
    assert check_code_object(bytes(amd), Target("gfx90a", 104)) == "hsaco"
    with pytest.raises(CodeObjectError, match="gfx90a, the target is gfx942"):
        check_code_object(bytes(amd), Target("gfx942", 304))


def test_ptx_for_a_newer_sm_is_refused() -> None:
    ptx = b".version 8.0\n.target sm_100\n.address_size 64\n"
    with pytest.raises(CodeObjectError, match="sm_100"):
        check_code_object(ptx, SM90)
    assert check_code_object(ptx.replace(b"sm_100", b"sm_80"), SM90) == "ptx"


def test_memory_round_trips_and_bounds_are_checked() -> None:
    be = NullBackend(SM90)
    data = np.arange(10, dtype=np.float32)
    buf = be.alloc(data.nbytes)
    be.copy_in(buf, data)
    out = np.zeros_like(data)
    be.copy_out(out, buf)
    assert np.array_equal(out, data)
    with pytest.raises(BackendError, match="runs past"):
        be.copy_in(buf, np.zeros(11, dtype=np.float32))
    be.memset(buf, 0xFF)
    be.copy_out(out, buf)
    assert np.isnan(out).all()


def test_prepared_launch_packs_args_and_rewrites_only_pointers() -> None:
    be = NullBackend(SM90)
    fn = be.load(fake_cubin(90, ["k"])).function("k")
    a, b = be.alloc(16), be.alloc(16)
    launch = be.prepare(fn, (3,), (64, 2), [Arg("ptr:x"), Arg("i32", -7), Arg("ptr:y"),
                                            Arg("f32", 1.5)])
    assert launch.grid == (3, 1, 1) and launch.block == (64, 2, 1)
    launch.set("x", a.ptr)
    launch.set("y", b.ptr)
    launch()
    rec = be.recorded[-1]
    assert rec.args == (("ptr:x", a.ptr), ("i32", -7), ("ptr:y", b.ptr), ("f32", 1.5))
    packed = launch.packed()
    # 8 (ptr) + 4 (i32) + 4 pad + 8 (ptr) + 4 (f32)
    assert len(packed) == 28
    assert struct.unpack_from("<QiiQf", packed) == (a.ptr, -7, 0, b.ptr, 1.5)


def test_launch_with_a_wild_pointer_fails_like_the_driver() -> None:
    be = NullBackend(SM90)
    fn = be.load(fake_cubin(90, ["k"])).function("k")
    with pytest.raises(BackendError, match="ILLEGAL_ADDRESS"):
        be.launch(fn, (1,), (1,), [Arg("ptr:x", 0xDEAD0000)])
    with pytest.raises(BackendError, match="empty grid"):
        be.launch(fn, (0,), (1,), [])


def test_cuda_backend_without_driver_is_no_device_error(monkeypatch) -> None:
    from miopenkernels.backends import cuda

    if cuda.device_count() > 0:
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(NoDeviceError):
        cuda.CudaBackend(0)


def test_hip_backend_without_hip_python_says_what_to_install(monkeypatch) -> None:
    import builtins

    from miopenkernels.backends import hip

    real_import = builtins.__import__

    def no_hip(name, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if name == "hip" or name.startswith("hip."):
            raise ImportError("No module named 'hip'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(hip, "_hip", None)
    monkeypatch.setattr(builtins, "__import__", no_hip)
    with pytest.raises(NoDeviceError, match="hip-python"):
        hip.HipBackend(0)
    assert hip.device_count() == 0


def test_open_backend_falls_back_to_null_for_a_named_target() -> None:
    from miopenkernels.backends import cuda

    if cuda.device_count() > 0:
        pytest.skip("a CUDA GPU is present")
    be = open_backend(target=SM90)
    assert isinstance(be, NullBackend) and be.target == SM90
    with pytest.raises(NoDeviceError, match="no GPU"):
        open_backend()


class _CaiTensor:
    def __init__(self, ptr: int, shape: tuple[int, ...], typestr: str, strides=None) -> None:  # noqa: ANN001
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides, "version": 3}


def test_cuda_array_interface_is_used_without_copy() -> None:
    be = NullBackend(SM90)
    t = as_device(_CaiTensor(0x7000_0000, (2, 3), "<f2"), be)
    assert t.ptr == 0x7000_0000 and t.nbytes == 12 and t.type_name == "FP16" and not t.copied
    assert not be._memory  # nothing allocated
    # A strided view keeps its strides (elements): the plan checks them against the layout.
    assert as_device(_CaiTensor(0x7000_0000, (2, 3), "<f4", strides=(4, 8)), be).strides == (1, 2)


def test_numpy_tensor_is_copied_in_and_back() -> None:
    be = NullBackend(SM90)
    a = np.arange(6, dtype=np.float32)
    t = as_device(a, be)
    assert t.copied and t.type_name == "FP32"
    host = np.zeros_like(a)
    be.copy_out(host, t.buffer)
    assert np.array_equal(host, a)
    be.memset(t.buffer, 0)
    t.copy_back(be)
    assert not a.any()


def test_cpu_dlpack_and_unknown_objects_are_refused() -> None:
    be = NullBackend(SM90)

    class CpuDl:
        def __dlpack__(self):  # noqa: ANN204
            raise AssertionError("must not be consumed")

        def __dlpack_device__(self):  # noqa: ANN204
            return (1, 0)

    with pytest.raises(BackendError, match="not a GPU"):
        as_device(CpuDl(), be)
    with pytest.raises(BackendError, match="cannot use a list"):
        as_device([1, 2], be)
