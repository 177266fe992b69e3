"""The local executor: rollouts on a thread pool, each thread borrowing a sandbox slot."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from reliabench.run.executors.context import ExecutionContext
from reliabench.run.plan import Job
from reliabench.run.rollout import Outcome

__all__ = ["LOCAL_EXECUTOR", "LocalExecutor", "run_local"]


class LocalExecutor:
    """``local``: a thread pool of ``settings.workers`` sandbox slots in this process."""

    name = "local"

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run ``jobs`` with :func:`run_local` (see :class:`~reliabench.run.executors.Executor`)."""
        with context.rollouts() as run_one:
            run_local(jobs, context.settings.workers, run_one, context.record, context.stop)


LOCAL_EXECUTOR = LocalExecutor()


def run_local(jobs: Iterable[Job], workers: int, run_one: Callable[[Job, int], Outcome | None],
              record: Callable[[Outcome | None], None], stop: threading.Event | None) -> None:
    """Run ``jobs`` on a thread pool; each thread borrows a sandbox slot per rollout.

    ``run_one`` (the rollout and writing its artifacts, :meth:`ExecutionContext.rollouts`)
    runs in the worker thread, so that only the store commit is left to the single writer.
    """
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def work(job: Job) -> Outcome | None:
        slot = slots.get()
        try:
            return run_one(job, slot)
        finally:
            slots.put(slot)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollout")
    pending: set[Future[Outcome | None]] = set()
    jobs_left = iter(jobs)

    def refill() -> None:
        if stop is not None and stop.is_set():
            return
        for job in jobs_left:
            pending.add(pool.submit(work, job))
            if len(pending) >= workers * 2:
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
