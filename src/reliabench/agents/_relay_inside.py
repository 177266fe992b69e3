"""The in-sandbox half of ``network = "endpoint"``: a TCP listener on the sandbox's own loopback.

Run by ``/usr/bin/python3 -I`` inside the sandbox (standard library only, no reliabench
import), as the wrapper of the agent's command::

    python3 -I _relay_inside.py --unix /path/relay.sock --port 8000 -- agent-argv...

It listens on ``127.0.0.1:PORT`` inside the sandbox's network namespace (which has nothing
but loopback), passes every accepted connection byte for byte to the Unix socket of the host
half (:mod:`reliabench.agents.netrelay`), which connects to exactly the configured endpoint,
starts the agent's command, and exits with its status (or dies of the same signal).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

__all__ = ["main", "pump"]


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _serve(conn: socket.socket, unix_path: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(unix_path)
    except OSError:
        conn.close()
        up.close()
        return
    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
    back.start()
    pump(conn, up)
    back.join()
    conn.close()
    up.close()


def _accept(listener: socket.socket, unix_path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_serve, args=(conn, unix_path), daemon=True).start()


def main(argv: list[str]) -> int:
    """Parse ``--unix PATH --port N -- command...``, relay, run the command, return its status."""
    try:
        sep = argv.index("--")
        opts, command = argv[:sep], argv[sep + 1:]
        unix_path = opts[opts.index("--unix") + 1]
        port = int(opts[opts.index("--port") + 1])
    except (ValueError, IndexError):
        print("usage: _relay_inside.py --unix PATH --port N -- command...", file=sys.stderr)
        return 2
    if not command:
        print("_relay_inside.py: no command", file=sys.stderr)
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        print(f"reliabench relay: cannot listen on 127.0.0.1:{port} in the sandbox: {exc}",
              file=sys.stderr)
        return 125
    listener.listen(64)
    threading.Thread(target=_accept, args=(listener, unix_path), daemon=True).start()
    try:
        proc = subprocess.Popen(command, close_fds=False)  # keeps inherited fds (usage file)
    except OSError as exc:
        print(f"reliabench relay: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda num, _frame: proc.send_signal(num))
    rc = proc.wait()
    listener.close()
    if rc < 0:  # die of the same signal, so the harness sees what the agent did
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
        return 128 - rc
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
