"""The outcome channel's pipe (reliabench.hidden_tests.outcome_pipe): kept in order, capped, never waited on.

The parser of what arrives through it is tested in tests/test_hidden_tests_channel.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from reliabench.hidden_tests.outcome_pipe import OutcomePipe


def _writer(fd: int, script: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", script, str(fd)], pass_fds=(fd,), check=False,
                          capture_output=True, timeout=60)


def test_pipe_keeps_everything_a_writer_wrote_in_order() -> None:
    with OutcomePipe() as pipe:
        _writer(pipe.write_fd, "import os,sys\nfd=int(sys.argv[1])\n"
                               "for i in range(20000): os.write(fd, b'%d\\n' % i)")
    assert pipe.data.split() == [b"%d" % i for i in range(20000)]
    assert pipe.overflow == 0


def test_pipe_cannot_be_truncated_or_rewritten_by_the_writer() -> None:
    with OutcomePipe() as pipe:
        proc = _writer(pipe.write_fd, "import os,sys\nfd=int(sys.argv[1])\nos.write(fd, b'start\\n')\n"
                       "errs=[]\n"
                       "for f in (lambda: os.ftruncate(fd, 0), lambda: os.lseek(fd, 0, 0)):\n"
                       "    try: f()\n    except OSError as e: errs.append(e.errno)\n"
                       "print(errs)\nos.close(fd)")
    assert pipe.data == b"start\n"  # the line written before the attack is still there
    assert proc.stdout.strip() != b"[]"  # both operations failed


def test_pipe_caps_a_flood_without_blocking_the_writer() -> None:
    with OutcomePipe(cap=1000) as pipe:
        proc = _writer(pipe.write_fd, "import os,sys\nfd=int(sys.argv[1])\n"
                                      "for _ in range(300): os.write(fd, b'x' * 65536)")
    assert proc.returncode == 0
    assert len(pipe.data) == 1000
    assert pipe.overflow == 300 * 65536 - 1000


def test_pipe_close_does_not_wait_for_a_writer_that_never_stops() -> None:
    pipe = OutcomePipe(cap=100)
    proc = subprocess.Popen([sys.executable, "-c", "import os,sys\nfd=int(sys.argv[1])\n"
                             "while True: os.write(fd, b'y' * 4096)", str(pipe.write_fd)],
                            pass_fds=(pipe.write_fd,))
    try:
        done = threading.Event()

        def close() -> None:
            pipe.close()
            done.set()

        threading.Thread(target=close, daemon=True).start()
        assert done.wait(30), "close() waited for a writer that never stops"
    finally:
        proc.kill()
        proc.wait()
    assert len(pipe.data) == 100


def test_pipe_read_end_is_not_inherited() -> None:
    pipe = OutcomePipe()
    try:
        assert not os.get_inheritable(pipe._read_fd)
    finally:
        pipe.close()


def test_pipe_cap_is_exact_and_validated() -> None:
    with pytest.raises(ValueError, match="cap must be >= 1, got 0"):
        OutcomePipe(cap=0)
    with OutcomePipe(cap=10) as pipe:
        os.write(pipe.write_fd, b"0123456789")  # exactly the cap: all kept, nothing over
    assert (pipe.data, pipe.overflow) == (b"0123456789", 0)
    with OutcomePipe(cap=10) as pipe:
        os.write(pipe.write_fd, b"01234")
        os.write(pipe.write_fd, b"56789AB")
        os.write(pipe.write_fd, b"CD")
    assert (pipe.data, pipe.overflow) == (b"0123456789", 4)


def test_pipe_close_is_idempotent_and_closes_both_ends() -> None:
    pipe = OutcomePipe()
    write_fd, read_fd = pipe.write_fd, pipe._read_fd
    pipe.close()
    pipe.close()
    assert pipe.write_fd == -1
    for fd in (write_fd, read_fd):
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(fd)
