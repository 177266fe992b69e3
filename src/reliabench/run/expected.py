"""Each task's hidden tests, learned once per run before any rollout (the expected outcomes)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reliabench.errors import SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.fresh import collect_hidden_tests
from reliabench.hidden_tests.skips import unknown_skips
from reliabench.hidden_tests.stdio import expected_stdio_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, SandboxBackend
from reliabench.tasks.suite import Task, materialize
from reliabench.warm.hidden import WarmTests
from reliabench.warm.plain_tests import collect_plain_tests

__all__ = ["collect_expected"]


def collect_expected(backend: SandboxBackend, workers: int, tasks: Sequence[Task],
                      warm: WarmTests | None = None) -> dict[str, tuple[TestOutcome, ...]]:
    """Learn each task's hidden tests once, cheaply.

    Plain tests are read from their source on the host; others are collected on the untouched
    starter workspace (in a warm worker when there is one).

    Raises:
        SuiteError: A task's ``allowed_skips`` names a test that is not collected (a declared
            skip that declares nothing), or its tests cannot be collected.
    """
    every = list(tasks)
    out = {t.id: collect_plain_tests(t.tests_dir) for t in tasks if t.test_runner == "plain"}
    tasks = [t for t in tasks if t.id not in out]
    scratch = Path(tempfile.mkdtemp(prefix="reliabench-collect-"))
    os.chmod(scratch, 0o711)

    def one(task_slot: tuple[Task, int]) -> tuple[str, tuple[TestOutcome, ...]]:
        task, slot = task_slot
        if task.stdio is not None:
            return task.id, expected_stdio_tests(task.stdio)
        ws = scratch / task.id
        materialize(ws, [task.workspace_dir])
        os.chmod(ws, 0o755)
        return task.id, collect_hidden_tests(ws, task.tests_dir, backend=backend, slot=slot,
                                             limits=Limits(wall_s=max(60.0, task.timeout_s)),
                                             worker=warm)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            out.update(pool.map(one, [(t, i % workers) for i, t in enumerate(tasks)]))
    finally:
        remove_tree(scratch)
    problems = [f"{task.root / 'task.toml'}: allowed_skips: {name!r} is not a hidden test of this task "
                f"(collected: {', '.join(t.name for t in out[task.id][:3])}, ...)"
                for task in every for name in unknown_skips(task.allowed_skips, out[task.id])]
    if problems:
        raise SuiteError(problems)
    return out
