"""The registry of sandbox backends: built-ins, entry-point plugins, probing, ``auto``.

Every backend -- host or container, built-in or a plugin -- is an
:class:`~reliabench.sandbox.environment.EnvironmentBackend` (``refuse``, ``prepare``,
``start``, ``sweep``) found by name here. The built-ins, in the order ``auto`` prefers them:

* host backends (:data:`BACKENDS`): ``bubblewrap``, ``namespaces``, ``none`` -- ``auto`` picks
  the strongest that runs a trivial command here, for tasks that run on the host;
* ``warm``: the warm test workers' jail (:mod:`reliabench.warm.backend`), in the registry for
  ``reliabench sandbox check`` and library use, but not a ``--sandbox`` choice of a run
  (:data:`NOT_FOR_RUNS`; its module docstring says why);
* container runtimes (:data:`CONTAINER_RUNTIMES`, tried in that order by ``auto`` for tasks
  that name an image or a Dockerfile).

Another package adds one through the ``reliabench.sandboxes`` entry-point group (the
built-ins are declared there too, in reliabench's own ``pyproject.toml``)::

    [project.entry-points."reliabench.sandboxes"]
    mybox = "my_package.mybox:MyBackend"

The entry point names a class called without arguments; the registry checks, when it loads
it, that the class has the lifecycle (``refuse``, ``prepare``, ``start``, ``sweep``). A
built-in name always means the built-in (an entry point reusing one is ignored), and ``auto``
only picks among the built-ins. ``get_backend`` probes a host backend once per process on a
trivial command before handing it out (:meth:`~reliabench.sandbox.host.HostBackend.probe`);
other backends say what they cannot do in ``refuse``. See "Adding a sandbox backend" in
``docs/guide.md``.
"""

from __future__ import annotations

import functools
import logging
import threading
import warnings
from typing import Any, Final

from reliabench.errors import SandboxError, UnknownNameError, UsageError
from reliabench.plugins import Registry
from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.environment import EnvironmentBackend
from reliabench.sandbox.namespaces import NamespacesBackend
from reliabench.sandbox.none import NoSandboxBackend

__all__ = [
    "BACKENDS",
    "CONTAINER_RUNTIMES",
    "ENTRY_POINT_GROUP",
    "LIFECYCLE",
    "NOT_FOR_RUNS",
    "SANDBOXES",
    "available_backends",
    "get_backend",
    "shared_backend",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "reliabench.sandboxes"
"""The entry-point group of sandbox backends."""

BACKENDS: dict[str, type] = {
    "bubblewrap": BubblewrapBackend,
    "namespaces": NamespacesBackend,
    "none": NoSandboxBackend,
}
"""The built-in host backends: isolation level -> backend class, strongest first."""

CONTAINER_RUNTIMES: Final[tuple[str, ...]] = ("podman", "docker")
"""The container backends ``auto`` tries, in this order, for tasks that name an image."""

NOT_FOR_RUNS: Final = frozenset({"warm"})
"""Registered backends that are not a ``--sandbox`` choice of a run."""

LIFECYCLE: Final = ("refuse", "prepare", "start", "sweep")
"""The methods a backend class must have (the contract of :mod:`reliabench.sandbox.environment`)."""

_BUILTIN_TARGETS: dict[str, str] = {
    **{name: f"{cls.__module__}:{cls.__name__}" for name, cls in BACKENDS.items()},
    "warm": "reliabench.warm.backend:WarmBackend",
    # the container runtimes, in CONTAINER_RUNTIMES order (reliabench.sandbox.containers)
    "podman": "reliabench.sandbox.podman:PodmanBackend",
    "docker": "reliabench.sandbox.docker:DockerBackend",
}


def _is_backend_class(cls: Any) -> bool:
    return callable(cls) and all(callable(getattr(cls, method, None)) for method in LIFECYCLE)


SANDBOXES: Registry[Any] = Registry(
    "sandboxes",
    builtins=_BUILTIN_TARGETS,
    what="sandbox backend",
    check=_is_backend_class,
    expected=f"a backend class (needs {', '.join(repr(m) for m in LIFECYCLE)} methods)",
)
"""The sandbox backend registry (entry-point group ``reliabench.sandboxes``)."""


def available_backends() -> list[str]:
    """Names a run's ``--sandbox`` accepts: the built-ins strongest first, then plugins sorted.

    A name being listed does not mean the backend works here: ``get_backend`` probes it.
    """
    return [name for name in SANDBOXES.names() if name not in NOT_FOR_RUNS]


def _backend_class(name: str) -> Any:
    """The class registered as ``name`` (a built-in or an entry point), or None."""
    return SANDBOXES.find(name)


_NONE_WARNING = (
    "reliabench is running untrusted code WITHOUT a sandbox (isolation = 'none'): only "
    "rlimits and a process-group kill; the code can read and write your files and reach the "
    "network. Install bubblewrap (apt-get install bubblewrap) or run as root for the "
    "'namespaces' backend."
)


def _instantiate(name: str) -> Any:
    """A new instance of the backend ``name``.

    Raises:
        UnknownNameError: ``name`` is unknown.
        SandboxError: its constructor says it does not work here.
        UsageError: a plugin failed to load or is not a backend.
    """
    cls = _backend_class(name)
    if cls is None:
        raise UnknownNameError(
            f"unknown sandbox backend {name!r}; choose one of: auto, {', '.join(available_backends())}")
    backend = cls()
    if not isinstance(getattr(backend, "name", None), str):
        raise UsageError(f"sandbox backend {name!r} has no str 'name' (the isolation it records)")
    return backend


@functools.cache
def _probe(name: str) -> str | None:
    """Try ``name`` once (a host backend runs ``true``); return why it does not work, or None."""
    try:
        backend = _instantiate(name)
        probe = getattr(backend, "probe", None)
        return None if probe is None else probe()
    except SandboxError as exc:
        return str(exc)
    except OSError as exc:  # pragma: no cover - depends on the host
        return f"{name}: {exc}"


def get_backend(name: str = "auto") -> EnvironmentBackend:
    """Return a sandbox backend by name, or the strongest host backend that works here.

    Args:
        name: ``auto``, a name from :func:`available_backends` or another registered name
            (``warm``). ``auto`` probes each host backend once per process (cached) and
            picks the strongest that runs a trivial command; if it falls to ``none`` it warns.

    Returns:
        A ready backend: an :class:`~reliabench.sandbox.environment.EnvironmentBackend`
        (host backends also have the one-command ``run``).

    Raises:
        UnknownNameError: ``name`` is unknown (the message lists the known ones).
        SandboxError: the backend asked for does not work here.
        UsageError: a plugin backend failed to load or is not a backend.
    """
    if name == "auto":
        for candidate in ("bubblewrap", "namespaces"):
            why = _probe(candidate)
            if why is None:
                chosen: EnvironmentBackend = BACKENDS[candidate]()
                return chosen
            logger.info("sandbox backend %s unavailable: %s", candidate, why)
        name = "none"
    if name == "none":
        logger.warning(_NONE_WARNING)
        warnings.warn(_NONE_WARNING, RuntimeWarning, stacklevel=2)
        return NoSandboxBackend()
    if _backend_class(name) is None:
        raise UnknownNameError(
            f"unknown sandbox backend {name!r}; choose one of: auto, {', '.join(available_backends())}")
    why = _probe(name)
    if why is not None:
        raise SandboxError(f"sandbox backend {name!r} is not available: {why}")
    backend = _instantiate(name)
    if not isinstance(backend, EnvironmentBackend):
        raise UsageError(f"sandbox backend {name!r} does not have the environment lifecycle "
                         f"({', '.join(LIFECYCLE)})")
    return backend


_SHARED: dict[str, EnvironmentBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_backend(name: str) -> EnvironmentBackend:
    """The backend ``name`` (``auto`` included), created once per process (thread-safe).

    For callers that need a backend per rollout (an agent's own ``sandbox``): ``none`` warns
    once, not per rollout.

    Raises:
        SandboxError: the backend does not work here.
    """
    with _SHARED_LOCK:
        backend = _SHARED.get(name)
        if backend is None:
            backend = get_backend(name)
            _SHARED[name] = backend
        return backend
