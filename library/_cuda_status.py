"""The one decoder of cuda-bindings status codes: the driver's CUresult and NVRTC's
nvrtcResult. Every call into those bindings returns `(status, values...)`; `unpack` turns a
failure into the caller's error class with the API's own name and words for it."""

from __future__ import annotations

from typing import Any

__all__ = ["describe", "is_success", "unpack"]


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def is_success(module: Any, status: Any) -> bool:
    """Whether `status` is CUDA_SUCCESS (driver) or NVRTC_SUCCESS (NVRTC)."""
    if hasattr(module, "nvrtcResult"):
        return bool(status == module.nvrtcResult.NVRTC_SUCCESS)
    return bool(status == module.CUresult.CUDA_SUCCESS)


def describe(module: Any, status: Any) -> str:
    """`CUDA_ERROR_NOT_FOUND: named symbol not found`, `NVRTC_ERROR_COMPILATION`; the bare code
    when the bindings cannot name it (the message must never hide the original failure)."""
    if hasattr(module, "nvrtcGetErrorString"):
        try:
            return _text(module.nvrtcGetErrorString(status)[1])
        except Exception:  # noqa: BLE001
            return str(status)
    parts = []
    for fn in ("cuGetErrorName", "cuGetErrorString"):
        try:
            err, value = getattr(module, fn)(status)
        except Exception:  # noqa: BLE001 - absent in older bindings and in test doubles
            continue
        if is_success(module, err) and value:
            parts.append(_text(value))
    return ": ".join(parts) or str(getattr(status, "name", status))


def unpack(module: Any, result: Any, what: str, error: type[Exception]) -> Any:
    """A bindings call's `(status, values...)`: None, the one value or the tuple of values;
    `error("<what> failed: <describe>")` when the status is not success."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if not is_success(module, status):
        raise error(f"{what} failed: {describe(module, status)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)
