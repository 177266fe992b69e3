"""Which backend each task gets, and the preflight of their environments (before any rollout).

Used by a run (:mod:`reliabench.run.runner`), re-tests and ``validate``, keyed by task id:

1. :func:`choose_backends`: ``--sandbox auto`` gives host tasks the strongest host backend that
   works here and tasks with an image or a Dockerfile the first container runtime that works
   (:data:`~reliabench.sandbox.registry.CONTAINER_RUNTIMES`: podman, then docker; one that is not
   installed or does not answer is passed over); an explicit
   ``--sandbox NAME`` runs every task there (a host backend refuses container tasks, a
   container backend host tasks, by name);
2. :func:`prepare_environments`: every backend sweeps what runs killed before their clean-up
   left (``sweep``); ``refuse(spec)`` for every task -- a task no rollout of which could run
   refuses the run, one line with the fix (:class:`~reliabench.errors.PreflightError`, exit 2);
   ``prepare(spec)`` once per distinct spec (check an image and read its digest, build a
   Dockerfile with the network off), a failure refusing the run the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reliabench.errors import PreflightError, SandboxError
from reliabench.sandbox.environment import EnvironmentBackend, EnvironmentSpec, PreparedSpec
from reliabench.sandbox.registry import (
    CONTAINER_RUNTIMES,
    NOT_FOR_RUNS,
    SANDBOXES,
    get_backend,
    shared_backend,
)

__all__ = ["TaskEnvironment", "choose_backends", "prepare_environments"]


@dataclass(frozen=True, slots=True)
class TaskEnvironment:
    """Where one task of a run executes: its backend and its prepared spec.

    Attributes:
        backend: The backend that starts the task's environments.
        prepared: ``backend.prepare(task.environment)``: the image and its digest, if any.
    """

    backend: EnvironmentBackend
    prepared: PreparedSpec


def _container_backend() -> tuple[EnvironmentBackend | None, str]:
    """The first container runtime that works here, or None and why none does.

    A backend with an ``unavailable()`` method is asked whether its runtime works (installed,
    answering); a runtime that does not is passed over for the next.
    """
    reasons = []
    for name in CONTAINER_RUNTIMES:
        if SANDBOXES.find(name) is None:
            reasons.append(f"{name}: not installed")
            continue
        try:
            backend = get_backend(name)
        except SandboxError as exc:
            reasons.append(str(exc))
            continue
        unavailable = getattr(backend, "unavailable", None)
        why = unavailable() if callable(unavailable) else None
        if why is None:
            return backend, ""
        reasons.append(str(why))
    return None, "; ".join(reasons)


def choose_backends(sandbox: str, specs: Mapping[str, EnvironmentSpec]) -> dict[str, EnvironmentBackend]:
    """Each task's backend for ``--sandbox sandbox`` (see the module docstring).

    Args:
        sandbox: ``auto`` or a registered backend a run can use.
        specs: Task id -> the task's environment spec.

    Raises:
        PreflightError: a task needs a container and no container runtime works here
            (``auto``), or ``sandbox`` is not a backend a run can use.
        SandboxError: the backend asked for does not work here.
    """
    if sandbox in NOT_FOR_RUNS:
        raise PreflightError(f"--sandbox {sandbox}: the warm jail is not a backend of a run: its "
                             "workers run the hidden tests through --test-workers warm (or auto)")
    if sandbox != "auto":
        return dict.fromkeys(specs, shared_backend(sandbox))
    out: dict[str, EnvironmentBackend] = {}
    host_tasks = [key for key, spec in specs.items() if spec.kind == "host"]
    container_tasks = [key for key, spec in specs.items() if spec.kind != "host"]
    if host_tasks:
        out.update(dict.fromkeys(host_tasks, shared_backend("auto")))
    if container_tasks:
        runtime, why = _container_backend()
        if runtime is None:
            first = specs[container_tasks[0]]
            raise PreflightError(
                f"{first.source or 'task ' + container_tasks[0]}: runs in a container "
                f"({first.image or first.dockerfile}) and no container runtime works here ({why}): "
                "install podman or docker (docs/containers.md), or leave such tasks out with --task")
        out.update(dict.fromkeys(container_tasks, runtime))
    return out


def prepare_environments(specs: Mapping[str, EnvironmentSpec], backends: Mapping[str, EnvironmentBackend]
                         ) -> dict[str, TaskEnvironment]:
    """Sweep, refuse, prepare: the preflight of the tasks' environments (module docstring).

    Args:
        specs: Task id -> the task's environment spec.
        backends: Task id -> its backend (:func:`choose_backends`).

    Raises:
        PreflightError: a task's spec is refused, or cannot be prepared (one line, the first
            task named, with the backend's fix; how many tasks are affected).
    """
    swept: set[int] = set()
    for backend in backends.values():
        if id(backend) not in swept:
            swept.add(id(backend))
            backend.sweep()
    refused = [(key, why) for key, spec in specs.items() if (why := backends[key].refuse(spec)) is not None]
    if refused:
        key, why = refused[0]
        more = f" ({len(refused)} of {len(specs)} tasks are refused)" if len(refused) > 1 else ""
        raise PreflightError(f"task {key}: {why}{more}")
    out: dict[str, TaskEnvironment] = {}
    prepared: dict[tuple[int, EnvironmentSpec], PreparedSpec] = {}
    for key, spec in specs.items():
        backend = backends[key]
        once = (id(backend), spec)
        if once not in prepared:
            try:
                prepared[once] = backend.prepare(spec)
            except SandboxError as exc:
                raise PreflightError(f"task {key}: {exc}") from None
        out[key] = TaskEnvironment(backend, prepared[once])
    return out


