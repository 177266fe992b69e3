"""The ``podman`` backend: rootful podman, daemonless, with reliabench's own ``containers.conf``.

Every podman call reliabench makes carries ``CONTAINERS_CONF`` pointing at the
``containers.conf`` shipped in this package (podman then reads no other containers.conf, and
nothing is written to ``/etc``): ``runtime = "runc"`` (crun refuses hosts with hybrid cgroups:
"cgroups in hybrid mode not supported"), default ulimits within a host's hard limits (podman
otherwise asks for more: "setrlimit RLIMIT_NOFILE: Operation not permitted"), the cgroupfs
manager, file events, and the host's proxy variables kept out of containers. Containers also
get ``--ulimit`` values capped at this host's hard limits, and builds the same.

Everything else -- the container of an environment, its commands, copies, the sweep -- is
:class:`~reliabench.sandbox.containers.ContainerBackend`'s. Where podman is misconfigured
(another runtime, ulimits above the host's), its error is turned into one line with the fix.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from reliabench.sandbox.containers import _NOFILE, _NPROC, ContainerBackend, _host_hard_limit
from reliabench.sandbox.images import output_tail

__all__ = ["CONTAINERS_CONF", "PodmanBackend"]

CONTAINERS_CONF: Final = Path(__file__).with_name("containers.conf")
"""The ``containers.conf`` reliabench passes to podman (``CONTAINERS_CONF``)."""

_PASS_THROUGH: Final = ("HOME", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF", "TMPDIR")


class PodmanBackend(ContainerBackend):
    """Rollout environments in podman containers (see :mod:`reliabench.sandbox.containers`).

    Args:
        containers_conf: The ``containers.conf`` podman reads (default :data:`CONTAINERS_CONF`).
        **kwargs: As :class:`~reliabench.sandbox.containers.ContainerBackend`.
    """

    name: str = "podman"
    runtime: str = "podman"
    install_fix: str = "apt-get install podman runc catatonit (or scripts/containers/setup.sh)"

    def __init__(self, *, containers_conf: Path | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.containers_conf = containers_conf if containers_conf is not None else CONTAINERS_CONF

    def _client_env(self) -> dict[str, str]:
        env = super()._client_env()
        env.update({k: os.environ[k] for k in _PASS_THROUGH if k in os.environ})
        env["CONTAINERS_CONF"] = str(self.containers_conf)
        return env

    def _not_ready(self) -> str | None:
        result = self._call(["info", "--format", "{{.Host.OCIRuntime.Name}}"], timeout=60)
        if result.returncode != 0:
            return (self._explain(result.stderr)
                    or f"podman does not work here: {output_tail(result.stderr, 2)}")
        return None

    def _create_flags(self, *, read_only: bool) -> list[str]:
        # podman mounts unsized tmpfs on /run, /var/tmp ... of a read-only root unless told not to
        return ["--read-only-tmpfs=false"] if read_only else []

    def _remove_args(self, ids: Sequence[str]) -> list[str]:
        return ["rm", "-f", "-t", "0", "-v", *ids]

    def _build_args(self, *, dockerfile: Path, context: Path, tag: str,
                    labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        nofile = _host_hard_limit(resource.RLIMIT_NOFILE, _NOFILE)
        nproc = _host_hard_limit(resource.RLIMIT_NPROC, _NPROC)
        args = ["build", "--network", "none", "--pull=never", "--force-rm",
                "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}",
                "-f", str(dockerfile), "-t", tag]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        return [*args, str(context)], {}

    def _explain(self, stderr: str) -> str | None:
        conf = self.containers_conf
        if "hybrid mode not supported" in stderr or ("crun" in stderr and "not found" in stderr):
            return ("podman's runtime crun refuses this host (cgroups in hybrid mode) or is missing: "
                    f'use runc (apt-get install runc; runtime = "runc" in the containers.conf podman '
                    f"reads: {conf})")
        if "setrlimit" in stderr and "Operation not permitted" in stderr:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1], resource.getrlimit(resource.RLIMIT_NPROC)[1]
            return ("podman asks for more open files or processes than this host's hard limits "
                    f"(nofile {hard[0]}, nproc {hard[1]}): set default_ulimits within them in the "
                    f"containers.conf podman reads ({conf})")
        if "runtime" in stderr and "not found" in stderr:
            return f"podman's OCI runtime is missing: apt-get install runc (containers.conf: {conf})"
        return None

    def _runtime_failed(self, returncode: int, stderr: str) -> bool:
        return returncode in (125, 126, 255) and output_tail(stderr, 1).startswith("Error:")
