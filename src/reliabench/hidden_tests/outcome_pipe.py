"""The outcome channel's transport: a pipe the parent drains itself, into memory, with a cap.

The sandboxed test process gets only the WRITE end of a pipe. Unlike a file, a pipe cannot be
truncated, rewritten or seeked from inside the sandbox: what the plugin wrote stays written,
in order. (Code in the sandbox can still write junk into it, or even open
``/proc/self/fd/N`` to read lines back out; junk fails the MAC check and a stolen line is a
missing outcome, which counts as ``failed`` -- both can only hurt that rollout.)

A thread of the parent reads the read end as data arrives, so a writer never blocks on a full
pipe buffer, and keeps at most ``cap`` bytes; more is read and thrown away (``overflow``
counts it), so a flood costs the host no memory. When the sandboxed run is over the parent
closes its own write end and the thread reads what is still buffered, then stops -- whether
or not some stray process of the run still holds a write end (the sandbox kills them; the
``none`` backend may not), so nothing here waits on the agent's processes.

Usage::

    with OutcomePipe(cap=32 << 20) as pipe:
        backend.run(..., pass_fds=(pipe.write_fd,))
    data, overflow = pipe.data, pipe.overflow
"""

from __future__ import annotations

import os
import select
import threading
import time
from types import TracebackType
from typing import Final

__all__ = ["DEFAULT_CAP", "OutcomePipe"]

DEFAULT_CAP: Final = 32 * 1024 * 1024
"""Bytes of outcome lines kept per run (about 150,000 test lines)."""

_CHUNK: Final = 1 << 16
_POLL_S: Final = 0.05
_FINAL_DRAIN_S: Final = 2.0


class OutcomePipe:
    """A pipe whose read end a background thread drains into a capped buffer.

    Attributes:
        write_fd: The write end, to pass to the sandboxed process (closed on exit).
        data: Everything read, up to ``cap`` bytes (valid after the ``with`` block).
        overflow: Bytes read beyond ``cap`` and discarded.
    """

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap!r}")
        self.cap = cap
        self.overflow = 0
        self._buf = bytearray()
        self._stop = threading.Event()
        self._read_fd, self.write_fd = os.pipe()  # both close-on-exec; pass_fds opens one
        self._thread = threading.Thread(target=self._drain, name="outcome-pipe", daemon=True)
        self._thread.start()

    @property
    def data(self) -> bytes:
        """The bytes kept (at most ``cap``)."""
        return bytes(self._buf)

    def _take(self, chunk: bytes) -> None:
        room = self.cap - len(self._buf)
        if room > 0:
            self._buf += chunk[:room]
        self.overflow += max(0, len(chunk) - max(room, 0))

    def _drain(self) -> None:
        fd = self._read_fd
        deadline: float | None = None
        while True:
            if self._stop.is_set():
                if deadline is None:
                    deadline = time.monotonic() + _FINAL_DRAIN_S
                elif time.monotonic() > deadline:
                    return  # a stray writer that never stops: what it writes now is not kept
            try:
                ready, _, _ = select.select([fd], [], [], _POLL_S)
            except (OSError, ValueError):
                return
            if not ready:
                if self._stop.is_set():
                    return  # the run is over and nothing is buffered
                continue
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                return
            if not chunk:
                return  # every write end is closed
            self._take(chunk)

    def close(self) -> None:
        """Close the write end, read what is buffered, stop the thread, close the read end."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1
        self._stop.set()
        self._thread.join()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1

    def __enter__(self) -> OutcomePipe:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
