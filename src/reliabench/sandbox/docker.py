"""The ``docker`` backend: a Docker daemon through the ``docker`` command line.

The daemon is found, in order, at the backend's ``host`` argument, ``$DOCKER_HOST``,
reliabench's own daemon (:data:`RELIABENCH_DOCKER_SOCKET`, started by
``scripts/containers/dockerd.sh`` with its own data root, no bridge and no iptables rules),
and Docker's default socket. The client runs with an empty private ``DOCKER_CONFIG``, so a
user's ``~/.docker/config.json`` (proxies it would inject into containers, credential helpers,
CLI plugins) plays no part. Builds use the classic builder (``DOCKER_BUILDKIT=0``: no buildx
plugin needed) with ``--network none`` and ``--pull=false``.

Everything else is :class:`~reliabench.sandbox.containers.ContainerBackend`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from reliabench.sandbox.containers import ContainerBackend
from reliabench.sandbox.images import output_tail

__all__ = ["RELIABENCH_DOCKER_SOCKET", "DockerBackend"]

RELIABENCH_DOCKER_SOCKET: Final = os.path.join(
    os.environ.get("RELIABENCH_DOCKER_RUN", "/run/reliabench-docker"), "docker.sock")
"""The socket of the daemon ``scripts/containers/dockerd.sh start`` runs (``$RELIABENCH_DOCKER_RUN``)."""

_CONNECTION_LOST: Final = 255
_DAEMON_ERRORS: Final = ("Error response from daemon", "Cannot connect to the Docker daemon",
                         "error during connect")


class DockerBackend(ContainerBackend):
    """Rollout environments in Docker containers (see :mod:`reliabench.sandbox.containers`).

    Args:
        host: The daemon's address (``unix:///path``); None: found as the module docstring says.
        **kwargs: As :class:`~reliabench.sandbox.containers.ContainerBackend`.
    """

    name: str = "docker"
    runtime: str = "docker"
    install_fix: str = ("apt-get install docker.io catatonit (or scripts/containers/setup.sh), "
                                  "then scripts/containers/dockerd.sh start")

    def __init__(self, *, host: str | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.host = host

    def docker_host(self) -> str:
        """The address of the daemon this backend talks to."""
        if self.host:
            return self.host
        if os.environ.get("DOCKER_HOST"):
            return os.environ["DOCKER_HOST"]
        if os.path.exists(RELIABENCH_DOCKER_SOCKET):
            return f"unix://{RELIABENCH_DOCKER_SOCKET}"
        return "unix:///var/run/docker.sock"

    def _client_env(self) -> dict[str, str]:
        env = super()._client_env()
        config = self._private_dir() / "docker-config"
        config.mkdir(mode=0o700, exist_ok=True)
        env.update({"DOCKER_HOST": self.docker_host(), "DOCKER_CONFIG": str(config), "HOME": str(config)})
        return env

    def _not_ready(self) -> str | None:
        result = self._call(["version", "--format", "{{.Server.Version}}"], timeout=30)
        if result.returncode != 0 or not result.stdout.strip():
            return (f"the Docker daemon does not answer at {self.docker_host()}: start reliabench's with "
                    "scripts/containers/dockerd.sh start, or set DOCKER_HOST to a running daemon "
                    f"({output_tail(result.stderr, 1)})")
        return None

    def _build_args(self, *, dockerfile: Path, context: Path, tag: str,
                    labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        args = ["build", "--network", "none", "--pull=false", "--force-rm", "-f", str(dockerfile), "-t", tag]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        return [*args, str(context)], {"DOCKER_BUILDKIT": "0"}

    def _runtime_failed(self, returncode: int, stderr: str) -> bool:
        # a client whose connection to the daemon broke mid-command (the daemon died) exits 255
        # with nothing on stderr, as a command's own exit(255) does: the daemon is asked which
        if returncode == _CONNECTION_LOST:
            return True
        tail = output_tail(stderr, 2)
        return returncode in (1, 125, 126, 127) and any(marker in tail for marker in _DAEMON_ERRORS)
