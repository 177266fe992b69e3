"""The outcome channel of a fresh test process: a Unix socket in the environment's channel folder.

Any backend can show a folder (a container bind-mounts it), only this host can pass a file
descriptor: so the harness listens on a socket FILE in the channel folder of the environment
the hidden tests run in (:attr:`~reliabench.sandbox.environment.Environment.channel_host`
on the host, seen inside at ``channel_dir``), named with a fresh random token, and:

* accepts exactly ONE connection -- the outcome plugin's, made when the plugin is imported,
  before any test module or anything of the workspace is (nothing of the agent's runs in a
  fresh environment before it; in an environment handed over from the agent phase every
  process of the agent was stopped before the socket existed);
* sends that connection the per-run key, a line, and nothing else ever;
* closes the listening socket and removes its file at once: a second connection -- from the
  tested code, from a process the agent left, from anything -- is refused (there is nothing
  left to connect to);
* reads what the plugin writes as it arrives, keeping at most ``cap`` bytes (more is read
  and thrown away, ``overflow`` counts it: a flood costs the host no memory), and stops when
  the run is over, after reading what is still buffered for at most 2 s, whether or not a
  stray process of the run still holds the connection.

What a stream socket gives, as the pipe it replaces did: what the plugin wrote stays written,
in order -- the other end cannot truncate, seek or rewrite it. Code under test, which runs in
the plugin's process, can write junk into the connection or shut it down: junk fails the MAC
check and a missing line is a missing outcome, which counts as ``failed`` -- both only hurt
that rollout. Reading from the connection gives it nothing: the key was read by the plugin
before any test module was imported, and the harness sends nothing after it.

Usage::

    with OutcomeSocket(env.channel_host, key) as channel:
        env.exec(..., env={"RELIABENCH_OUTCOME_SOCKET": f"{env.channel_dir}/{channel.name}", ...})
    data, overflow = channel.data, channel.overflow
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["DEFAULT_CAP", "OutcomeSocket"]

DEFAULT_CAP: Final = 32 * 1024 * 1024
"""Bytes of outcome lines kept per run (about 150,000 test lines)."""

_CHUNK: Final = 1 << 16
_POLL_S: Final = 0.05
_FINAL_DRAIN_S: Final = 2.0
_SEND_TIMEOUT_S: Final = 5.0
_MAX_UNIX_PATH: Final = 100  # sun_path holds 108 bytes; longer paths go through /proc/self/fd


class OutcomeSocket:
    """One run's outcome channel: listen, accept one connection, send the key, drain it capped.

    Args:
        channel_host: The environment's channel folder on the host.
        key: The per-run secret, sent to the one connection (ASCII, no newline).
        cap: Bytes kept.

    Attributes:
        name: The socket file's name in the channel folder (random).
        data: Everything read, up to ``cap`` bytes (final after :meth:`close`).
        overflow: Bytes read beyond ``cap`` and discarded.
        connected: Whether a connection was accepted (the plugin's, if anything's).

    Raises:
        OSError: The socket could not be made (the harness's failure).
    """

    def __init__(self, channel_host: Path, key: bytes, *, cap: int = DEFAULT_CAP) -> None:
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap!r}")
        if b"\n" in key or not key:
            raise ValueError("key must be a non-empty line")
        self.cap = cap
        self.overflow = 0
        self.connected = False
        self.name = f"outcome-{secrets.token_hex(8)}.sock"
        self._key = key
        self._buf = bytearray()
        self._stop = threading.Event()
        self._path = Path(channel_host) / self.name
        self._listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn: socket.socket | None = None
        try:
            self._bind(self._listener, self._path)
            os.chmod(self._path, 0o666)  # the test process runs as another uid (its folder is its own)
            self._listener.listen(1)
        except BaseException:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            raise
        self._thread = threading.Thread(target=self._serve, name="outcome-socket", daemon=True)
        self._thread.start()

    @staticmethod
    def _bind(sock: socket.socket, path: Path) -> None:
        if len(os.fsencode(str(path))) <= _MAX_UNIX_PATH:
            sock.bind(str(path))
            return
        dirfd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            sock.bind(f"/proc/self/fd/{dirfd}/{path.name}")
        finally:
            os.close(dirfd)

    @property
    def data(self) -> bytes:
        """The bytes kept (at most ``cap``)."""
        return bytes(self._buf)

    def _take(self, chunk: bytes) -> None:
        room = self.cap - len(self._buf)
        if room > 0:
            self._buf += chunk[:room]
        self.overflow += max(0, len(chunk) - max(room, 0))

    def _stop_listening(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with contextlib.suppress(OSError):
            os.unlink(self._path)  # never followed: unlink removes a link, not its target

    def _accept(self) -> socket.socket | None:
        """The one connection, or None when the run ended without one."""
        listener = self._listener
        if listener is None:  # pragma: no cover - only the thread closes it before close()
            return None
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([listener], [], [], _POLL_S)
                if ready:
                    conn, _ = listener.accept()
                    return conn
            return None
        except OSError:
            return None
        finally:
            self._stop_listening()  # no second connection, whatever happened

    def _send_key(self, conn: socket.socket) -> bool:
        conn.settimeout(_SEND_TIMEOUT_S)
        try:
            conn.sendall(self._key + b"\n")
        except OSError:
            return False
        conn.setblocking(False)
        return True

    def _serve(self) -> None:
        conn = self._accept()
        if conn is None:
            return
        self._conn = conn
        self.connected = True
        if not self._send_key(conn):
            return
        deadline: float | None = None
        while True:
            if self._stop.is_set():
                if deadline is None:
                    deadline = time.monotonic() + _FINAL_DRAIN_S
                elif time.monotonic() > deadline:
                    return  # a stray writer that never stops: what it writes now is not kept
            try:
                ready, _, _ = select.select([conn], [], [], _POLL_S)
            except (OSError, ValueError):
                return
            if not ready:
                if self._stop.is_set():
                    return  # the run is over and nothing is buffered
                continue
            try:
                chunk = conn.recv(_CHUNK)
            except BlockingIOError:  # pragma: no cover - woken without data
                continue
            except OSError:
                return
            if not chunk:
                return  # the plugin's end is closed
            self._take(chunk)

    def close(self) -> None:
        """Stop accepting, read what is buffered, stop the thread, close everything."""
        self._stop.set()
        self._thread.join()
        self._stop_listening()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> OutcomeSocket:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
