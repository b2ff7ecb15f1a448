"""Crafted packages: paths a package names are data. A conda package (`.tar.bz2`, indexed by
py-rattler, installed by py-rattler) or a wheel (installed by pip) whose manifest names `..`,
an absolute path or a path through a symlink out of the prefix installs nothing, writes nothing
outside the prefix, moves no outside file, and exits non-zero; so does a conda package with one
flipped byte (exit 12, hash mismatch), a malformed repodata.json, and a `--prefix` that cannot
be written."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from miopenkernels.cli import app
from miopenkernels.target import Target
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from package_inputs import conda_archive, tar_member  # noqa: E402

pytest.importorskip("rattler")
pytestmark = pytest.mark.integration
T = Target("gfx906", 60)
DB = "share/miopen/db"
MANIFEST = f"share/miopenkernels/{T.basename}.manifest.json"
KDB = f"{DB}/{T.basename}.kdb"


def _manifest(files: dict[str, bytes], extra: dict[str, str]) -> bytes:
    entries = {rel: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)}
               for rel, b in files.items()}
    entries.update({rel: {"sha256": digest, "size": 1} for rel, digest in extra.items()})
    return json.dumps({"schema": 1, "package": T.package, "version": "0.1.0",
                       "target": T.to_dict(), "files": entries}).encode()


def _contents(extra: dict[str, str]) -> dict[str, bytes]:
    files = {KDB: b"kernels " * 100, f"{DB}/{T.basename}.HIP.fdb.txt": b"# none\n"}
    return {**files, MANIFEST: _manifest(files, extra)}


def _conda_package(channel: Path, files: dict[str, bytes]) -> Path:
    """A conda `.tar.bz2` of `files`, in the real format (info/index.json, info/paths.json)."""
    name, version, build = T.package, "0.1.0", f"{T.basename}_0"
    index = {"name": name, "version": version, "build": build, "build_number": 0,
             "depends": [], "noarch": "generic", "subdir": "noarch", "license": "MIT"}
    paths = {"paths_version": 1, "paths": [
        {"_path": rel, "path_type": "hardlink", "sha256": hashlib.sha256(b).hexdigest(),
         "size_in_bytes": len(b)} for rel, b in sorted(files.items())]}
    members = {"info/index.json": json.dumps(index).encode(),
               "info/paths.json": json.dumps(paths).encode(),
               "info/files": "".join(f"{r}\n" for r in sorted(files)).encode(), **files}
    out = channel / "noarch" / f"{name}-{version}-{build}.tar.bz2"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:bz2") as tar:
        for rel, data in members.items():
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    from miopenkernels.builder.package.index import index_channel

    index_channel(channel)
    return out


def _wheel(folder: Path, files: dict[str, bytes]) -> Path:
    """A data wheel of `files` in the real format (WHEEL, METADATA, RECORD)."""
    dist = f"{T.wheel_name}-0.1.0"
    members = {f"{dist}.data/data/{rel}": b for rel, b in files.items()}
    members[f"{dist}.dist-info/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {T.package}\nVersion: 0.1.0\n").encode()
    members[f"{dist}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    record = []
    for rel, b in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(b)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    members[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for rel, b in members.items():
            zf.writestr(rel, b)
    return out


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(root)): (p.stat().st_ino, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture()
def victim(tmp_path: Path) -> dict[str, Path]:
    """An outside file that a crafted package names, and the env under the same parent."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    env = tmp_path / "victim" / "env"
    (env / "conda-meta").mkdir(parents=True)
    return {"root": tmp_path, "outside": outside, "env": env}


def _install(args: list[str], env: Path) -> object:
    return CliRunner().invoke(app, ["install", *args, "--prefix", str(env), "--target",
                                    T.name, "--force", "--json"])


def _evil_paths(v: dict[str, Path]) -> list[dict[str, str]]:
    outside_sha = hashlib.sha256(v["outside"].read_bytes()).hexdigest()
    kdb_sha = hashlib.sha256(_contents({})[KDB]).hexdigest()
    return [
        # Resolves, inside the stage, to the staged kdb; from the prefix, to a sibling folder.
        {f"share/../../prefix/{KDB}": kdb_sha},
        {str(v["outside"]): outside_sha},  # absolute: the outside file itself
        {f"{DB}/../../../../outside.txt": outside_sha},
    ]


@pytest.mark.parametrize("case", [0, 1, 2])
def test_a_conda_package_naming_a_path_outside_the_prefix_installs_nothing(victim, case):
    v = victim
    extra = _evil_paths(v)[case]
    channel = v["root"] / "channel"
    _conda_package(channel, _contents(extra))
    before = _tree(v["root"])
    r = _install(["--channel", str(channel), "--conda"], v["env"])
    assert r.exit_code == 12, r.output
    assert "outside the install prefix" in r.output and "Traceback" not in r.output
    after = _tree(v["root"])
    # Nothing new anywhere but the channel's package cache; the outside file is untouched.
    new = {k for k in after if k not in before and not k.startswith("channel")}
    assert new == set(), new
    assert after[str(v["outside"].relative_to(v["root"]))] == \
        before[str(v["outside"].relative_to(v["root"]))]
    assert not (v["root"] / "victim" / "prefix").exists()
    assert [p.name for p in v["env"].iterdir()] == ["conda-meta"]


@pytest.mark.parametrize("case", [0, 1, 2])
def test_a_wheel_naming_a_path_outside_the_prefix_installs_nothing(victim, case):
    v = victim
    extra = _evil_paths(v)[case]
    links = v["root"] / "wheels"
    _wheel(links, _contents(extra))
    before = _tree(v["root"])
    r = _install(["--find-links", str(links), "--pip"], v["env"])
    assert r.exit_code == 12, r.output
    assert "outside the install prefix" in r.output and "Traceback" not in r.output
    after = _tree(v["root"])
    assert {k for k in after if k not in before} == set()
    assert after == before


def test_a_symlink_in_the_prefix_leading_outside_is_not_followed(victim, tmp_path):
    v = victim
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (v["env"] / "share").mkdir()
    os.symlink(elsewhere, v["env"] / "share" / "miopen")
    links = v["root"] / "wheels"
    _wheel(links, _contents({}))
    r = _install(["--find-links", str(links), "--pip"], v["env"])
    assert r.exit_code == 12, r.output
    assert "symbolic link" in r.output and list(elsewhere.iterdir()) == []


def test_the_same_package_uncrafted_installs(victim):
    v = victim
    channel = v["root"] / "channel"
    _conda_package(channel, _contents({}))
    r = _install(["--channel", str(channel), "--conda"], v["env"])
    assert r.exit_code == 0, r.output
    assert (v["env"] / KDB).read_bytes() == _contents({})[KDB]
    assert CliRunner().invoke(app, ["verify", "--prefix", str(v["env"])]).exit_code == 0


def test_a_conda_package_with_one_flipped_byte_is_a_hash_mismatch(victim):
    v = victim
    channel = v["root"] / "channel"
    pkg = _conda_package(channel, _contents({}))
    data = bytearray(pkg.read_bytes())
    data[len(data) // 2] ^= 0x01
    pkg.write_bytes(bytes(data))
    r = _install(["--channel", str(channel), "--conda"], v["env"])
    assert r.exit_code == 12, r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output
    assert [p.name for p in v["env"].iterdir()] == ["conda-meta"]


@pytest.mark.parametrize("repodata", [b"{not json", b"[]", b'{"packages": []}',
                                      b'{"packages": {"x.tar.bz2": 5}}', b"\xff\xfe"])
def test_a_malformed_repodata_json_is_one_error_line(victim, repodata):
    channel = victim["root"] / "channel"
    (channel / "noarch").mkdir(parents=True)
    (channel / "noarch" / "repodata.json").write_bytes(repodata)
    r = _install(["--channel", str(channel), "--conda"], victim["env"])
    assert r.exit_code in (10, 11), r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output


def test_a_prefix_that_is_a_file_or_read_only_is_one_error_line(victim, tmp_path, monkeypatch):
    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = _install(["--channel", str(channel), "--conda"], afile)
    assert r.exit_code == 14 and "is a file" in r.output, r.output
    ro = tmp_path / "ro"
    (ro / "conda-meta").mkdir(parents=True)
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):  # root writes anyway: the refusal the kernel would give
            import tempfile

            def refuse(*a, **k):  # noqa: ANN002, ANN003, ANN202
                raise PermissionError(13, "Permission denied")

            monkeypatch.setattr(tempfile, "mkdtemp", refuse)
        r = _install(["--channel", str(channel), "--conda"], ro)
        assert r.exit_code == 14 and "cannot write" in r.output, r.output
    finally:
        ro.chmod(0o755)


def test_a_full_disk_while_moving_is_one_error_line(victim, monkeypatch):

    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    real = os.replace
    calls = [0]

    def full(src, dst):  # noqa: ANN001, ANN202
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", full)  # every rename goes through os.replace
    r = _install(["--channel", str(channel), "--conda"], victim["env"])
    monkeypatch.undo()
    assert r.exit_code == 14 and "No space left" in r.output, r.output
    assert [p for p in victim["env"].rglob("*") if p.is_file()] == []


def test_a_killed_installers_stage_is_removed_on_the_next_run(victim):
    env = victim["env"]
    stale = env / ".miopenkernels-stage-4194305-abcd" / "prefix"  # pid 2**22+1: never alive
    stale.mkdir(parents=True)
    (stale / "half").write_text("x")
    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    r = _install(["--channel", str(channel), "--conda"], env)
    assert r.exit_code == 0, r.output
    assert not list(env.glob(".miopenkernels-stage-*"))


def test_installers_killed_mid_stage_leave_nothing_after_the_next_run(victim):
    import signal
    import subprocess
    import sys
    import time

    env = victim["env"]
    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    cmd = [sys.executable, "-c", "from miopenkernels.cli import main; main()", "install",
           "--channel", str(channel), "--conda", "--prefix", str(env), "--target", T.name,
           "--force"]
    left = 0
    for _ in range(3):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline \
                and not list(env.glob(".miopenkernels-stage-*/prefix")):
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = max(left, len(list(env.glob(".miopenkernels-stage-*"))))
    assert left >= 1  # the kills did leave stages behind
    r = _install(["--channel", str(channel), "--conda"], env)
    assert r.exit_code == 0, r.output
    assert not list(env.glob(".miopenkernels-stage-*"))
    assert CliRunner().invoke(app, ["verify", "--prefix", str(env)]).exit_code == 0


# --- Contained installs: a kernel package holds its databases, manifest and packaging
# metadata, nothing else, and replaces no file another package owns. ---

def _install_plain(args: list[str], env: Path, *extra: str) -> object:
    return CliRunner().invoke(app, ["install", *args, "--prefix", str(env), "--target", T.name,
                                    *extra])


def _prefix_hashes(root: Path) -> dict[str, str]:
    """Every path under `root` with the sha256 of a file's bytes (or 'dir' / 'link')."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = ("link:" + os.readlink(p) if p.is_symlink() else "dir" if p.is_dir()
                    else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _pip_env(root: Path) -> Path:
    """A prefix with a site-packages, a bin/activate and an etc/keep.conf of its own."""
    env = root / "pipenv"
    (env / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (env / "bin").mkdir()
    (env / "bin" / "activate").write_text("# the env's own activate\n")
    (env / "etc").mkdir()
    (env / "etc" / "keep.conf").write_text("keep = yes\n")
    return env


@pytest.mark.parametrize("member", [
    "{dist}.data/purelib/evil.pth",  # would run at every start of that Python
    "evil.pth",  # a root-is-purelib wheel's top level is site-packages
    "{dist}.data/scripts/activate",  # bin/activate
    "{dist}.data/data/etc/keep.conf",
])
def test_a_wheel_carrying_files_its_manifest_does_not_list_is_refused(tmp_path, member):
    env = _pip_env(tmp_path)
    links = tmp_path / "wheels"
    whl = _wheel(links, _contents({}))
    dist = f"{T.wheel_name}-0.1.0"
    with zipfile.ZipFile(whl, "a") as zf:
        zf.writestr(member.format(dist=dist), b"import os; os.system('touch /tmp/pwned')\n")
    before = _prefix_hashes(env)
    r = _install_plain(["--find-links", str(links), "--pip"], env, "--force")
    assert r.exit_code == 12, r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output
    assert member.format(dist=dist) in r.output and "may not" in r.output
    assert _prefix_hashes(env) == before


@pytest.mark.parametrize("extra", ["etc/keep.conf", "bin/activate",
                                   "lib/python3.11/site-packages/evil.pth"])
def test_a_conda_package_whose_manifest_names_other_paths_is_refused(victim, extra):
    env = victim["env"]
    (env / "etc").mkdir()
    (env / "etc" / "keep.conf").write_text("keep = yes\n")
    (env / "bin").mkdir()
    (env / "bin" / "activate").write_text("# the env's own activate\n")
    bad = b"replaced\n"
    files = {KDB: b"kernels " * 100, extra: bad}
    channel = victim["root"] / "channel"
    _conda_package(channel, {**files, MANIFEST: _manifest(files, {})})
    before = _prefix_hashes(env)
    r = _install_plain(["--channel", str(channel), "--conda"], env, "--force")
    assert r.exit_code == 12, r.output
    assert extra in r.output and "Traceback" not in r.output
    assert _prefix_hashes(env) == before


def _foreign_owner(env: Path, rel: str, data: bytes) -> None:
    """`rel` in `env`, owned by a conda package that is not a kernel package."""
    (env / rel).parent.mkdir(parents=True, exist_ok=True)
    (env / rel).write_bytes(data)
    record = {"name": "rocm-miopen-db", "version": "6.2", "build": "0", "files": [rel]}
    (env / "conda-meta" / "rocm-miopen-db-6.2-0.json").write_text(json.dumps(record))


def test_a_path_another_package_owns_refuses_the_install_and_force_says_what_it_replaced(
        victim):
    env = victim["env"]
    _foreign_owner(env, KDB, b"rocm's own kdb")
    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    before = _prefix_hashes(env)
    r = _install_plain(["--channel", str(channel), "--conda"], env)
    assert r.exit_code == 12, r.output
    assert KDB in r.output and "rocm-miopen-db" in r.output and "--force" in r.output
    assert _prefix_hashes(env) == before
    r = _install_plain(["--channel", str(channel), "--conda"], env, "--force")
    assert r.exit_code == 0, r.output
    assert "replaced" in r.output and "rocm-miopen-db" in r.output
    assert (env / KDB).read_bytes() == _contents({})[KDB]
    # verify sees the same: the kdb is also the other package's.
    v = CliRunner().invoke(app, ["verify", "--prefix", str(env), "--json"])
    assert v.exit_code == 12 and "also installed by rocm-miopen-db" in v.output, v.output


def test_verify_flags_a_file_a_kernel_wheel_installed_beyond_its_kind(tmp_path):
    env = _pip_env(tmp_path)
    links = tmp_path / "wheels"
    _wheel(links, _contents({}))
    r = _install_plain(["--find-links", str(links), "--pip"], env, "--force")
    assert r.exit_code == 0, r.output
    assert CliRunner().invoke(app, ["verify", "--prefix", str(env)]).exit_code == 0
    # A .pth recorded as the kernel wheel's own (what an older installer let through).
    sp = env / "lib" / "python3.11" / "site-packages"
    (sp / "evil.pth").write_text("import os\n")
    record = next(sp.glob(f"{T.wheel_name}-*.dist-info")) / "RECORD"
    record.write_text(record.read_text() + "evil.pth,,\n")
    v = CliRunner().invoke(app, ["verify", "--prefix", str(env), "--json"])
    assert v.exit_code == 12, v.output
    assert "evil.pth" in v.output and "may hold" in v.output


def test_verify_escapes_control_bytes_in_file_names(victim):
    env = victim["env"]
    channel = victim["root"] / "channel"
    _conda_package(channel, _contents({}))
    assert _install_plain(["--channel", str(channel), "--conda"], env, "--force").exit_code == 0
    manifest = env / MANIFEST
    data = json.loads(manifest.read_text())
    data["files"][f"{DB}/\x1b[2J\x1b]0;pwned\x07x.kdb"] = {"sha256": "00"}
    manifest.write_text(json.dumps(data))
    v = CliRunner().invoke(app, ["verify", "--prefix", str(env)])
    assert v.exit_code == 12, v.output
    assert "\x1b" not in v.output and "\x07" not in v.output
    assert "\\x1b[2J" in v.output or "\\x1b" in v.output


def test_installing_into_another_prefix_when_the_same_version_is_importable_here(
        tmp_path, monkeypatch):
    """pip would call the wheel "already satisfied" by this Python's copy and stage nothing."""
    import subprocess
    import sys

    links = tmp_path / "wheels"
    whl = _wheel(links, _contents({}))
    here = tmp_path / "here"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--target", str(here), str(whl)], check=True, capture_output=True)
    monkeypatch.setenv("PYTHONPATH", str(here))  # pip's child sees it as installed
    env = _pip_env(tmp_path)
    r = _install_plain(["--find-links", str(links), "--pip"], env, "--force")
    assert r.exit_code == 0, r.output
    assert (env / KDB).read_bytes() == _contents({})[KDB]


# --- Bounded: every case ends in under 5 s and 512 MB, with one error line. ---

_MEASURE = """\
import resource, subprocess, sys, time
start = time.monotonic()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60)
took = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
sys.stdout.write(f"{r.returncode} {took:.2f} {peak}\\n" + r.stdout + r.stderr)
"""


def _cli_bounded(args: list[str]) -> tuple[int, float, int, str]:
    """Run the CLI in a child: (exit code, seconds, peak RSS in MiB, output)."""
    import subprocess
    import sys

    cli = [sys.executable, "-c", "from miopenkernels.cli import main; main()"]
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cli, *args], capture_output=True,
                         text=True, timeout=120).stdout
    head, _, rest = out.partition("\n")
    rc, took, peak = head.split()
    return int(rc), float(took), int(peak), rest


def _assert_bounded(result: tuple[int, float, int, str], codes: tuple[int, ...]) -> str:
    rc, took, peak, output = result
    assert rc in codes, output
    assert output.count("error:") == 1 and "Traceback" not in output, output
    assert took < 5, f"{took:.1f} s"
    assert peak < 512, f"{peak} MiB"
    return output


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_fifo_or_a_device_named_as_a_wheel_is_refused_at_once(tmp_path, kind):
    links = tmp_path / "wheels"
    links.mkdir()
    whl = links / f"{T.wheel_name}-0.1.0-py3-none-any.whl"
    if kind == "fifo":
        os.mkfifo(whl)
    else:
        whl.symlink_to("/dev/zero")
    for extra in (["--dry-run"], []):
        out = _assert_bounded(_cli_bounded(
            ["install", "--find-links", str(links), "--pip", "--prefix", str(tmp_path / "env"),
             "--target", T.name, "--force", *extra]), (11,))
        assert "not a regular file" in out


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_fifo_or_a_device_named_as_repodata_or_a_conda_package_is_refused_at_once(
        victim, kind):
    channel = victim["root"] / "channel"
    pkg = _conda_package(channel, _contents({}))
    pkg.unlink()
    if kind == "fifo":
        os.mkfifo(pkg)
    else:
        pkg.symlink_to("/dev/zero")
    args = ["install", "--channel", str(channel), "--conda", "--prefix", str(victim["env"]),
            "--target", T.name, "--force"]
    out = _assert_bounded(_cli_bounded(args), (11,))
    assert "not a regular file" in out and pkg.name in out
    repodata = channel / "noarch" / "repodata.json"
    repodata.unlink()
    if kind == "fifo":
        os.mkfifo(repodata)
    else:
        repodata.symlink_to("/dev/zero")
    for extra in (["--dry-run"], []):
        out = _assert_bounded(_cli_bounded([*args, *extra]), (11,))
        assert "not a regular file" in out


def _raw_zip(path: Path, members: list[tuple[str, bytes, int, int]]) -> None:
    """A zip of already-deflated members: (name, raw deflate stream, crc32, inflated size)."""
    import struct

    local, central = bytearray(), bytearray()
    for name, raw, crc, size in members:
        n = name.encode()
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc,
                               len(raw), size, len(n), 0, 0, 0, 0, 0, len(local)) + n
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(raw),
                             size, len(n), 0) + n + raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members),
                      len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))


def _deflated(data: bytes) -> tuple[bytes, int, int]:
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(), zlib.crc32(data), len(data)


def _zeros_deflated(size: int) -> tuple[bytes, int, int]:
    """`size` zero bytes as one raw deflate stream, made from one flushed 64 MiB segment
    repeated (a full flush makes each segment independent of the ones before)."""
    import zlib

    chunk = 64 << 20
    assert size % chunk == 0
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    segment = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    zeros = bytes(chunk)
    for _ in range(size // chunk):
        crc = zlib.crc32(zeros, crc)
    return segment * (size // chunk) + c.flush(), crc, size


@pytest.mark.parametrize("declared", ["honest", "small"])
def test_a_wheel_whose_manifest_inflates_to_1_5_gib_is_refused_at_the_limit(tmp_path, declared):
    links = tmp_path / "wheels"
    links.mkdir()
    dist = f"{T.wheel_name}-0.1.0"
    files = _contents({})
    members = [(f"{dist}.data/data/{rel}", *_deflated(b)) for rel, b in files.items()
               if rel != MANIFEST]
    raw, crc, size = _zeros_deflated(24 * (64 << 20))  # 1.5 GiB
    if declared == "small":
        size = 1000  # a header that lies: the stream still inflates to 1.5 GiB
    members.append((f"{dist}.data/data/{MANIFEST}", raw, crc, size))
    _raw_zip(links / f"{dist}-py3-none-any.whl", members)
    out = _assert_bounded(_cli_bounded(
        ["install", "--find-links", str(links), "--pip", "--prefix", str(tmp_path / "env"),
         "--target", T.name, "--force"]), (12,))
    assert ("MiB" in out or "not a valid kernel wheel" in out) and MANIFEST in out
    assert not (tmp_path / "env" / "share").exists()


@pytest.mark.parametrize("page", ["links", "distinct", "comments", "open-tags"])
def test_a_3_7_mb_index_page_ends_in_seconds(tmp_path, page):
    simple = tmp_path / "simple"
    project = simple / T.package
    project.mkdir(parents=True)
    if page == "links":  # the same project page linked over and over
        body = f'<a href="{T.package}/">{T.package}</a>\n' * 90_000
    elif page == "distinct":  # as many project pages as links
        body = "".join(f'<a href="{T.package}-{i}/">miopenkernels-gfx906-{1 + i % 1024}</a>\n'
                       for i in range(60_000))
    elif page == "comments":  # unclosed constructs html.parser rescans
        body = "<!--" + "<a href=x>" * 370_000
    else:
        body = "<a " * 1_250_000
    (simple / "index.html").write_text(f"<html><body>{body}</body></html>")
    (project / "index.html").write_text("<html></html>")
    assert (simple / "index.html").stat().st_size > 3_600_000
    rc, took, peak, out = _cli_bounded(
        ["install", "--index-url", str(simple), "--pip", "--prefix", str(tmp_path / "env"),
         "--target", T.name, "--force", "--dry-run"])
    assert rc in (10, 11), out
    assert out.count("error:") == 1 and "Traceback" not in out
    assert took < 5 and peak < 512, (took, peak)


def test_a_user_cache_whose_kernels_sit_in_the_wal_installs_all_48(tmp_path):
    """The writer was killed before a checkpoint: the main file holds no row, the -wal all."""
    import subprocess
    import sys

    from miopenkernels.db import KernelDb

    cache = tmp_path / "cache"
    cache.mkdir()
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    code = f"""
import bz2, hashlib, os, sqlite3, sys
sys.path.insert(0, {str(fixtures)!r})
from package_inputs import KDB_SCHEMA, elf_header
con = sqlite3.connect({str(cache / f"{T.basename}.ukdb")!r}, isolation_level=None)
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA wal_autocheckpoint=0")
con.executescript(KDB_SCHEMA)
con.execute("BEGIN")
for i in range(48):
    blob = elf_header("gfx906") + f"object {{i}} ".encode() * 64
    con.execute("INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
                "uncompressed_size) VALUES (?, ?, ?, ?, ?)",
                (f"k{{i}}.cpp.o", f"-DK={{i}} -mcpu=gfx906", bz2.compress(blob, 9),
                 hashlib.md5(blob).hexdigest(), len(blob)))
con.execute("COMMIT")
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    out = tmp_path / "dist"
    r = CliRunner().invoke(app, ["package", "--from-dir", str(cache), "-t", T.name, "--kind",
                                 "wheel", "--out", str(out), "--version", "0.1.0"])
    assert r.exit_code == 0, r.output
    env = _pip_env(tmp_path)
    r = _install_plain(["--find-links", str(out), "--pip"], env, "--force")
    assert r.exit_code == 0, r.output
    with KernelDb(env / KDB) as kdb:
        assert len(kdb) == 48
    assert CliRunner().invoke(app, ["verify", "--prefix", str(env)]).exit_code == 0


def test_a_conda_package_whose_manifest_inflates_to_1_5_gib_is_refused_at_its_header(victim):
    import bz2

    channel = victim["root"] / "channel"
    pkg = _conda_package(channel, _contents({}))
    with tarfile.open(pkg, "r:bz2") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()
                   if m.name != MANIFEST]
    raw = io.BytesIO()
    for m, data in members:
        raw.write(m.tobuf(tarfile.GNU_FORMAT) + data + bytes(-len(data) % 512))
    big = tarfile.TarInfo(MANIFEST)
    big.size = 3 << 29  # 1.5 GiB declared; the stream ends long before
    raw.write(big.tobuf(tarfile.GNU_FORMAT) + bytes(1 << 20))
    pkg.write_bytes(bz2.compress(raw.getvalue()))
    repodata_path = channel / "noarch" / "repodata.json"
    repodata = json.loads(repodata_path.read_text())
    rec = repodata["packages"][pkg.name]
    rec["sha256"] = hashlib.sha256(pkg.read_bytes()).hexdigest()
    rec["size"] = pkg.stat().st_size
    rec.pop("md5", None)
    repodata_path.write_text(json.dumps(repodata))
    before = _prefix_hashes(victim["env"])
    out = _assert_bounded(_cli_bounded(
        ["install", "--channel", str(channel), "--conda", "--prefix", str(victim["env"]),
         "--target", T.name, "--force"]), (12,))
    assert MANIFEST in out and "over the limit" in out
    assert _prefix_hashes(victim["env"]) == before


def _dot_conda(channel: Path, pkg: list, name: str = f"{T.package}-0.1.0-{T.basename}_0"
               ) -> Path:
    """A `.conda` of `pkg` members (package_inputs.tar_member) with the info/ a channel index
    reads, indexed into `channel`."""
    from miopenkernels.builder.package.index import index_channel

    index = {"name": T.package, "version": "0.1.0", "build": f"{T.basename}_0",
             "build_number": 0, "depends": [], "noarch": "generic", "subdir": "noarch",
             "license": "MIT"}
    info = [tar_member("info/index.json", json.dumps(index).encode()),
            tar_member("info/paths.json", b'{"paths_version": 1, "paths": []}')]
    out = conda_archive(channel / "noarch" / f"{name}.conda", pkg, info)
    index_channel(channel)
    return out


@pytest.mark.parametrize("case", ["bomb", "link", "fifo"])
def test_a_hostile_dot_conda_is_refused_before_anything_is_extracted(victim, case):
    """A `.conda` whose pkg tar is a zstd bomb (64 KiB inflating to 2 GiB), links out of the
    prefix or holds a FIFO: exit 12 in seconds, the prefix and py-rattler's cache untouched."""
    pytest.importorskip("zstandard")
    channel = victim["root"] / "channel"
    member = {"bomb": tar_member(KDB, b"k" * 4096),  # replaced by the bomb below
              "link": tar_member(KDB, kind=tarfile.SYMTYPE, link="../../../../../outside.txt"),
              "fifo": tar_member(KDB, kind=tarfile.FIFOTYPE)}[case]
    pkg = _dot_conda(channel, [member])
    if case == "bomb":
        from miopenkernels.builder.package.index import index_channel

        _zstd_bomb_pkg(pkg)
        index_channel(channel)
    before = _prefix_hashes(victim["env"])
    out = _assert_bounded(_cli_bounded(
        ["install", "--channel", str(channel), "--conda", "--prefix", str(victim["env"]),
         "--target", T.name, "--force"]), (12,))
    assert pkg.name in out and "nothing was installed" in out
    assert _prefix_hashes(victim["env"]) == before
    assert not list(victim["env"].rglob("*.kdb"))


def _zstd_bomb_pkg(pkg: Path) -> None:
    """Replace a .conda's pkg tar by a tar whose one member is 2 GiB of zeros (64 KiB of zstd)."""
    import zstandard

    stem = pkg.name.removesuffix(".conda")
    with zipfile.ZipFile(pkg) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if not n.startswith("pkg-")}
    packed = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(packed, closefd=False) as out:
        member = tarfile.TarInfo(KDB)
        member.size = (2 << 30) - 4096
        out.write(member.tobuf(tarfile.GNU_FORMAT))
        zeros = bytes(1 << 20)
        for _ in range(2 << 10):
            out.write(zeros)
    with zipfile.ZipFile(pkg, "w") as zf:
        for name, data in kept.items():
            zf.writestr(name, data)
        zf.writestr(f"pkg-{stem}.tar.zst", packed.getvalue())
