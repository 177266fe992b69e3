"""An executor plugin: every rollout in the calling thread, one after another, on slot 0.

Slow, but the simplest thing to debug an agent with (a breakpoint in the agent stops the run).

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.executors"]
    serial = "serial_executor:executor"

Then ``reliabench run ... --executor serial``.
"""

from __future__ import annotations

from collections.abc import Iterable

from reliabench.run.executors.context import ExecutionContext
from reliabench.run.plan import Job

__all__ = ["SerialExecutor", "executor"]


class SerialExecutor:
    """Runs the jobs in order in this thread; stops taking jobs when ``context.stop`` is set."""

    name = "serial"

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run and record each job in turn (see ``reliabench.run.executors.Executor``)."""
        with context.rollouts() as run_one:
            for job in jobs:
                if context.stop is not None and context.stop.is_set():
                    return
                context.record(run_one(job, 0))


executor = SerialExecutor()
