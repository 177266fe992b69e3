"""Supervising one sandboxed process (reliabench.sandbox.supervision): rlimits, wall time, output caps.

Run here without isolation (``user=None``, a plain process-group kill) so that only the
supervision is under test; the backends built on it are tested in tests/test_sandbox.py and by
the containment self-check.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reliabench.errors import SandboxError
from reliabench.sandbox import Limits, SandboxResult
from reliabench.sandbox.supervision import (
    _read_capped,
    max_output,
    rlimit_args,
    run_supervised,
    signal_reason,
)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _run(code: str, tmp_path: Path, limits: Limits = Limits(wall_s=10.0),
         stdin: Path | None = None) -> SandboxResult:
    return run_supervised([sys.executable, "-c", code], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                           limits=limits, isolation="test", pass_fds=(), preexec_fn=None, user=None,
                           cleanup=_kill_group, stdin=stdin)


def test_rlimit_args() -> None:
    limits = Limits(cpu_s=2.2, memory_bytes=1000, file_size_bytes=77)
    assert rlimit_args(limits, 9) == ["--cpu=3:4", "--as=1000", "--nproc=9", "--fsize=77", "--core=0"]
    assert rlimit_args(Limits(cpu_s=0.1), 1)[0] == "--cpu=1:2"  # at least a second


@pytest.mark.parametrize(
    ("returncode", "reason"),
    [(None, None), (0, None), (1, None), (-signal.SIGXCPU, "cpu time limit"),
     (128 + signal.SIGXCPU, "cpu time limit"), (-signal.SIGXFSZ, "file size limit"),
     (128 + signal.SIGXFSZ, "file size limit"), (-signal.SIGKILL, None)],
)
def test_signal_reason(returncode: int | None, reason: str | None) -> None:
    assert signal_reason(returncode) == reason


def test_read_capped_keeps_head_and_tail(tmp_path: Path) -> None:
    f = tmp_path / "out"
    f.write_bytes(b"abcdefghij")
    assert _read_capped(f, 10) == "abcdefghij"
    assert _read_capped(f, 4) == "ab\n[... 6 bytes cut by the reliabench sandbox (output limit) ...]\nij"
    f.write_bytes("é".encode() * 3)  # a cut through a character is replaced, never an error
    assert _read_capped(f, 3) == "\ufffd\n[... 3 bytes cut by the reliabench sandbox (output limit) ...]\né"
    assert max_output(Limits(output_bytes=10)) == 64 * 1024
    assert max_output(Limits(output_bytes=1 << 20)) == 8 << 20


def test_a_command_that_ends_by_itself(tmp_path: Path) -> None:
    r = _run("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)", tmp_path)
    assert (r.returncode, r.stdout, r.stderr, r.timed_out, r.killed_reason, r.isolation) == (
        3, "out\n", "err\n", False, None, "test")


def test_stdin_is_a_file_or_nothing(tmp_path: Path) -> None:
    data = tmp_path / "in.txt"
    data.write_text("hello\n")
    assert _run("import sys; print(sys.stdin.read().upper(), end='')", tmp_path, stdin=data).stdout == "HELLO\n"
    assert _run("import sys; print(repr(sys.stdin.read()))", tmp_path).stdout == "''\n"


def test_wall_time_kill(tmp_path: Path) -> None:
    r = _run("import time; time.sleep(30)", tmp_path, Limits(wall_s=0.5))
    assert r.timed_out and r.killed_reason == "wall time limit"
    assert r.returncode == -signal.SIGKILL
    assert 0.5 <= r.wall_s < 10


def test_output_flood_is_killed_and_cut(tmp_path: Path) -> None:
    limits = Limits(wall_s=20.0, output_bytes=1000, file_size_bytes=1 << 30)
    r = _run("import sys\nwhile True: sys.stdout.write('x' * 65536)", tmp_path, limits)
    assert r.killed_reason == "output limit" and not r.timed_out
    assert r.stdout.startswith("x" * 500) and r.stdout.endswith("x" * 500)
    assert "bytes cut by the reliabench sandbox (output limit)" in r.stdout


def test_a_command_that_cannot_start_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="test sandbox could not start '/nonexistent/python'"):
        run_supervised(["/nonexistent/python"], cwd=tmp_path, env={}, limits=Limits(), isolation="test",
                        pass_fds=(), preexec_fn=None, user=None, cleanup=_kill_group)
