"""Each task's hidden tests, learned once per run before any rollout (the expected outcomes)."""

from __future__ import annotations

import os
import queue
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reliabench.errors import SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.layer import fresh_opener
from reliabench.hidden_tests.skips import unknown_skips
from reliabench.records import TestOutcome
from reliabench.run.environments import TaskEnvironment
from reliabench.run.test_paths import TestPaths
from reliabench.sandbox import Limits
from reliabench.sandbox.environment import EnvironmentBackend
from reliabench.tasks.suite import Task, materialize
from reliabench.warm.plain_tests import collect_plain_tests

__all__ = ["collect_expected"]


def collect_expected(backend: EnvironmentBackend, workers: int, tasks: Sequence[Task],
                     paths: TestPaths | None = None,
                     environments: Mapping[str, TaskEnvironment] | None = None,
                     ) -> dict[str, tuple[TestOutcome, ...]]:
    """Learn each task's hidden tests once, cheaply.

    Plain tests are read from their source on the host; the others are collected by the
    task's runner of this run (``paths``; default: fresh processes) on a copy of the untouched
    starter workspace, in the task's environment (``environments``; default: ``backend`` on
    the host).

    Raises:
        SuiteError: A task's ``allowed_skips`` names a test that is not collected (a declared
            skip that declares nothing), or its tests cannot be collected.
        SandboxError: The harness could not collect them at all.
    """
    every = list(tasks)
    out = {t.id: collect_plain_tests(t.tests_dir) for t in tasks if t.test_runner == "plain"}
    tasks = [t for t in tasks if t.id not in out]
    chooser = paths or TestPaths(environments=environments)
    scratch = Path(tempfile.mkdtemp(prefix="reliabench-collect-"))
    os.chmod(scratch, 0o711)

    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def one(task: Task) -> tuple[str, tuple[TestOutcome, ...]]:
        where = (environments or {}).get(task.id)
        chosen, prepared = ((where.backend, where.prepared) if where is not None
                            else (backend, backend.prepare(task.environment)))
        limits = chooser.limits(task, Limits(wall_s=max(60.0, task.timeout_s)))
        ws = scratch / task.id
        materialize(ws, [task.workspace_dir] if task.repository is None else [])  # a checkout: its runner's
        os.chmod(ws, 0o755)
        slot = slots.get()  # environments of one slot never overlap
        try:
            opener = fresh_opener(chosen, prepared, ws, slot=slot, limits=limits)
            # a command task's collect lays its reference over the copy the opener opens on
            starter = ws if task.test_runner == "command" else task.workspace_dir
            return task.id, chooser.for_task(task).collect(task, opener, starter=starter,
                                                           limits=limits, slot=slot)
        finally:
            slots.put(slot)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            out.update(pool.map(one, tasks))
    finally:
        remove_tree(scratch)
    problems = [f"{task.root / 'task.toml'}: allowed_skips: {name!r} is not a hidden test of this task "
                f"(collected: {', '.join(t.name for t in out[task.id][:3])}, ...)"
                for task in every for name in unknown_skips(task.allowed_skips, out[task.id])]
    if problems:
        raise SuiteError(problems)
    return out
