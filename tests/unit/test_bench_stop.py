"""bench/_results.py's `stop_on_sigterm`: a GPU run stopped by `timeout` (SIGTERM) leaves its
loop past the `except Exception` around each problem and writes what it measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
from _results import Stopped, stop_on_sigterm  # noqa: E402


def test_sigterm_stops_the_loop_past_a_problems_except_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    measured: list[int] = []
    with pytest.raises(Stopped), stop_on_sigterm():
        for i in range(100):
            try:  # a problem's own failures are caught; the stop is not one
                if i == 3:
                    os.kill(os.getpid(), signal.SIGTERM)
                measured.append(i)
            except Exception:  # noqa: BLE001 - what the runs do around one problem
                pytest.fail("the stop was taken for a problem's failure")
    assert 3 <= len(measured) < 100
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_run_under_timeout_writes_what_it_measured(tmp_path: Path) -> None:
    out = tmp_path / "partial.json"
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(BENCH)!r})
        from _results import Stopped, stop_on_sigterm
        rows = []
        try:
            with stop_on_sigterm():
                print("ready", flush=True)
                while True:
                    rows.append(len(rows))
                    time.sleep(0.01)
        except Stopped:
            pass
        open({str(out)!r}, "w").write(json.dumps({{"rows": len(rows)}}))
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert out.is_file() and '"rows"' in out.read_text()
