"""A `.conda` or `.tar.bz2` package is checked as it inflates, before anything is extracted:
a zstd bomb, too many members, links out of the prefix, devices and FIFOs, paths outside the
prefix or beyond what a kernel package may hold are refused with the installer's errors (exit
12) in under 5 s and 512 MiB; a package as the project's packaging makes it passes."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from miopenkernels.errors import ContainmentError, IntegrityError
from miopenkernels.install.conda_archive import MAX_MEMBERS, check_conda_archive
from miopenkernels.target import Target

zstandard = pytest.importorskip("zstandard")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import conda_archive, tar_member  # noqa: E402

T = Target("gfx906", 60)
NAME = f"{T.package}-0.1.0-{T.basename}_0.conda"
KDB = f"share/miopen/db/{T.basename}.kdb"
INFO = [tar_member("info/index.json", b'{"name": "%s"}' % T.package.encode()),
        tar_member("info/paths.json", b'{"paths": []}')]


def _package(tmp_path: Path, pkg: list, info: list | None = None, **kw: int) -> Path:
    return conda_archive(tmp_path / NAME, pkg, INFO if info is None else info, **kw)


def test_a_kernel_package_as_packaged_passes(tmp_path: Path) -> None:
    path = _package(tmp_path, [tar_member(KDB, b"k" * 5000),
                               tar_member(f"share/miopenkernels/{T.basename}.manifest.json",
                                          b"{}")])
    check_conda_archive(path, T.package)


@pytest.mark.parametrize(("member", "error", "message"), [
    (tar_member("lib/python3.11/site-packages/evil.pth", b"import os"), ContainmentError,
     "may not write"),
    (tar_member("share/../../outside.txt", b"x"), IntegrityError, "outside the install prefix"),
    (tar_member("/etc/evil", b"x"), IntegrityError, "outside the install prefix"),
    (tar_member(KDB, kind=tarfile.SYMTYPE, link="../../../../etc/passwd"), IntegrityError,
     "out of the prefix"),
    (tar_member(KDB, kind=tarfile.SYMTYPE, link="/etc/passwd"), IntegrityError,
     "out of the prefix"),
    (tar_member(KDB, kind=tarfile.LNKTYPE, link="../outside"), IntegrityError,
     "out of the prefix"),
    (tar_member(KDB, kind=tarfile.FIFOTYPE), IntegrityError, "not a file, folder or link"),
    (tar_member(KDB, kind=tarfile.CHRTYPE), IntegrityError, "not a file, folder or link"),
    (tar_member("info/index.json", b"{}"), IntegrityError, "is in the pkg archive"),
])
def test_a_member_a_kernel_package_may_not_hold_is_refused(tmp_path, member, error, message):
    with pytest.raises(error, match=message) as info:
        check_conda_archive(_package(tmp_path, [member]), T.package)
    assert info.value.exit_code == 12


def test_a_pax_path_is_checked_as_the_name_it_gives(tmp_path: Path) -> None:
    member, data = tar_member("short", b"x")
    member.pax_headers = {"path": "../../escaped"}
    with pytest.raises(IntegrityError, match="outside the install prefix"):
        check_conda_archive(_package(tmp_path, [(member, data)]), T.package)


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    info = INFO + [tar_member(f"info/recipe/{i}.yaml") for i in range(MAX_MEMBERS)]
    with pytest.raises(IntegrityError, match=f"over {MAX_MEMBERS} members"):
        check_conda_archive(_package(tmp_path, [], info), T.package)


def test_a_member_declaring_more_than_the_package_may_inflate_to_is_refused_at_its_header(
        tmp_path: Path) -> None:
    member, _ = tar_member(KDB)
    member.size = 3 << 30  # no data follows: the header alone is refused
    raw = io.BytesIO()
    raw.write(member.tobuf(tarfile.PAX_FORMAT))
    stem = NAME.removesuffix(".conda")
    with zipfile.ZipFile(tmp_path / NAME, "w") as zf:
        zf.writestr("metadata.json", b"{}")
        zf.writestr(f"pkg-{stem}.tar.zst", zstandard.ZstdCompressor().compress(raw.getvalue()))
    with pytest.raises(IntegrityError, match="over the limit of what this package may inflate to"):
        check_conda_archive(tmp_path / NAME, T.package)


def test_other_zip_members_and_damaged_archives_are_refused(tmp_path: Path) -> None:
    path = _package(tmp_path, [tar_member(KDB, b"k")])
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("pkg-other.tar.zst", b"")
    with pytest.raises(IntegrityError, match="not a .conda member"):
        check_conda_archive(path, T.package)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(IntegrityError, match="not a valid archive"):
        check_conda_archive(path, T.package)


def _zstd_bomb(path: Path, gib: int, header: bool) -> Path:
    """A .conda whose pkg tar inflates to `gib` GiB of zeros (one member's declared size
    within the tar's fields, or no tar header at all), written a MiB at a time."""
    stem = path.name.removesuffix(".conda")
    packed = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(packed, closefd=False) as out:
        if header:
            member, _ = tar_member(KDB)
            member.size = (gib << 30) - 4096
            out.write(member.tobuf(tarfile.GNU_FORMAT))
        zeros = bytes(1 << 20)
        for _ in range(gib << 10):
            out.write(zeros)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", b"{}")
        zf.writestr(f"pkg-{stem}.tar.zst", packed.getvalue())
    return path


@pytest.mark.parametrize("header", [True, False])
def test_a_zstd_bomb_is_refused_in_seconds_and_megabytes(tmp_path: Path, header: bool) -> None:
    bomb = _zstd_bomb(tmp_path / NAME, 2, header)
    assert bomb.stat().st_size < 100 << 10  # 64 KiB that inflate to 2 GiB
    code = ("import sys\nfrom pathlib import Path\n"
            "from miopenkernels.install.conda_archive import check_conda_archive\n"
            "from miopenkernels.errors import IntegrityError\n"
            "try:\n    check_conda_archive(Path(sys.argv[1]), sys.argv[2])\n"
            "except IntegrityError as e:\n    print(e.exit_code, e)\n"
            "print(next(int(ln.split()[1]) for ln in open('/proc/self/status')\n"
            "           if ln.startswith('VmHWM')) // 1024)\n")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(bomb), T.package],
                         capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert time.monotonic() - start < 5
    assert out[0].startswith("12 ") and ("inflate" in out[0] or "after the end" in out[0])
    assert int(out[1]) < 512


@pytest.mark.parametrize("records", [b"22 path=../../escaped", b"x path=a\n", b"9 pathx\n"])
def test_a_malformed_pax_record_is_refused_and_shown(tmp_path: Path, records: bytes) -> None:
    header, _ = tar_member("././@PaxHeader", records, kind=tarfile.XHDTYPE)
    header.size = len(records)
    member, data = tar_member("short", b"x")
    raw = io.BytesIO()
    for info, payload in ((header, records), (member, data)):
        raw.write(info.tobuf(tarfile.USTAR_FORMAT) + payload + bytes(-len(payload) % 512))
    raw.write(bytes(1024))
    stem = NAME.removesuffix(".conda")
    with zipfile.ZipFile(tmp_path / NAME, "w") as zf:
        zf.writestr("metadata.json", b"{}")
        zf.writestr(f"pkg-{stem}.tar.zst", zstandard.ZstdCompressor().compress(raw.getvalue()))
    with pytest.raises(IntegrityError, match="malformed pax header record at byte 0") as info:
        check_conda_archive(tmp_path / NAME, T.package)
    assert records[:7].decode() in str(info.value) and info.value.exit_code == 12
