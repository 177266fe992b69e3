"""Helpers of the container backends' tests (podman and docker)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sandbox_helpers import skip_or_fail_in_ci

from reliabench.files.untrusted import remove_tree
from reliabench.sandbox.base import Limits
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE, ContainerBackend, ContainerEnvironment
from reliabench.sandbox.docker import DockerBackend
from reliabench.sandbox.environment import EnvironmentSpec
from reliabench.sandbox.podman import PodmanBackend

RUNTIMES = ("podman", "docker")
"""The container backends every contract test runs on."""

SLOTS = {"podman": 301, "docker": 302}
"""The worker slots these tests use (locks are host-wide: high numbers stay clear of other suites)."""

SHARED_SLOTS = {"podman": 321, "docker": 322}
"""The slots of environments a test module keeps open while other tests start their own."""

EXTRA_IMAGE = "reliabench/python3-pytest-extra:bookworm"
"""The Dockerfile-built test image of scripts/containers/images.sh."""

REPO = Path(__file__).resolve().parents[1]
EXTRA_DOCKERFILE = REPO / "scripts" / "containers" / "images" / "extra" / "Dockerfile"

_BACKENDS: dict[str, ContainerBackend] = {}


def container_backend_or_skip(name: str, **kwargs: Any) -> ContainerBackend:
    """The named container backend with the test image ready, or skip (fail in CI)."""
    cls: type[ContainerBackend] = {"podman": PodmanBackend, "docker": DockerBackend}[name]
    if not kwargs and name in _BACKENDS:
        return _BACKENDS[name]
    backend = cls(**kwargs)
    why = backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    if why is not None:
        skip_or_fail_in_ci(f"{name} backend unavailable here: {why} (set up: scripts/containers/setup.sh)")
    if not kwargs:
        _BACKENDS[name] = backend
    return backend


@contextlib.contextmanager
def workspace_dir() -> Iterator[Path]:
    """A fresh workspace folder (0755 under a 0711 parent), removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="rb-ctest-"))
    os.chmod(parent, 0o711)
    ws = parent / "ws"
    ws.mkdir(mode=0o755)
    try:
        yield ws
    finally:
        remove_tree(parent)


@contextlib.contextmanager
def started(backend: ContainerBackend, ws: Path, spec: EnvironmentSpec | None = None,
            limits: Limits = Limits(), slot: int | None = None, **kwargs: Any) -> Iterator[ContainerEnvironment]:
    """An environment of ``spec`` (default: the test image) on ``ws`` (slot: the runtime's), closed afterwards."""
    prepared = backend.prepare(spec or EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    env = backend.start(prepared, workspace=ws, slot=SLOTS[backend.name] if slot is None else slot, limits=limits,
                        **kwargs)
    try:
        yield env
    finally:
        env.close()


def container_exists(backend: ContainerBackend, ref: str) -> bool:
    """Whether the runtime still knows the container ``ref``."""
    return backend._call(["inspect", "--format", "{{.Id}}", ref]).returncode == 0


def documented_selfcheck(backend: str) -> dict[str, str]:
    """The containment self-check table of docs/threat-model.md for ``podman`` or ``docker``: check -> status."""
    doc = (REPO / "docs" / "threat-model.md").read_text(encoding="utf-8").splitlines()
    header = doc.index("| check | podman | docker | by |")
    column = {"podman": 1, "docker": 2}[backend]
    table: dict[str, str] = {}
    for line in doc[header + 2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0].strip("`")] = {"pass": "passed", "fail": "failed"}[cells[column]]
    return table


class SocketProxy:
    """A Unix socket at ``path`` that forwards every connection to ``upstream`` until :meth:`cut`.

    Put in front of a Docker daemon's socket (``DOCKER_HOST=unix://PATH``), :meth:`cut` is
    what a client sees when the daemon dies: every open connection drops (an attached
    ``docker exec`` mid-stream among them) and new ones are refused. The daemon itself, shared
    with whatever else runs on this host, is left alone.
    """

    def __init__(self, path: Path, upstream: str) -> None:
        import socket
        import threading

        self.path, self.upstream = path, upstream
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        os.chmod(path, 0o600)
        self._listener.listen(128)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        """The ``DOCKER_HOST`` of the proxy."""
        return f"unix://{self.path}"

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(self.upstream)
            except OSError:
                conn.close()
                up.close()
                continue
            with self._lock:
                if self._cut:
                    conn.close()
                    up.close()
                    return
                self._conns += [conn, up]
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: Any, b: Any) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
            b.shutdown(1)  # SHUT_WR: the other side's end of stream
        except OSError:
            return

    def cut(self) -> None:
        """Refuse new connections and drop every open one (idempotent)."""
        import socket

        with self._lock:
            if self._cut:
                return
            self._cut = True
            conns, self._conns = self._conns, []
        self._listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
