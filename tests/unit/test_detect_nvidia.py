"""NVIDIA detection through fake NVML and CUDA driver modules (the real ones need a GPU)."""

from __future__ import annotations

import enum
import sys
from types import ModuleType, SimpleNamespace

import pytest
from miopenkernels.detect.device import SourceUnavailable
from miopenkernels.detect.nvidia import cuda_devices, detect_nvidia, nvml_devices
from miopenkernels.errors import DetectError


class FakeNVMLError(Exception):
    pass


def fake_nvml(gpus: list[dict], *, init_error: str | None = None) -> ModuleType:
    """A `pynvml` with the calls detection makes; each GPU is a dict of what NVML reports."""
    m = ModuleType("pynvml")
    m.NVMLError = FakeNVMLError  # type: ignore[attr-defined]
    m.calls = []  # type: ignore[attr-defined]

    def init() -> None:
        if init_error:
            raise FakeNVMLError(init_error)

    def attributes(h: int) -> SimpleNamespace:
        if "mig_sms" not in gpus[h]:
            raise FakeNVMLError("Not Supported")
        return SimpleNamespace(multiprocessorCount=gpus[h]["mig_sms"])

    def cores(h: int) -> int:
        if "cores" not in gpus[h]:
            raise FakeNVMLError("Not Supported")
        return gpus[h]["cores"]

    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: m.calls.append("shutdown")  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(gpus)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: gpus[h]["name"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetCudaComputeCapability = lambda h: gpus[h]["cc"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetAttributes_v2 = attributes  # type: ignore[attr-defined]
    m.nvmlDeviceGetPciInfo = (  # type: ignore[attr-defined]
        lambda h: SimpleNamespace(busId=gpus[h]["bus"]))
    m.nvmlDeviceGetNumGpuCores = cores  # type: ignore[attr-defined]
    return m


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_NO_DEVICE = 100


class CUdevice_attribute(enum.IntEnum):  # noqa: N801 - the driver's own name
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def fake_driver(gpus: list[dict], *, init: object = CUresult.CUDA_SUCCESS) -> ModuleType:
    """A `cuda.bindings.driver`: every call returns (CUresult, value...) as the real one does."""
    m = ModuleType("cuda.bindings.driver")
    ok = CUresult.CUDA_SUCCESS

    def cu_init(flags: int) -> tuple:
        if isinstance(init, Exception):
            raise init
        return (init,)

    def attribute(attr: int, dev: int) -> tuple:
        g = gpus[dev]
        value = {16: g["sms"], 75: g["cc"][0], 76: g["cc"][1]}[int(attr)]
        return ok, value

    m.CUresult = CUresult  # type: ignore[attr-defined]
    m.CUdevice_attribute = CUdevice_attribute  # type: ignore[attr-defined]
    m.cuInit = cu_init  # type: ignore[attr-defined]
    m.cuGetErrorName = lambda err: (ok, CUresult(err).name.encode())  # type: ignore[attr-defined]
    m.cuDeviceGetCount = lambda: (ok, len(gpus))  # type: ignore[attr-defined]
    m.cuDeviceGet = lambda i: (ok, i) if i < len(gpus) else (CUresult(1), None)  # type: ignore[attr-defined]  # noqa: E501
    m.cuDeviceGetName = (  # type: ignore[attr-defined]
        lambda n, d: (ok, gpus[d]["name"].encode() + b"\x00" * 8))
    m.cuDeviceGetAttribute = attribute  # type: ignore[attr-defined]
    m.cuDeviceGetPCIBusId = lambda n, d: (ok, gpus[d]["bus"].encode())  # type: ignore[attr-defined]  # noqa: E501
    return m


H100 = {"name": "NVIDIA H100 80GB HBM3", "cc": (9, 0), "bus": "00000000:17:00.0",
        "cores": 16896}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "bus": "00000000:65:00.0",
        "cores": 6912}


@pytest.fixture
def libs(monkeypatch):
    """Install fake modules (None = not installed) for pynvml and the CUDA driver."""

    def install(nvml: ModuleType | None, driver: ModuleType | None) -> None:
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
        monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
        monkeypatch.setitem(sys.modules, "cuda.cuda", None)

    return install


def test_nvml_alone_derives_sms_from_core_count(libs):
    libs(fake_nvml([H100, A100]), None)
    devices = nvml_devices()
    assert [(d.vendor, d.name, d.arch, d.target_id, d.cu, d.index) for d in devices] == [
        ("nvidia", "NVIDIA H100 80GB HBM3", "sm90", "sm90", 132, 0),
        ("nvidia", "NVIDIA A100-SXM4-80GB", "sm80", "sm80", 108, 1),
    ]
    assert devices[0].target.basename == "sm9084"
    assert devices[0].target.package == "miopenkernels-sm90-132"
    assert devices[1].rocminfo_cu is None


def test_nvml_takes_sm_count_from_the_cuda_driver_by_bus_id(libs):
    # Driver order differs from NVML order; the bus ID (written differently) joins them.
    nvml = fake_nvml([{**H100, "cores": 1}, {**A100, "cores": 1}])
    driver = fake_driver([
        {**A100, "bus": "0000:65:00.0", "sms": 108},
        {**H100, "bus": "0000:17:00.0", "sms": 114},  # H100 PCIe-like count: not the core guess
    ])
    libs(nvml, driver)
    assert [(d.arch, d.cu) for d in nvml_devices()] == [("sm90", 114), ("sm80", 108)]


def test_nvml_mig_instance_reports_its_own_sm_count(libs):
    libs(fake_nvml([{**H100, "mig_sms": 16}]), None)
    (dev,) = nvml_devices()
    assert (dev.cu, dev.target.basename) == (16, "sm90_16")


def test_nvml_bytes_names_are_decoded_and_nvml_is_shut_down(libs):
    nvml = fake_nvml([{**A100, "name": b"NVIDIA A100-SXM4-80GB"}])
    libs(nvml, None)
    (dev,) = nvml_devices()
    assert dev.name == "NVIDIA A100-SXM4-80GB"
    assert nvml.calls == ["shutdown"]  # type: ignore[attr-defined]


def test_nvml_without_any_sm_count_source_is_a_detect_error(libs):
    libs(fake_nvml([{k: v for k, v in H100.items() if k != "cores"}]), None)
    with pytest.raises(DetectError, match="SM count of GPU 0 .*MIOPEN_DEVICE_CU"):
        nvml_devices()


def test_cuda_driver_alone(libs):
    libs(None, fake_driver([{"name": "NVIDIA GeForce RTX 3090", "cc": (8, 6),
                             "bus": "0000:01:00.0", "sms": 82}]))
    (dev,) = detect_nvidia()
    assert (dev.name, dev.arch, dev.cu, dev.index) == ("NVIDIA GeForce RTX 3090", "sm86", 82, 0)
    assert dev.target.basename == "sm8652"  # 82 SMs > 64: hex


def test_cuda_driver_with_no_device_gives_none(libs):
    libs(None, fake_driver([], init=CUresult.CUDA_ERROR_NO_DEVICE))
    assert cuda_devices() == []


def test_nothing_installed_is_unavailable_not_a_crash(libs):
    libs(None, None)
    with pytest.raises(SourceUnavailable) as info:
        detect_nvidia()
    assert "nvidia-ml-py is not installed" in str(info.value)
    assert "cuda-bindings is not installed" in str(info.value)


def test_libraries_present_but_no_driver_is_unavailable(libs):
    libs(fake_nvml([], init_error="NVML Shared Library Not Found"),
         fake_driver([], init=RuntimeError("libcuda.so.1 not found. Install the driver.")))
    with pytest.raises(SourceUnavailable) as info:
        detect_nvidia()
    text = str(info.value)
    assert "NVML: NVML Shared Library Not Found" in text
    assert "CUDA driver: RuntimeError: libcuda.so.1 not found" in text
    assert "Install the driver" not in text  # one short line


def test_real_libraries_on_this_machine_do_not_crash():
    # Whatever is installed here: a list of devices or SourceUnavailable, nothing else.
    try:
        devices = detect_nvidia()
    except SourceUnavailable as exc:
        assert str(exc)
    else:
        assert all(d.vendor == "nvidia" and d.arch.startswith("sm") for d in devices)
