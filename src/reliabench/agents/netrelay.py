"""``network = "endpoint"``: a sandboxed agent reaches its model endpoint and nothing else.

Three network levels for ``command`` agents (``docs/threat-model.md`` says what each allows)::

    network = false        no network at all (a new, empty network namespace)
    network = "endpoint"   only the configured endpoint (the default when base_url is set)
    network = true         the host's whole network (weaker: documented as such)

How ``"endpoint"`` works (bubblewrap backend): the agent runs with ``--unshare-net``, so its
network namespace has only loopback. The host half (:class:`EndpointRelay`, threads in the
reliabench process) listens on a Unix socket in a private directory; that one socket file is
bound read-only into the sandbox. The in-sandbox half (``_relay_inside.py``, run by
``/usr/bin/python3`` as the wrapper of the agent's command) listens on the sandbox's own
``127.0.0.1``, and passes each connection to the Unix socket; the host half connects it to
the endpoint's host and port -- and only there:

* an endpoint on loopback (``http://127.0.0.1:8000/v1``, ``http://localhost:11434/v1``):
  the in-sandbox listener takes the endpoint's own port, so the agent uses the URL unchanged
  (``direct`` mode);
* any other endpoint (``https://api.openai.com/v1``): the listener is an HTTP proxy on
  ``127.0.0.1:3128`` (``HTTPS_PROXY``/``HTTP_PROXY``/``https_proxy``/``http_proxy`` point at
  it); the host half accepts only ``CONNECT <host>:<port>`` of the endpoint and tunnels it
  (``connect`` mode), so TLS runs end to end between the agent and the endpoint. A plain
  ``http://`` endpoint that is not on loopback cannot be reached this way (a proxy would have
  to rewrite each request): use ``network = true`` for it.

The host half counts connections and upstream connection failures (``RelayStats``), kept on
the rollout's ``meta`` as ``network_relay``. Other backends cannot narrow (the namespaces
backend's network namespace has no usable loopback for an unprivileged uid): an agent with
``network = "endpoint"`` there fails as ``infra_error`` (``sandbox``) with a message saying so,
and ``reliabench run`` refuses before it starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reliabench.agents._relay_inside import pump
from reliabench.agents.infra import Endpoint
from reliabench.errors import SandboxError

__all__ = [
    "INSIDE_SCRIPT",
    "PROXY_PORT",
    "EndpointRelay",
    "RelayStats",
    "relay_mode",
]

INSIDE_SCRIPT = Path(__file__).with_name("_relay_inside.py")
"""The in-sandbox half, bound read-only into the sandbox and run by ``/usr/bin/python3``."""

PROXY_PORT = 3128
"""The in-sandbox proxy port in ``connect`` mode."""

_INSIDE_PYTHON = "/usr/bin/python3"
_MAX_HEAD = 8192


def relay_mode(endpoint: Endpoint) -> str:
    """``direct`` (loopback endpoint) or ``connect`` (an https endpoint elsewhere).

    Raises:
        SandboxError: a plain-http endpoint that is not on loopback, or a loopback port
            below 1024 (an unprivileged uid cannot listen there inside the sandbox).
    """
    if endpoint.is_loopback:
        if endpoint.port < 1024:
            raise SandboxError(f'network = "endpoint": the loopback port {endpoint.port} of '
                               f"{endpoint.base_url} is below 1024; serve the model on a port "
                               ">= 1024 or use network = true")
        return "direct"
    if endpoint.scheme != "https":
        raise SandboxError(f'network = "endpoint" reaches a plain-http endpoint only on loopback, '
                           f"not {endpoint.base_url}; use https, a loopback address, or "
                           "network = true")
    return "connect"


@dataclass(frozen=True, slots=True)
class RelayStats:
    """What went through the relay during one rollout.

    Attributes:
        connections: Connections the agent opened.
        upstream_failures: Of them, how many could not reach the endpoint.
        refused: ``CONNECT`` requests for another host or port, refused.
        last_error: The last upstream error, when any.
    """

    connections: int
    upstream_failures: int
    refused: int
    last_error: str | None


class EndpointRelay:
    """The host half: a Unix socket that leads to one endpoint (see the module docstring).

    Use as a context manager around one sandboxed run; :meth:`wrap` turns the agent's
    command into the in-sandbox relay's, :attr:`readonly` are the paths to bind and
    :meth:`env` the variables to add.

    Args:
        endpoint: The only place the agent may connect to.
        mode: ``direct`` or ``connect`` (default: :func:`relay_mode`).
        connect_timeout_s: Per upstream connection attempt.
    """

    def __init__(self, endpoint: Endpoint, *, mode: str | None = None,
                 connect_timeout_s: float = 10.0) -> None:
        self.endpoint = endpoint
        self.mode = mode or relay_mode(endpoint)
        if self.mode not in ("direct", "connect"):
            raise SandboxError(f"relay mode must be 'direct' or 'connect', got {self.mode!r}")
        self.connect_timeout_s = connect_timeout_s
        self._dir: str | None = None
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self._connections = 0
        self._failures = 0
        self._refused = 0
        self._last_error: str | None = None

    @property
    def socket_path(self) -> Path:
        """The Unix socket (exists while the relay runs)."""
        if self._dir is None:
            raise SandboxError("the relay is not running")
        return Path(self._dir) / "relay.sock"

    @property
    def port(self) -> int:
        """The port the in-sandbox half listens on."""
        return self.endpoint.port if self.mode == "direct" else PROXY_PORT

    @property
    def readonly(self) -> tuple[Path, ...]:
        """Paths the sandbox must see: the socket and the in-sandbox script."""
        return (self.socket_path, INSIDE_SCRIPT)

    def env(self) -> dict[str, str]:
        """Variables for the agent (the proxy ones in ``connect`` mode)."""
        if self.mode == "direct":
            return {}
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy,
                "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command that runs the in-sandbox half, which then runs ``argv``."""
        return [_INSIDE_PYTHON, "-I", str(INSIDE_SCRIPT), "--unix", str(self.socket_path),
                "--port", str(self.port), "--", *argv]

    def stats(self) -> RelayStats:
        """Counters so far."""
        with self._lock:
            return RelayStats(self._connections, self._failures, self._refused, self._last_error)

    def __enter__(self) -> EndpointRelay:
        self._dir = tempfile.mkdtemp(prefix="rb-relay-")
        os.chmod(self._dir, 0o711)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o666)  # the sandbox's slot uid connects to it
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, name="rb-relay", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- the relay itself ---------------------------------------------------------------------

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self._connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _fail(self, error: str) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = error

    def _upstream(self) -> socket.socket | None:
        host, port = self.endpoint.host, self.endpoint.port
        try:
            return socket.create_connection((host, port), timeout=self.connect_timeout_s)
        except OSError as exc:
            self._fail(f"{host}:{port}: {exc.strerror or exc}")
            return None

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            early = b""
            if self.mode == "connect":
                handshake = self._handshake(conn)
                if handshake is None:
                    return
                early = handshake
            up = self._upstream()
            if up is None:
                if self.mode == "connect":
                    with contextlib.suppress(OSError):
                        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            with up:
                up.settimeout(None)
                if self.mode == "connect":
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if early:
                    up.sendall(early)
                back = threading.Thread(target=pump, args=(up, conn), daemon=True)
                back.start()
                pump(conn, up)
                back.join()

    def _handshake(self, conn: socket.socket) -> bytes | None:
        """Read a ``CONNECT host:port`` request naming the endpoint.

        Returns:
            The bytes sent after the request head (usually none), or None when the request
            was refused (403) or the connection closed.
        """
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
            chunk = conn.recv(1024)
            if not chunk:
                return None
            head += chunk
        request, _, rest = head.partition(b"\r\n\r\n")
        line = request.split(b"\r\n", 1)[0].decode("latin-1", "replace").split()
        want = f"{self.endpoint.host}:{self.endpoint.port}".lower()
        if len(line) == 3 and line[0].upper() == "CONNECT" and line[1].lower() == want:
            return rest
        with self._lock:
            self._refused += 1
        with contextlib.suppress(OSError):
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        return None
