"""The outcome channel's socket (reliabench.hidden_tests.outcome_socket): one connection, kept in order, capped.

The parser of what arrives through it is tested in tests/hidden_tests/test_channel.py; the
channel end to end, in every sandbox, in tests/hidden_tests/test_fresh.py and
tests/test_hostile_rollouts.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reliabench.hidden_tests.outcome_socket import OutcomeSocket

KEY = b"k" * 64

CLIENT = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
key = b""
while not key.endswith(b"\\n"):
    key += s.recv(100)
print(key.strip().decode(), flush=True)
"""


def _writer(path: Path, body: str, *, wait: bool = True) -> Any:
    argv = [sys.executable, "-c", CLIENT + body, str(path)]
    if not wait:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)


@pytest.fixture
def folder(base: Path) -> Path:
    chan = base / "channel"
    chan.mkdir()
    return chan


def test_the_one_connection_gets_the_key_and_everything_it_wrote_is_kept_in_order(folder: Path) -> None:
    with OutcomeSocket(folder, KEY) as channel:
        assert (folder / channel.name).exists()
        proc = _writer(folder / channel.name, "for i in range(20000): s.sendall(b'%d\\n' % i)")
    assert proc.stdout.strip() == KEY.decode()  # the key, as the first and only line sent
    assert channel.connected
    assert channel.data.split() == [b"%d" % i for i in range(20000)]
    assert channel.overflow == 0
    assert os.listdir(folder) == []  # the socket file is gone


def test_a_second_connection_is_refused_and_never_sees_the_key(folder: Path) -> None:
    with OutcomeSocket(folder, KEY) as channel:
        path = folder / channel.name
        first = _writer(path, "import time; s.sendall(b'first\\n'); time.sleep(1)", wait=False)
        deadline = time.monotonic() + 30
        while not channel.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        second = _writer(path, "s.sendall(b'second\\n')")
        assert first.wait(30) == 0
    assert second.returncode != 0
    assert "ConnectionRefusedError" in second.stderr or "FileNotFoundError" in second.stderr
    assert KEY.decode() not in second.stdout
    assert channel.data == b"first\n"


def test_a_socket_planted_in_its_place_after_the_first_connection_gets_nothing(folder: Path) -> None:
    """The tested code may bind its own socket at the channel's name: nobody connects to it any more."""
    with OutcomeSocket(folder, KEY) as channel:
        path = folder / channel.name
        proc = _writer(path, f"""
import os, socket
os.unlink({str(path)!r}) if os.path.exists({str(path)!r}) else None
fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
fake.bind({str(path)!r})
fake.listen(1)
s.sendall(b'line\\n')
""")
        assert proc.returncode == 0, proc.stderr
    assert channel.data == b"line\n"


def test_the_channel_cannot_be_truncated_or_rewritten_by_the_writer(folder: Path) -> None:
    with OutcomeSocket(folder, KEY) as channel:
        proc = _writer(folder / channel.name, """
s.sendall(b'start\\n')
errs = []
for f in (lambda: os.ftruncate(s.fileno(), 0), lambda: os.lseek(s.fileno(), 0, 0)):
    try:
        f()
    except OSError as e:
        errs.append(e.errno)
print(errs)
""")
    assert channel.data == b"start\n"  # the line written before the attack is still there
    assert proc.stdout.splitlines()[1] != "[]"  # both operations failed


def test_reading_the_connection_gives_the_writer_nothing_more(folder: Path) -> None:
    with OutcomeSocket(folder, KEY) as channel:
        proc = _writer(folder / channel.name, """
s.settimeout(1.0)
try:
    print(repr(s.recv(100)))
except OSError as e:
    print("nothing", type(e).__name__)
""")
    assert proc.stdout.splitlines()[1].startswith("nothing"), proc.stdout
    assert channel.data == b""


def test_a_flood_is_capped_without_blocking_the_writer(folder: Path) -> None:
    with OutcomeSocket(folder, KEY, cap=1000) as channel:
        proc = _writer(folder / channel.name, "for _ in range(300): s.sendall(b'x' * 65536)")
    assert proc.returncode == 0
    assert len(channel.data) == 1000
    assert channel.overflow == 300 * 65536 - 1000


def test_a_flood_of_connections_is_refused(folder: Path) -> None:
    with OutcomeSocket(folder, KEY) as channel:
        path = str(folder / channel.name)
        keeper = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        keeper.connect(path)
        refused = 0
        for _ in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
            except OSError:
                refused += 1
            finally:
                s.close()
        keeper.close()
    assert refused >= 190  # a few may race the one accept into the backlog: they get nothing


def test_close_does_not_wait_for_a_writer_that_never_stops(folder: Path) -> None:
    channel = OutcomeSocket(folder, KEY, cap=100)
    proc = _writer(folder / channel.name, "while True: s.sendall(b'y' * 4096)", wait=False)
    try:
        deadline = time.monotonic() + 30
        while not channel.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        done = threading.Event()

        def close() -> None:
            channel.close()
            done.set()

        threading.Thread(target=close, daemon=True).start()
        assert done.wait(30), "close() waited for a writer that never stops"
    finally:
        proc.kill()
        proc.wait()
    assert len(channel.data) == 100


def test_no_connection_and_a_long_folder_path_and_bad_arguments(base: Path) -> None:
    deep = base / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    with OutcomeSocket(deep, KEY) as channel:  # past sun_path's 108 bytes: bound through /proc/self/fd
        assert (deep / channel.name).exists()
    assert not channel.connected and channel.data == b""
    assert os.listdir(deep) == []
    with pytest.raises(ValueError, match="cap must be >= 1, got 0"):
        OutcomeSocket(deep, KEY, cap=0)
    with pytest.raises(ValueError, match="key"):
        OutcomeSocket(deep, b"a\nb")


def test_the_cap_is_exact(folder: Path) -> None:
    with OutcomeSocket(folder, KEY, cap=10) as channel:
        _writer(folder / channel.name, "s.sendall(b'0123456789')")
    assert (channel.data, channel.overflow) == (b"0123456789", 0)
    with OutcomeSocket(folder, KEY, cap=10) as channel:
        _writer(folder / channel.name, "s.sendall(b'01234'); s.sendall(b'56789AB'); s.sendall(b'CD')")
    assert (channel.data, channel.overflow) == (b"0123456789", 4)
