"""hipcc run as the clang command it prints (library/compiler/amd.py), against stand-in
hipcc scripts: the command line is taken apart right, and a hipcc that prints none, or one
that names a program that is not there, is run as it is."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from miopenkernels.compiler.amd import HipccDriver, _hipcc_clang

FLAGS = ("-x", "hip", "--cuda-device-only", "-O3")


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _fake_clang(tmp_path: Path) -> str:
    # Writes its arguments into the -o file, so the object says how it was made.
    return _script(tmp_path / "clang-fake", 'out=""; prev=""\nfor a in "$@"; do '
                   '[ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                   'echo "clang $*" > "$out"\n')


def test_the_clang_command_and_hipccs_own_flags_are_read_once_per_arch(tmp_path: Path) -> None:
    clang = _fake_clang(tmp_path)
    calls = tmp_path / "calls"
    hipcc = _script(tmp_path / "hipcc", f'echo x >> {calls}\n'
                    f'echo "hipcc-cmd: {clang} -std=c++11 -isystem \\"/usr/x y\\" $*"\n'
                    f'exec {clang} "$@"\n')
    prefix = _hipcc_clang(hipcc, FLAGS, "gfx906", ())
    assert prefix == (clang, "-std=c++11", "-isystem", "/usr/x y")
    driver = HipccDriver("hipcc", hipcc, FLAGS, {})
    src = tmp_path / "k.hip"
    src.write_text("")
    for _ in range(2):
        obj = driver.compile(src, ["-DA=1"], "gfx908").decode()
        assert obj.startswith("clang -std=c++11 -isystem /usr/x y -x hip")
        assert "--offload-arch=gfx908 -DA=1 -c" in obj
    assert calls.read_text().count("x") == 2  # one probe for gfx906, one for gfx908


@pytest.mark.parametrize("printed", ["", "hipcc-cmd: /nonexistent/clang -O3",
                                     "hipcc-cmd: clang-relative -O3",
                                     "hipcc-cmd: {clang} -O3 'unclosed"])
def test_a_hipcc_without_a_usable_command_line_is_run_as_it_is(
        tmp_path: Path, printed: str) -> None:
    clang = _fake_clang(tmp_path)
    hipcc = _script(tmp_path / "hipcc", f'echo "{printed.format(clang=clang)}"\n'
                    f'exec {clang} HIPCC-ITSELF "$@"\n')
    assert _hipcc_clang(hipcc, FLAGS, "gfx90a", ()) == ()
    src = tmp_path / "k.hip"
    src.write_text("")
    obj = HipccDriver("hipcc", hipcc, FLAGS, {}).compile(src, [], "gfx90a").decode()
    assert obj.startswith("clang HIPCC-ITSELF")


def test_a_command_line_missing_one_of_our_arguments_is_not_trusted(tmp_path: Path) -> None:
    clang = _fake_clang(tmp_path)
    # This hipcc drops -O3: the printed command is not ours plus its flags, so run hipcc.
    hipcc = _script(tmp_path / "hipcc", 'args=""; for a in "$@"; do [ "$a" = "-O3" ] || '
                    'args="$args $a"; done\n'
                    f'echo "hipcc-cmd: {clang} -std=c++11 $args"\nexec {clang} $args\n')
    assert _hipcc_clang(hipcc, FLAGS, "gfx900", ()) == ()
