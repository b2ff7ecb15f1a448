"""Launch metadata: how one kernel of a code object is launched beyond its argument list
(block, shared memory, scratch pointers, the assumptions it was specialised on), and its
trailer behind the code object in a kdb blob.

A hand-written kernel needs none; a Triton kernel's comes from the compiler (`from_triton`),
travels in its kdb row (`attach_launch_metadata` / `split_kdb_blob`) and reaches the backend
with the object (codeobject.CodeObject). A trailer is untrusted input: anything malformed is a
CodeObjectError.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ._lazy_re import lazy
from ._record import dataclass
from .errors import CodeObjectError

__all__ = [
    "KDB_META_MAGIC",
    "LaunchMetadata",
    "assumed_divisors",
    "attach_launch_metadata",
    "split_kdb_blob",
]


@dataclass(frozen=True)
class LaunchMetadata:
    """How one kernel of a code object is launched, beyond its own argument list.

    A hand-written kernel needs none of it (the solver's Launch says grid, block and arguments).
    A Triton kernel fixes its block (`threads_per_block` = num_warps x warp size), may ask for
    dynamic shared memory, takes scratch pointers after its own arguments (`scratch_args`, each
    `(name, bytes, alignment)`), and was specialised on assumptions about its arguments
    (`assumptions`, e.g. `x % 16 == 0`) that a caller must meet.
    """

    kernel: str
    threads_per_block: int | None = None
    shared_bytes: int = 0
    scratch_args: tuple[tuple[str, int, int], ...] = ()
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.kernel:
            raise CodeObjectError("launch metadata names no kernel")
        tpb = self.threads_per_block
        if tpb is not None and not 1 <= tpb <= 1024:
            raise CodeObjectError(f"launch metadata of {self.kernel}: {tpb} threads per block "
                                  "is outside 1..1024")
        if not 0 <= self.shared_bytes <= 1 << 20:
            raise CodeObjectError(f"launch metadata of {self.kernel}: {self.shared_bytes} bytes "
                                  "of shared memory is outside 0..1 MiB")
        for name, size, align in self.scratch_args:
            if not name or not 0 <= size <= 1 << 40 or align < 1 or align & (align - 1):
                raise CodeObjectError(f"launch metadata of {self.kernel}: scratch argument "
                                      f"{(name, size, align)!r} is malformed")

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "threads_per_block": self.threads_per_block,
                "shared_bytes": self.shared_bytes,
                "scratch_args": [list(s) for s in self.scratch_args],
                "assumptions": list(self.assumptions)}

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LaunchMetadata:
        """The inverse of `to_dict`; anything malformed is a CodeObjectError."""
        try:
            tpb = data.get("threads_per_block")
            return cls(
                kernel=str(data["kernel"]),
                threads_per_block=None if tpb is None else int(tpb),
                shared_bytes=int(data.get("shared_bytes", 0)),
                scratch_args=tuple((str(n), int(s), int(a))
                                   for n, s, a in data.get("scratch_args", ())),
                assumptions=tuple(str(a) for a in data.get("assumptions", ())),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CodeObjectError(f"malformed launch metadata ({exc!r})") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> LaunchMetadata:
        import json

        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CodeObjectError(f"launch metadata is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise CodeObjectError("launch metadata is not a JSON object")
        return cls.from_dict(data)

    @classmethod
    def from_triton(cls, meta: Mapping[str, Any]) -> LaunchMetadata:
        """From the metadata Triton writes beside a compiled kernel (`kernel.metadata`)."""
        try:
            target = meta.get("target") or {}
            warp = int(target.get("warp_size", meta.get("warp_size", 32)))
            scratch = []
            for kind in ("global", "profile"):
                size = int(meta.get(f"{kind}_scratch_size", 0) or 0)
                # Triton passes both pointers whenever its launcher does; a zero size means null.
                if f"{kind}_scratch_size" in meta:
                    align = int(meta.get(f"{kind}_scratch_align", 1) or 1)
                    scratch.append((f"{kind}_scratch", size, align))
            return cls(
                kernel=str(meta["name"]),
                threads_per_block=int(meta["num_warps"]) * warp,
                shared_bytes=int(meta.get("shared", 0) or 0),
                scratch_args=tuple(scratch),
                assumptions=tuple(str(a) for a in meta.get("assumptions", ()) or ()),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CodeObjectError(f"malformed Triton metadata ({exc!r})") from None


# ------------------------------------------------------------------ metadata in a kdb blob
# A kdb row holds one blob under MIOpen's kern_db schema. An object that needs launch metadata
# (a Triton kernel's) carries it as a trailer behind the ELF image:
#     <code object><LaunchMetadata JSON, UTF-8><u64 LE: JSON length>b"MKLAUNCH"
# Loaders read an ELF image by its own headers (cuModuleLoadData and hipModuleLoadData take no
# size), so the trailer changes nothing for them; the row's md5 covers code and metadata
# together. Backends split it off before loading anyway. No trailer: no metadata.
KDB_META_MAGIC = b"MKLAUNCH"
_MAX_KDB_META = 1 << 16


def attach_launch_metadata(code_object: bytes, meta: LaunchMetadata) -> bytes:
    """The kdb blob of a code object whose kernel needs `meta` to be launched."""
    text = meta.to_json().encode()
    return bytes(code_object) + text + struct.pack("<Q", len(text)) + KDB_META_MAGIC


def split_kdb_blob(blob: bytes, what: str = "kdb blob"
                   ) -> tuple[bytes, LaunchMetadata | None]:
    """(code object, launch metadata or None) of a kdb blob; a malformed trailer is a
    CodeObjectError."""
    blob = bytes(blob)
    if len(blob) < 16 or blob[-8:] != KDB_META_MAGIC:
        return blob, None
    (size,) = struct.unpack_from("<Q", blob, len(blob) - 16)
    end = len(blob) - 16
    if size > _MAX_KDB_META or size > end:
        raise CodeObjectError(f"{what}: launch metadata trailer claims {size} bytes")
    try:
        meta = LaunchMetadata.from_json(blob[end - size : end])
    except CodeObjectError as exc:
        raise CodeObjectError(f"{what}: {exc}") from None
    return blob[: end - size], meta


_ASSUMPTION_RE = lazy(r"^\s*([A-Za-z_]\w*)\s*%\s*(\d+)\s*==\s*0\s*$")


def assumed_divisors(meta: LaunchMetadata | None) -> dict[str, int]:
    """{argument: divisor} of assumptions written `name % D == 0` (a pointer aligned to D
    bytes, an integer a multiple of D); others are not of this kind and are left out. The dict
    is shared between callers (each launch asks): read it, never change it."""
    return _divisors(meta.assumptions) if meta is not None else {}


@lru_cache(maxsize=1024)
def _divisors(assumptions: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for text in assumptions:
        m = _ASSUMPTION_RE.match(text)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


