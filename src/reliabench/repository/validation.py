"""Validating a repository task: the gold patch resolves it, the empty patch does not.

:func:`validate_repository_task` runs a task's tests twice on fresh copies of its prepared
checkout -- once with nothing changed (the empty patch), once with the gold patch applied --
through the same grader a run uses (:class:`~reliabench.hidden_tests.repository.RepositoryTests`).
A task *flips* when the gold rollout is ``RESOLVED_FULL`` and every FAIL_TO_PASS test of the
empty rollout fails. A task that does not flip is reported with the reason: the environment
did not build, the repository is missing or at another commit, the test patch does not apply,
or what the log shows (:func:`~reliabench.hidden_tests.repository.diagnose`: network-bound,
python-version, missing-file, dependency-drift).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reliabench.errors import SandboxError, SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.layer import TestRequest
from reliabench.repository.patches import PatchApplyError, apply_patch
from reliabench.sandbox.base import Limits

if TYPE_CHECKING:
    from reliabench.hidden_tests.repository import RepositoryTestRun, RepositoryTests
    from reliabench.tasks.suite import Task

__all__ = ["RepositoryValidation", "grade_changed_checkout", "validate_repository_task"]


@dataclass(frozen=True, slots=True)
class RepositoryValidation:
    """One task validated.

    Attributes:
        task_id: The task.
        flips: Gold resolves, empty fails every FAIL_TO_PASS test.
        reason: Why it does not flip (None when it does).
        empty: The empty rollout's grade (None when nothing ran).
        gold: The gold rollout's grade (None when nothing ran).
        seconds: Wall-clock seconds, environment build included.
        built: The environment was built now (False: from the cache).
    """

    task_id: str
    flips: bool
    reason: str | None
    empty: RepositoryTestRun | None
    gold: RepositoryTestRun | None
    seconds: float
    built: bool = False


def grade_changed_checkout(
    tests: RepositoryTests,
    task: Task,
    change: Callable[[Path], None] | None,
    limits: Limits,
    slot: int,
) -> RepositoryTestRun:
    """Grade one rollout whose "agent" is ``change`` (a function of the workspace; None: no change).

    What the runner will do per rollout, on a fresh copy of the prepared checkout that is
    removed afterwards: validation applies the gold patch with it, tests attack the checkout.
    """
    base = Path(tempfile.mkdtemp(prefix="rb-validate-"))
    try:
        ws = base / "workspace"
        tests.prepare(task, slot=slot)
        tests.materialize(task, ws)
        if change is not None:
            change(ws)
        open_at = tests.opener(task, slot)
        expected = tests.collect(task, lambda m: open_at(ws, m), starter=ws, limits=limits, slot=slot)
        request = TestRequest(
            task=task,
            workspace=ws,
            expected=expected,
            limits=limits,
            slot=slot,
            open_environment=lambda mounts: open_at(ws, mounts),
            open_at=open_at,
        )
        return tests.run(request)
    finally:
        remove_tree(base)


def validate_repository_task(
    tests: RepositoryTests, task: Task, *, limits: Limits | None = None, slot: int = 0
) -> RepositoryValidation:
    """Run the empty and the gold patch of ``task`` and say whether it flips (module docstring)."""
    from reliabench.hidden_tests.repository import diagnose
    from reliabench.tasks.repository import read_patch

    started = time.monotonic()
    lim = limits or Limits(
        wall_s=1800, cpu_s=1800, memory_bytes=4 * 1024**3, max_procs=256, output_bytes=16 * 1024**2
    )
    cfg = task.repository
    if cfg is None:
        return RepositoryValidation(task.id, False, "not a repository task", None, None, 0.0)
    try:
        prepared = tests.prepare(task, slot=slot)
    except (SandboxError, SuiteError) as exc:
        return RepositoryValidation(
            task.id, False, f"not runnable: {exc}", None, None, time.monotonic() - started
        )
    built = prepared.built
    if cfg.gold_patch is None:
        return RepositoryValidation(
            task.id, False, "no gold patch", None, None, time.monotonic() - started, built
        )
    try:
        gold_patch = read_patch(cfg.gold_patch)
        empty = grade_changed_checkout(tests, task, None, lim, slot)
        gold = grade_changed_checkout(
            tests, task, lambda ws: apply_patch(ws, gold_patch, what="gold patch"), lim, slot
        )
    except PatchApplyError as exc:
        return RepositoryValidation(
            task.id, False, f"gold patch: {exc}", None, None, time.monotonic() - started, built
        )
    f2p_empty = empty.swebench["fail_to_pass"]
    reason: str | None = None
    if gold.status == "timeout":
        reason = (
            f"the gold run did not finish in {lim.wall_s:g} s ({diagnose(gold.output)}; a test that "
            "needs the network may wait between retries)"
        )
    elif not gold.swebench["resolved"]:
        p2p = gold.swebench["pass_to_pass"]
        f2p = gold.swebench["fail_to_pass"]
        failing = [
            n
            for n in (*cfg.fail_to_pass, *cfg.pass_to_pass)
            if gold.status_map.get(n) not in ("PASSED", "XFAIL")
        ]
        reason = (
            f"gold patch does not resolve ({diagnose(gold.output)}): FAIL_TO_PASS {f2p[0]}/{f2p[1]}, "
            f"PASS_TO_PASS {p2p[0]}/{p2p[1]}; first failing: {failing[:2]}"
        )
    elif f2p_empty[0] > 0:
        reason = f"the empty patch already passes {f2p_empty[0]} of {f2p_empty[1]} FAIL_TO_PASS test(s)"
    return RepositoryValidation(
        task.id, reason is None, reason, empty, gold, time.monotonic() - started, built
    )
