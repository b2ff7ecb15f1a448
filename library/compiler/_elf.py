"""Just enough ELF64 reading to check a GPU code object: header, symbols and notes.

Written with `struct` alone so that the runtime can check a blob before loading it without
pyelftools. GPU code objects (AMDGPU and cubin) are always 64-bit little-endian.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import CodeObjectError

__all__ = ["ElfFile", "read_elf"]

_MAGIC = b"\x7fELF"
_SHT_SYMTAB, _SHT_NOTE, _SHT_DYNSYM = 2, 7, 11


@dataclass(frozen=True)
class ElfFile:
    """The parts of an ELF file the code-object checks look at."""

    machine: int
    flags: int
    os_abi: int
    abi_version: int
    symbols: frozenset[str]
    notes: tuple[tuple[str, int, bytes], ...]  # (owner name, type, descriptor)


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _notes(data: bytes) -> list[tuple[str, int, bytes]]:
    out = []
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos : pos + namesz].rstrip(b"\0").decode("ascii", "replace")
        pos += (namesz + 3) & ~3  # name and descriptor are padded to 4 bytes
        desc = data[pos : pos + descsz]
        pos += (descsz + 3) & ~3
        out.append((name, ntype, desc))
    return out


def read_elf(blob: bytes, what: str = "code object") -> ElfFile:
    """Parse `blob`; anything that is not a well-formed ELF64 LE file is a CodeObjectError."""
    if len(blob) < 64 or blob[:4] != _MAGIC:
        raise CodeObjectError(f"{what} is not an ELF file (starts with {blob[:8]!r})")
    if blob[4] != 2 or blob[5] != 1:
        raise CodeObjectError(f"{what} is not a 64-bit little-endian ELF file")
    try:
        machine, = struct.unpack_from("<H", blob, 18)
        shoff, = struct.unpack_from("<Q", blob, 40)
        flags, = struct.unpack_from("<I", blob, 48)
        shentsize, shnum = struct.unpack_from("<HH", blob, 58)
        sections = []
        for i in range(shnum):
            off = shoff + i * shentsize
            # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, ...
            name, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", blob, off
            )
            sections.append((name, stype, offset, size, link, entsize))
        symbols: set[str] = set()
        notes: list[tuple[str, int, bytes]] = []
        for _, stype, offset, size, link, entsize in sections:
            data = blob[offset : offset + size]
            if stype in (_SHT_SYMTAB, _SHT_DYNSYM) and entsize:
                _, _, stroff, strsize, _, _ = sections[link]
                strtab = blob[stroff : stroff + strsize]
                for pos in range(0, len(data) - entsize + 1, entsize):
                    st_name, = struct.unpack_from("<I", data, pos)
                    if st_name:
                        symbols.add(_cstr(strtab, st_name))
            elif stype == _SHT_NOTE:
                notes += _notes(data)
    except (struct.error, IndexError) as exc:
        raise CodeObjectError(f"{what} is a truncated or malformed ELF file ({exc})") from None
    return ElfFile(machine, flags, blob[7], blob[8], frozenset(symbols), tuple(notes))
