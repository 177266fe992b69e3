"""The host half of ``network = "endpoint"``: ONE relay process per rollout, with hard caps.

Started and stopped by :class:`reliabench.agents.netrelay.EndpointRelay`, run by the harness's
own interpreter as a script (``python -I -B _relay_host.py``, standard library only, so it
starts in ~50 ms)::

    _relay_host.py --unix PATH --host H --port P --mode direct|connect --max-open N
                   --max-total M --max-fds F --peer-uid U --connect-timeout S
                   --handshake-timeout S --idle-timeout S

It listens on the Unix socket ``PATH`` (in a 0700 directory of the harness's user) and
connects each connection it accepts to ``H:P`` and nowhere else (``connect`` mode: only after
a ``CONNECT H:P`` request, anything else gets 403).

Why a process of its own: every descriptor, thread and byte of memory a connection costs is
this process's, bounded by its own ``RLIMIT_NOFILE`` (``F``), so whatever the agent does to its
relay, no other rollout -- and not the harness -- loses a descriptor. Inside it:

* at most ``N`` connections are served at once and ``M`` in all; one past a cap is accepted
  and closed at once (``connect`` mode: ``503``), counted in ``over_limit``;
* a peer whose uid is not ``U`` (the rollout's sandbox uid) is closed unserved (``foreign``);
* ``EMFILE``/``ENFILE``/``ENOBUFS``/``ENOMEM`` in ``accept`` back off (10 ms doubling to 0.5 s)
  and the loop goes on serving; an upstream connection that fails for such a local reason is
  ``over_limit``, not an endpoint failure (the endpoint was not asked);
* a ``CONNECT`` head must arrive within ``--handshake-timeout`` seconds and be at most 8 KiB;
  an open tunnel with no byte either way for ``--idle-timeout`` seconds is closed; bodies are
  streamed in 64 KiB chunks (never buffered whole).

Control, over its standard streams: it writes ``ready`` once it listens; each ``stats`` line it
reads is answered with one JSON line of counters; the end of its standard input (the harness
closed it, or died) ends it at once, and it removes its socket and the socket's directory.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import resource
import socket
import struct
import sys
import threading
import time
from typing import Any

if __package__:  # imported (tests, type checks) as reliabench.agents._relay_host
    from reliabench.agents._relay_inside import pump
else:  # pragma: no cover - run as a script: the sibling file, after the standard library
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    from _relay_inside import pump  # type: ignore[import-not-found,no-redef]

__all__ = ["COUNTERS", "main"]

COUNTERS = ("connections", "upstream_failures", "refused", "over_limit", "foreign",
            "accept_errors")
"""The counters a ``stats`` line answers with (plus ``last_error``)."""

_LOCAL = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_TRANSIENT_ACCEPT = _LOCAL | {errno.ECONNABORTED, errno.EINTR, errno.EPROTO}
_MAX_HEAD = 8192


class _Relay:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.lock = threading.Lock()
        self.open = 0
        self.total = 0
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.last_error: str | None = None

    def count(self, key: str, error: str | None = None) -> None:
        with self.lock:
            self.counts[key] += 1
            if error is not None:
                self.last_error = error

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {**self.counts, "open": self.open, "last_error": self.last_error}

    # -- accepting ------------------------------------------------------------------------

    def accept_forever(self, listener: socket.socket) -> None:
        delay = 0.01
        while True:
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                if exc.errno in _TRANSIENT_ACCEPT:  # out of descriptors: wait, keep serving
                    self.count("accept_errors", f"accept: {exc.strerror or exc}")
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                return  # the listener is gone
            delay = 0.01
            self._admit(conn)

    def _admit(self, conn: socket.socket) -> None:
        if not self._peer_allowed(conn):
            self.count("foreign")
            conn.close()
            return
        with self.lock:
            full = self.open >= self.opts.max_open or self.total >= self.opts.max_total
            if not full:
                self.open += 1
                self.total += 1
                self.counts["connections"] += 1
            else:
                self.counts["over_limit"] += 1
        if full:
            self._refuse(conn, b"503 Service Unavailable")
            return
        try:
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        except RuntimeError:  # no thread to be had: as full
            self._release()
            self.count("over_limit")
            self._refuse(conn, b"503 Service Unavailable")

    def _peer_allowed(self, conn: socket.socket) -> bool:
        if self.opts.peer_uid < 0:
            return True
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return False
        _pid, uid, _gid = struct.unpack("3i", creds)
        return bool(uid == self.opts.peer_uid)

    def _refuse(self, conn: socket.socket, status: bytes) -> None:
        if self.opts.mode == "connect":
            with contextlib.suppress(OSError):
                conn.setblocking(False)
                conn.send(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
        conn.close()

    def _release(self) -> None:
        with self.lock:
            self.open -= 1

    # -- serving one connection -----------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                early = b""
                if self.opts.mode == "connect":
                    conn.settimeout(self.opts.handshake_timeout)
                    handshake = self._handshake(conn)
                    if handshake is None:
                        return
                    early = handshake
                up = self._upstream()
                if up is None:
                    self._refuse(conn, b"502 Bad Gateway")
                    return
                with up:
                    for s in (conn, up):
                        s.settimeout(self.opts.idle_timeout)
                    if self.opts.mode == "connect":
                        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    if early:
                        up.sendall(early)
                    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
                    back.start()
                    pump(conn, up)
                    back.join()
        except OSError:
            pass  # the agent or the endpoint went away: nothing to count
        finally:
            self._release()

    def _upstream(self) -> socket.socket | None:
        host, port = self.opts.host, self.opts.port
        try:
            return socket.create_connection((host, port), timeout=self.opts.connect_timeout)
        except OSError as exc:
            error = f"{host}:{port}: {exc.strerror or exc}"
            if exc.errno in _LOCAL:  # the relay's own limit, not the endpoint's failure
                self.count("over_limit", error)
            else:
                self.count("upstream_failures", error)
            return None

    def _handshake(self, conn: socket.socket) -> bytes | None:
        """Read a ``CONNECT host:port`` request naming the endpoint (None: refused or closed)."""
        head = b""
        deadline = time.monotonic() + self.opts.handshake_timeout
        while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
            if time.monotonic() > deadline:  # a byte every few seconds: slow-loris
                return None
            chunk = conn.recv(1024)
            if not chunk:
                return None
            head += chunk
        request, _, rest = head.partition(b"\r\n\r\n")
        line = request.split(b"\r\n", 1)[0].decode("latin-1", "replace").split()
        want = f"{self.opts.host}:{self.opts.port}".lower()
        if len(line) == 3 and line[0].upper() == "CONNECT" and line[1].lower() == want:
            return rest
        self.count("refused")
        self._refuse(conn, b"403 Forbidden")
        return None


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="_relay_host.py")
    p.add_argument("--unix", required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", choices=("direct", "connect"), required=True)
    p.add_argument("--max-open", type=int, required=True)
    p.add_argument("--max-total", type=int, required=True)
    p.add_argument("--max-fds", type=int, required=True)
    p.add_argument("--peer-uid", type=int, default=-1)
    p.add_argument("--connect-timeout", type=float, default=10.0)
    p.add_argument("--handshake-timeout", type=float, default=10.0)
    p.add_argument("--idle-timeout", type=float, default=600.0)
    return p.parse_args(argv)


def _limit_descriptors(wanted: int) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (cap, cap))


def main(argv: list[str]) -> int:
    """Relay until standard input ends (see the module docstring); return the exit status."""
    opts = _parse(argv)
    _limit_descriptors(opts.max_fds)
    relay = _Relay(opts)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(opts.unix)
    os.chmod(opts.unix, 0o666)  # the sandbox's uid connects; the directory keeps others out
    listener.listen(64)
    threading.Thread(target=relay.accept_forever, args=(listener,), daemon=True).start()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        if line.strip() == "stats":
            out.write(json.dumps(relay.stats()) + "\n")
            out.flush()
    listener.close()
    with contextlib.suppress(OSError):  # also when the harness died and cannot clean up
        os.unlink(opts.unix)
        os.rmdir(os.path.dirname(opts.unix))
    return 0


if __name__ == "__main__":  # pragma: no cover - run by EndpointRelay
    try:
        code = main(sys.argv[1:])
    except BrokenPipeError:  # the harness went away
        code = 0
    sys.stdout.flush()
    os._exit(code)  # daemon threads still pumping: do not wait for them
