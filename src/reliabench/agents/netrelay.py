"""``network = "endpoint"``: a sandboxed agent reaches its model endpoint and nothing else.

Three network levels for ``command`` agents (``docs/threat-model.md`` says what each allows)::

    network = false        no network at all (a new, empty network namespace)
    network = "endpoint"   only the configured endpoint (the default when base_url is set)
    network = true         the host's whole network (weaker: documented as such)

How ``"endpoint"`` works (bubblewrap backend): the agent runs with ``--unshare-net``, so its
network namespace has only loopback. The host half (:class:`EndpointRelay`: one relay process
per rollout, ``_relay_host.py``, with hard caps on connections and descriptors) listens on a
Unix socket in a private (0700) directory; that one socket file is bound read-only into the
sandbox, and the relay serves only the rollout's sandbox uid. The in-sandbox half
(``_relay_inside.py``, run by ``/usr/bin/python3`` as the wrapper of the agent's command)
listens on the sandbox's own ``127.0.0.1``, and passes each connection to the Unix socket;
the host half connects it to the endpoint's host and port -- and only there:

* an endpoint on loopback (``http://127.0.0.1:8000/v1``, ``http://localhost:11434/v1``):
  the in-sandbox listener takes the endpoint's own port, so the agent uses the URL unchanged
  (``direct`` mode);
* any other endpoint (``https://api.openai.com/v1``): the listener is an HTTP proxy on
  ``127.0.0.1:3128`` (``HTTPS_PROXY``/``HTTP_PROXY``/``https_proxy``/``http_proxy`` point at
  it); the host half accepts only ``CONNECT <host>:<port>`` of the endpoint and tunnels it
  (``connect`` mode), so TLS runs end to end between the agent and the endpoint. A plain
  ``http://`` endpoint that is not on loopback cannot be reached this way (a proxy would have
  to rewrite each request): use ``network = true`` for it.

The host half counts connections, upstream connection failures and what it refused
(``RelayStats``), kept on the rollout's ``meta`` as ``network_relay``. What one rollout does to
its relay stays in that rollout: the relay is its own process (its descriptors are not the
harness's), serves at most :data:`MAX_OPEN` connections at once and :data:`MAX_TOTAL` in all
(more are refused, ``over_limit``), and survives running out of descriptors.

Other backends cannot narrow (the namespaces backend's network namespace has no usable
loopback for an unprivileged uid): an agent with ``network = "endpoint"`` there fails as
``infra_error`` (``sandbox``) with a message saying so, and ``reliabench run`` refuses before
it starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reliabench.agents.infra import Endpoint
from reliabench.errors import InvalidArgumentError, SandboxError

__all__ = [
    "HOST_SCRIPT",
    "INSIDE_SCRIPT",
    "MAX_OPEN",
    "MAX_TOTAL",
    "PROXY_PORT",
    "EndpointRelay",
    "RelayStats",
    "relay_mode",
]

INSIDE_SCRIPT = Path(__file__).with_name("_relay_inside.py")
"""The in-sandbox half, bound read-only into the sandbox and run by ``/usr/bin/python3``."""

PROXY_PORT = 3128
"""The in-sandbox proxy port in ``connect`` mode."""

HOST_SCRIPT = Path(__file__).with_name("_relay_host.py")
"""The host half, one process per rollout, run by this interpreter (``python -I -B``)."""

_INSIDE_PYTHON = "/usr/bin/python3"


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
        connections: Connections the agent opened that were served.
        upstream_failures: Of them, how many could not reach the endpoint.
        refused: ``CONNECT`` requests for another host or port, refused.
        last_error: The last upstream (or relay) error, when any.
        over_limit: Connections refused by the per-rollout caps (:data:`MAX_OPEN` at once,
            :data:`MAX_TOTAL` in all) or the relay process's own descriptor limit.
        foreign: Connections from a uid other than the rollout's sandbox uid, refused.
    """

    connections: int
    upstream_failures: int
    refused: int
    last_error: str | None
    over_limit: int = 0
    foreign: int = 0


MAX_OPEN = 32
"""Connections one rollout's relay serves at once (more are accepted and closed at once)."""
MAX_TOTAL = 20_000
"""Connections one rollout's relay serves in all."""


class EndpointRelay:
    """The host half: a Unix socket that leads to one endpoint (see the module docstring).

    Use as a context manager around one sandboxed run; :meth:`wrap` turns the agent's
    command into the in-sandbox relay's, :attr:`readonly` are the paths to bind and
    :meth:`env` the variables to add. Entering starts ONE relay process for this rollout
    (``_relay_host.py``): its descriptors, threads and memory are its own, capped
    (``max_open`` connections at once, ``max_total`` in all, ``2 * max_open + 16``
    descriptors), so nothing the agent does through it costs the harness or another rollout
    a descriptor. The socket is in a 0700 directory of this process's user: only the
    sandbox it is bound into reaches it, and the relay serves only ``peer_uid``.

    Args:
        endpoint: The only place the agent may connect to.
        mode: ``direct`` or ``connect`` (default: :func:`relay_mode`).
        connect_timeout_s: Per upstream connection attempt.
        peer_uid: The only uid served (the rollout's sandbox uid; default: this process's).
        max_open: Connections served at once.
        max_total: Connections served in all.
        idle_timeout_s: An open connection with no byte either way for this long is closed.
        handshake_timeout_s: A ``CONNECT`` request must arrive within this (``connect`` mode).
    """

    def __init__(self, endpoint: Endpoint, *, mode: str | None = None,
                 connect_timeout_s: float = 10.0, peer_uid: int | None = None,
                 max_open: int = MAX_OPEN, max_total: int = MAX_TOTAL,
                 idle_timeout_s: float = 600.0, handshake_timeout_s: float = 10.0) -> None:
        self.endpoint = endpoint
        self.mode = mode or relay_mode(endpoint)
        if self.mode not in ("direct", "connect"):
            raise SandboxError(f"relay mode must be 'direct' or 'connect', got {self.mode!r}")
        for name, value in (("max_open", max_open), ("max_total", max_total)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"EndpointRelay: {name} must be an integer >= 1, "
                                           f"got {value!r}")
        self.connect_timeout_s = connect_timeout_s
        self.peer_uid = os.getuid() if peer_uid is None else peer_uid
        self.max_open = max_open
        self.max_total = max_total
        self.max_fds = 2 * max_open + 16
        self.idle_timeout_s = idle_timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self._dir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._last = RelayStats(0, 0, 0, None)

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
        """Counters so far (the last ones known, if the relay process is gone)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            return self._last
        try:
            proc.stdin.write(b"stats\n")
            proc.stdin.flush()
            line = _read_line(proc.stdout.fileno(), _CONTROL_TIMEOUT_S)
            doc = json.loads(line)
            self._last = RelayStats(
                connections=int(doc["connections"]), upstream_failures=int(doc["upstream_failures"]),
                refused=int(doc["refused"]), last_error=doc.get("last_error"),
                over_limit=int(doc["over_limit"]), foreign=int(doc["foreign"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            last = self._last
            self._last = RelayStats(last.connections, last.upstream_failures, last.refused,
                                    f"the relay process did not answer ({exc})",
                                    last.over_limit, last.foreign)
        return self._last

    def __enter__(self) -> EndpointRelay:
        self._dir = tempfile.mkdtemp(prefix="rb-relay-")  # 0700: no other uid reaches the socket
        argv = [sys.executable, "-I", "-B", str(HOST_SCRIPT), "--unix", str(self.socket_path),
                "--host", self.endpoint.host, "--port", str(self.endpoint.port),
                "--mode", self.mode, "--max-open", str(self.max_open),
                "--max-total", str(self.max_total), "--max-fds", str(self.max_fds),
                "--peer-uid", str(self.peer_uid),
                "--connect-timeout", repr(float(self.connect_timeout_s)),
                "--handshake-timeout", repr(float(self.handshake_timeout_s)),
                "--idle-timeout", repr(float(self.idle_timeout_s))]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, close_fds=True,
                                          start_new_session=True, cwd="/")
            assert self._proc.stdout is not None
            ready = _read_line(self._proc.stdout.fileno(), _START_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            self.__exit__()
            raise SandboxError(f"the endpoint relay could not start: {exc}") from None
        if ready != b"ready":
            self.__exit__()
            raise SandboxError(f"the endpoint relay could not start (it said {ready[:200]!r})")
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()  # its end of input: it exits at once
            try:
                proc.wait(_CONTROL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


_START_TIMEOUT_S = 15.0
_CONTROL_TIMEOUT_S = 5.0


def _read_line(fd: int, timeout_s: float) -> bytes:
    """One line from the pipe ``fd`` (without the newline), within ``timeout_s``.

    Raises:
        ValueError: no whole line in time, or the pipe closed first.
    """
    deadline = time.monotonic() + timeout_s
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise ValueError(f"no answer within {timeout_s:g} s")
        chunk = os.read(fd, 1)  # byte by byte: never read past the line (the next answer)
        if not chunk:
            raise ValueError("the relay process exited")
        data += chunk
        if len(data) > 65536:
            raise ValueError("an answer longer than 64 KiB")
    return data[:-1]
