"""The registry of sandbox backends: built-ins, entry-point plugins, probing, ``auto``.

Built-in backends, strongest first: ``bubblewrap``, ``namespaces``, ``none``; then the container
backends ``podman`` and ``docker`` (:mod:`reliabench.sandbox.containers`). Another package
adds one through the ``reliabench.sandboxes`` entry-point group (the built-ins are declared
there too, in reliabench's own ``pyproject.toml``)::

    [project.entry-points."reliabench.sandboxes"]
    podman = "my_package.podman_backend:PodmanBackend"

The entry point names a class called without arguments; its instances satisfy
:class:`~reliabench.sandbox.base.SandboxBackend`. A built-in name always means the built-in
backend (an entry point reusing one is ignored), and ``auto`` only picks among the built-ins.
``get_backend`` probes a backend once per process on a trivial command before handing it out.
See "Adding a sandbox backend" in ``docs/guide.md``.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from reliabench.errors import SandboxError, UnknownNameError, UsageError
from reliabench.plugins import Registry
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxBackend
from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.docker import DockerBackend
from reliabench.sandbox.namespaces import NamespacesBackend
from reliabench.sandbox.none import NoSandboxBackend
from reliabench.sandbox.podman import PodmanBackend

__all__ = ["BACKENDS", "ENTRY_POINT_GROUP", "SANDBOXES", "available_backends", "get_backend"]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "reliabench.sandboxes"
"""The entry-point group of sandbox backends."""

BACKENDS: dict[str, type] = {
    "bubblewrap": BubblewrapBackend,
    "namespaces": NamespacesBackend,
    "none": NoSandboxBackend,
    "podman": PodmanBackend,
    "docker": DockerBackend,
}
"""The built-in backends: isolation level -> backend class, the host's strongest first, then containers."""


SANDBOXES: Registry[Any] = Registry(
    "sandboxes",
    builtins={name: f"{cls.__module__}:{cls.__name__}" for name, cls in BACKENDS.items()},
    what="sandbox backend",
    check=lambda cls: callable(cls) and callable(getattr(cls, "run", None)),
    expected="a backend class (needs a 'run' method)",
)
"""The sandbox backend registry (entry-point group ``reliabench.sandboxes``)."""


def available_backends() -> list[str]:
    """Names of every backend: the built-ins strongest first, then plugins sorted by name.

    A name being listed does not mean the backend works here: ``get_backend`` probes it.
    """
    return SANDBOXES.names()


def _backend_class(name: str) -> Any:
    """The class registered as ``name`` (a built-in or an entry point), or None."""
    return SANDBOXES.find(name)


_NONE_WARNING = (
    "reliabench is running untrusted code WITHOUT a sandbox (isolation = 'none'): only "
    "rlimits and a process-group kill; the code can read and write your files and reach the "
    "network. Install bubblewrap (apt-get install bubblewrap) or run as root for the "
    "'namespaces' backend."
)


@functools.cache
def _probe(name: str) -> str | None:
    """Try ``name`` once on a trivial command; return why it does not work, or None."""
    try:
        backend = _backend_class(name)()
        with tempfile.TemporaryDirectory(prefix="rb-probe-") as tmp:
            os.chmod(tmp, 0o755)
            true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
            result = backend.run(
                [true], workdir=Path(tmp), limits=Limits(wall_s=10.0), slot=0
            )
    except SandboxError as exc:
        return str(exc)
    except OSError as exc:  # pragma: no cover - depends on the host
        return f"{name}: {exc}"
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
        return f"{name} does not work on this host: {detail[0]}"
    return None


def get_backend(name: str = "auto") -> SandboxBackend:
    """Return an isolation backend by name, or the strongest that works here.

    Args:
        name: ``auto`` or a name from :func:`available_backends`. ``auto`` probes each
            backend once per process (cached) and picks the strongest that runs a trivial
            command; if it falls to ``none`` it warns.

    Returns:
        A ready backend.

    Raises:
        UnknownNameError: ``name`` is unknown (the message lists the known ones).
        SandboxError: the backend asked for does not work here.
        UsageError: a plugin backend failed to load or is not a backend.
    """
    if name == "auto":
        reasons = []
        for candidate in ("bubblewrap", "namespaces"):
            why = _probe(candidate)
            if why is None:
                return BACKENDS[candidate]()  # type: ignore[no-any-return]
            reasons.append(why)
            logger.info("sandbox backend %s unavailable: %s", candidate, why)
        name = "none"
    cls = _backend_class(name)
    if cls is None:
        raise UnknownNameError(
            f"unknown sandbox backend {name!r}; choose one of: auto, "
            f"{', '.join(available_backends())}"
        )
    if name == "none":
        logger.warning(_NONE_WARNING)
        warnings.warn(_NONE_WARNING, RuntimeWarning, stacklevel=2)
        return NoSandboxBackend()
    why = _probe(name)
    if why is not None:
        raise SandboxError(f"sandbox backend {name!r} is not available: {why}")
    backend: SandboxBackend = cls()
    if not isinstance(getattr(backend, "name", None), str):
        raise UsageError(f"sandbox backend {name!r} has no str 'name' (the isolation it records)")
    return backend
