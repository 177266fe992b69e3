"""The local executor: rollouts on a thread pool, each phase of a rollout borrowing a sandbox slot.

``settings.workers`` test slots bound the CPU-bound phases (scan, diff, hidden tests) and
``settings.agents_in_flight`` agent slots bound the agent phases
(:class:`~reliabench.run.phase_slots.PhaseSlots`): an API agent waiting on its model holds no
test slot and no warm test server. The pool has a thread per agent slot and per test slot, so
that every slot can be busy at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from reliabench.run.executors.context import ExecutionContext
from reliabench.run.phase_slots import PhaseSlots, SlotSource
from reliabench.run.plan import Job
from reliabench.run.rollout import Outcome

__all__ = ["LOCAL_EXECUTOR", "LocalExecutor", "run_local"]


class LocalExecutor:
    """``local``: threads of this process, ``workers`` test slots and ``agents_in_flight`` agent slots."""

    name = "local"

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run ``jobs`` with :func:`run_local` (see :class:`~reliabench.run.executors.Executor`)."""
        settings = context.settings
        with context.rollouts() as run_one:
            run_local(jobs, settings.workers, run_one, context.record, context.stop,
                      agents_in_flight=settings.agents_in_flight_or_default)


LOCAL_EXECUTOR = LocalExecutor()


def run_local(jobs: Iterable[Job], workers: int, run_one: Callable[[Job, int | SlotSource], Outcome | None],
              record: Callable[[Outcome | None], None], stop: threading.Event | None, *,
              agents_in_flight: int | None = None) -> None:
    """Run ``jobs`` on a thread pool; each phase of a rollout borrows a slot of a :class:`PhaseSlots`.

    ``run_one`` (the rollout and writing its artifacts, :meth:`ExecutionContext.rollouts`)
    runs in the worker thread, so that only the store commit is left to the single writer.

    Args:
        jobs: The jobs.
        workers: Test slots (test phases at once).
        run_one: Runs one job with its slots.
        record: Records one outcome (called from this thread).
        stop: Set: take no new job.
        agents_in_flight: Agent phases at once (None: ``workers``).
    """
    slots = PhaseSlots(workers, workers if agents_in_flight is None else agents_in_flight)
    threads = slots.agents_in_flight + workers
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rollout")
    pending: set[Future[Outcome | None]] = set()
    jobs_left = iter(jobs)

    def refill() -> None:
        if stop is not None and stop.is_set():
            slots.close()  # the rollouts still waiting for their first slot run nothing
            return
        for job in jobs_left:
            pending.add(pool.submit(run_one, job, slots))
            if len(pending) >= threads + workers:
                break

    try:
        refill()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                pending.discard(fut)
                record(fut.result())
            refill()
    except BaseException:
        # Interrupted (Ctrl-C) or failed: drop the rollouts that have not started, let the
        # running ones finish, and record every finished one -- then re-raise.
        slots.close()
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True)
        for fut in list(pending):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                pending.discard(fut)
                record(fut.result())
        raise
    finally:
        pool.shutdown(wait=True)
