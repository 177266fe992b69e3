"""The executor kind: the Executor protocol, what it is handed, and the registry.

An executor decides where the rollouts of a run execute (``--executor NAME``). ``run_suite``
plans the jobs, opens the store, and hands the jobs to the executor with an
:class:`~reliabench.run.executors.context.ExecutionContext`; the executor runs them (in this
process with ``context.rollouts()``, or elsewhere) and calls ``context.record`` for each
outcome from the calling thread, the store's single writer. Built-ins: ``local`` (a thread
pool) and ``ray`` (Ray actors); third parties add one through the entry-point group
``reliabench.executors``, naming an executor object::

    [project.entry-points."reliabench.executors"]
    serial = "my_package.serial:executor"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from reliabench.plugins import Registry

if TYPE_CHECKING:  # the context needs the run's modules; they need the registry (settings)
    from reliabench.run.executors.context import ExecutionContext
    from reliabench.run.plan import Job

__all__ = ["BUILTIN_EXECUTORS", "EXECUTORS", "Executor"]


@runtime_checkable
class Executor(Protocol):
    """Where a run's rollouts execute.

    Attributes:
        name: The registry name (``--executor NAME``).
    """

    name: str

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run every job, recording each outcome with ``context.record``.

        Stop taking new jobs when ``context.stop`` is set; on an exception, record what
        finished and re-raise (a re-run resumes the rest).
        """
        ...


def _is_executor(obj: Any) -> bool:
    return (not isinstance(obj, type) and isinstance(obj, Executor)
            and isinstance(getattr(obj, "name", None), str))


BUILTIN_EXECUTORS = {
    "local": "reliabench.run.executors.local:LOCAL_EXECUTOR",
    "ray": "reliabench.run.executors.ray:RAY_EXECUTOR",
}
"""The built-in executors: name -> ``module:attribute`` of the executor object."""

EXECUTORS: Registry[Executor] = Registry(
    "executors",
    builtins=BUILTIN_EXECUTORS,
    what="executor",
    check=_is_executor,
    expected="an Executor object (a str 'name' and a 'run(jobs, context)' method)",
)
"""The executor registry (entry-point group ``reliabench.executors``: name -> executor)."""
