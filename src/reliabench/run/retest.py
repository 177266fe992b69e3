"""Re-run a rollout's hidden tests on the very files it left: is the verdict the code's or the harness's?

No agent is called. For each rollout, the workspace is rebuilt as it was when its hidden
tests first ran -- the task's starter, then the agent's files kept under
``RUN/artifacts/<task>/<agent>/<rollout>/files/``, then the deletions recorded in the
rollout's ``meta["deleted_files"]`` -- and the hidden tests run again, in the same sandbox
backend and limits as the run, ``times`` times, each time on a FRESH copy (a test that
writes files cannot change the next run). Each re-run takes the EXECUTION PATH its rollout's
tests took (``meta["test_path"]``: a warm test worker with the task's ``test_runner``, a fresh
sandboxed pytest process, the stdio cases, or a language's test command): code that behaves
differently on another path (say, when it is not pid 1) must not look like harness noise. A
rollout whose path cannot run here (warm workers unavailable) gets ``test_error`` re-runs,
which are left out, never re-runs on another path. By default each re-run draws a seeded random test order, on
either path, so tests that depend on the order of tests show up too (``shuffle=False``
keeps the collection order).

``retest_run`` also re-runs each task's reference solution (``solution/`` laid over the
starter, when the task ships one) ``times`` times on every path its rollouts took, under the
agent name :data:`~reliabench.store.REFERENCE_AGENT`: a test whose outcome changes on the
reference is noise of the test or the harness, whatever the agents wrote
(:mod:`reliabench.studies.noise` uses that as evidence).

A rollout whose changed files were not all kept (over the per-rollout artifact budget of
``reliabench.run.artifacts``, not a regular file, or a run made before deletions were
recorded) cannot be rebuilt: it is refused with its name and the file, or skipped and
counted with ``skip_unreproducible``.

Results go to the run store's ``retests`` table (one row per re-run); the statistics are in
``reliabench.studies.noise``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reliabench.errors import InvalidArgumentError, SandboxError, UsageError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.judging import HiddenTestRun, HiddenTestStatus
from reliabench.hidden_tests.layer import TestRequest, fresh_open_at
from reliabench.meta_keys import CHANGED_FILES, DELETED_FILES, RETEST, TEST_PATH
from reliabench.records import Rollout, TestOutcome
from reliabench.run.artifacts import open_artifacts, restore_workspace
from reliabench.run.environments import TaskEnvironment, task_environments
from reliabench.run.expected import collect_expected
from reliabench.run.test_paths import TestPaths
from reliabench.sandbox import Limits
from reliabench.store import REFERENCE_AGENT, RetestRow, RunInfo, RunStore
from reliabench.tasks.suite import Task, load_suite, materialize
from reliabench.warm.hidden import open_test_workers

__all__ = [
    "NotReproducibleError",
    "RetestRun",
    "RetestSummary",
    "order_seed",
    "rebuild_workspace",
    "RETEST_PATHS",
    "reference_key",
    "retest_path",
    "retest_reference",
    "retest_during_run",
    "retest_files",
    "retest_run",
    "retest_to_row",
]


class NotReproducibleError(UsageError):
    """A rollout's workspace cannot be rebuilt from what the run kept."""


@dataclass(frozen=True, slots=True)
class RetestRun:
    """One re-run of a rollout's hidden tests on its unchanged files.

    Attributes:
        task_id: The task.
        agent: The agent.
        rollout: The rollout index.
        rep: Which re-run (0-based).
        status: ``completed``, ``timeout`` or ``test_error`` (the harness could not run).
        tests: One outcome per expected test.
        order_seed: Seed of the test order (None: collection order).
        seconds: Wall-clock seconds of the run.
        reason: What went wrong, if anything.
    """

    task_id: str
    agent: str
    rollout: int
    rep: int
    status: HiddenTestStatus
    tests: tuple[TestOutcome, ...]
    order_seed: int | None
    seconds: float
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class RetestSummary:
    """What ``retest_run`` did.

    Attributes:
        rollouts: Rollouts with re-tests after the call.
        executed: Re-runs executed by this call.
        skipped_unreproducible: Rollouts skipped because a changed file was not kept.
        test_errors: Re-runs the harness could not run (not counted as flips).
        times: Re-runs per rollout asked for.
        reference_runs: Runs of the tasks' reference solutions executed by this call.
    """

    rollouts: int
    executed: int
    skipped_unreproducible: tuple[str, ...]
    test_errors: int
    times: int
    reference_runs: int = 0


def order_seed(task_id: str, agent: str, rollout: int, rep: int) -> int:
    """The seed of the test order of re-run ``rep`` (stable across machines).

    Examples:
        >>> order_seed("t", "a", 0, 1) == order_seed("t", "a", 0, 1) != order_seed("t", "a", 0, 2)
        True
    """
    h = hashlib.sha256(f"retest\0{task_id}\0{agent}\0{rollout}\0{rep}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def retest_to_row(r: RetestRun) -> RetestRow:
    """The store row of a re-run."""
    return {"task_id": r.task_id, "agent": r.agent, "rollout": r.rollout, "rep": r.rep,
            "status": r.status, "order_seed": r.order_seed, "seconds": round(r.seconds, 3),
            "reason": r.reason, "tests": [[t.name, t.outcome, t.security] for t in r.tests]}


def _unkept(rollout: Rollout, starter: Path | None, kept: set[str]) -> list[str]:
    """Changed files the workspace cannot be rebuilt without."""
    changed = [str(f) for f in rollout.meta.get(CHANGED_FILES, [])]
    deleted = rollout.meta.get(DELETED_FILES)
    missing = []
    for rel in changed:
        if rel in kept:
            continue
        if deleted is not None and rel in deleted:
            continue
        missing.append(rel)
    return missing


def _not_reproducible(rollout: Rollout, missing: Sequence[str]) -> NotReproducibleError:
    why = ("the run did not record deletions (made before re-tests existed)"
           if DELETED_FILES not in rollout.meta
           else "over the per-rollout artifact budget, or not a regular file")
    return NotReproducibleError(
        f"rollout {rollout.task_id}/{rollout.agent}/{rollout.rollout}: changed file "
        f"{missing[0]!r} was not kept ({why}); its workspace cannot be rebuilt "
        "(--skip-unreproducible skips such rollouts)")


def rebuild_workspace(dest: Path, starter: Path | None, files: Mapping[str, bytes], rollout: Rollout) -> None:
    """Rebuild the workspace a rollout's hidden tests ran on (``starter`` None: ``dest`` holds it already).

    Raises:
        NotReproducibleError: when a changed file was not kept (named in the message).
    """
    missing = _unkept(rollout, starter, set(files))
    if missing:
        raise _not_reproducible(rollout, missing)
    deleted = [str(rel) for rel in rollout.meta.get(DELETED_FILES, [])]
    unwritten = restore_workspace(dest, starter, files, deleted)
    if unwritten:
        rel, why = unwritten[0]
        raise NotReproducibleError(f"rollout {rollout.task_id}/{rollout.agent}/{rollout.rollout}: kept file "
                                   f"{rel!r} {why}; its workspace cannot be rebuilt")


RETEST_PATHS = ("fresh", "warm", "stdio", "command", "repository")
"""The execution paths of hidden tests, as recorded in ``meta["test_path"]``."""


def retest_path(task: Task, rollout: Rollout | None = None) -> str:
    """The execution path a rollout's hidden tests took, which its re-tests take too.

    ``stdio`` for a stdio task, ``command`` for a test-command task, ``repository`` for a
    repository task; else the recorded ``meta["test_path"]`` (``warm`` or ``fresh``); ``fresh``
    for records that do not say (runs made before warm workers).

    Examples:
        >>> from types import SimpleNamespace
        >>> from reliabench.records import Rollout
        >>> warm = Rollout(task_id="t", agent="a", rollout=0, meta={"test_path": "warm"})
        >>> task = SimpleNamespace(stdio=None, test_runner="pytest", repository=None)
        >>> retest_path(task, warm), retest_path(task)
        ('warm', 'fresh')
    """
    if task.stdio is not None:
        return "stdio"
    if task.test_runner == "command":
        return "command"
    if task.repository is not None:
        return "repository"
    recorded = None if rollout is None else rollout.meta.get(TEST_PATH)
    return "warm" if recorded == "warm" else "fresh"


def reference_key(task_id: str, path: str) -> tuple[str, str, int]:
    """The re-test key of a task's reference solution on one execution path."""
    return (task_id, REFERENCE_AGENT, RETEST_PATHS.index(path))


def _run_on_path(path: str, task: Task, ws: Path, *, expected: Sequence[TestOutcome],
                 where: TaskEnvironment, paths: TestPaths, limits: Limits, slot: int,
                 seed: int | None) -> HiddenTestRun:
    """One run of the hidden tests on ``ws``, the way the runner ran them on ``path``.

    Always in a fresh environment of the task's (a ``tests = "same"`` task's agent
    environment is gone: the re-test sees what the run kept, the workspace).
    """
    runner = paths.for_path(path, task)
    open_at = fresh_open_at(where.backend, where.prepared, slot=slot, limits=limits)
    return runner.run(TestRequest(task=task, workspace=ws, expected=tuple(expected), limits=limits,
                                  slot=slot, open_environment=lambda mounts: open_at(ws, mounts),
                                  starter=paths.starter(task), open_at=open_at, order_seed=seed,
                                  allowed_skips=task.allowed_skips))


def _rerun(task: Task, key: tuple[str, str, int], path: str, build: Callable[[Path], None], *,
           reps: Sequence[int], expected: Sequence[TestOutcome], where: TaskEnvironment,
           paths: TestPaths, limits: Limits, slot: int, scratch: Path,
           shuffle: bool) -> tuple[RetestRun, ...]:
    out = []
    for rep in reps:
        tmp = Path(tempfile.mkdtemp(prefix="retest-", dir=scratch))
        try:
            os.chmod(tmp, 0o711)
            ws = tmp / "workspace"
            build(ws)
            seed = order_seed(key[0], key[1], key[2], rep) if shuffle and path != "stdio" else None
            try:
                hidden = _run_on_path(path, task, ws, expected=expected, where=where, paths=paths,
                                      limits=limits, slot=slot, seed=seed)
            except SandboxError as exc:
                out.append(RetestRun(*key, rep, "test_error", (), seed, 0.0, f"sandbox failed: {exc}"))
                continue
            out.append(RetestRun(*key, rep, hidden.status, hidden.outcomes, seed, hidden.seconds,
                                 hidden.reason))
        finally:
            remove_tree(tmp)
    return tuple(out)


def retest_files(task: Task, rollout: Rollout, files: Mapping[str, bytes], *, reps: Sequence[int],
                 expected: Sequence[TestOutcome], where: TaskEnvironment, paths: TestPaths,
                 limits: Limits, slot: int, scratch: Path, shuffle: bool = True) -> tuple[RetestRun, ...]:
    """Re-run the hidden tests of ``task`` on a rollout's files, once per rep, each on a fresh copy.

    Each re-run takes the rollout's own execution path (:func:`retest_path`) among ``paths``:
    a rollout whose tests ran warm needs warm workers there; without them such re-runs are
    ``test_error``. ``where`` is the task's environment (backend and prepared spec).

    Raises:
        NotReproducibleError: when the workspace cannot be rebuilt.
    """
    def build(ws: Path) -> None:
        if task.repository is not None:  # the checkout as it is (links, modes), then the rollout's files
            paths.repository.materialize(task, ws, slot=slot)
            rebuild_workspace(ws, None, files, rollout)
        else:
            rebuild_workspace(ws, task.workspace_dir, files, rollout)

    return _rerun(task, rollout.key, retest_path(task, rollout), build, reps=reps, expected=expected,
                  where=where, paths=paths, limits=limits, slot=slot, scratch=scratch, shuffle=shuffle)


def retest_reference(task: Task, path: str, *, reps: Sequence[int], expected: Sequence[TestOutcome],
                     where: TaskEnvironment, paths: TestPaths, limits: Limits, slot: int, scratch: Path,
                     shuffle: bool = True) -> tuple[RetestRun, ...]:
    """Run the hidden tests on ``task``'s reference solution (starter + ``solution/``) on ``path``.

    Raises:
        InvalidArgumentError: the task has no reference solution, or ``path`` is not a path.
    """
    solution = task.solution_dir
    if solution is None:
        raise InvalidArgumentError(f"task {task.id!r} has no reference solution (solution/)")
    if path not in RETEST_PATHS:
        raise InvalidArgumentError(f"path must be one of {', '.join(RETEST_PATHS)}, got {path!r}")

    def build(ws: Path) -> None:
        materialize(ws, [task.workspace_dir, solution])

    return _rerun(task, reference_key(task.id, path), path, build, reps=reps, expected=expected,
                  where=where, paths=paths, limits=limits, slot=slot, scratch=scratch, shuffle=shuffle)


def run_limits(info: RunInfo, task: Task) -> Limits:
    """The hidden-test limits the run used for ``task`` (from its stored configuration)."""
    stored: dict[str, Any] = {k: v for k, v in info.limits.items() if k in
                              ("cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "output_bytes")}
    base = Limits(**stored)
    wall = task.timeout_s
    if info.test_timeout_s is not None:
        wall = min(wall, info.test_timeout_s)
    return TestPaths.limits(task, replace(base, wall_s=wall, cpu_s=wall))


def retest_run(run_dir: str | Path, times: int = 5, *, workers: int = 1, sandbox: str | None = None,
               shuffle: bool = True, skip_unreproducible: bool = False,
               progress: Callable[[int, int], None] | None = None) -> RetestSummary:
    """Re-run the hidden tests of every rollout of a run ``times`` times (tops up: resumable).

    Rollouts lost to infrastructure errors have no code state to re-test and are left out.
    Every re-run takes its rollout's execution path (warm test workers are opened when a
    rollout ran on them). The reference solution of every re-tested task that has one is
    run ``times`` times on each path its rollouts took (rows of :data:`REFERENCE_AGENT`).

    Args:
        run_dir: The run directory.
        times: Re-runs per rollout wanted in total (those already recorded count).
        workers: Parallel sandbox slots.
        sandbox: Backend (default: the run's own).
        shuffle: Seeded random test order per re-run (reveals order-dependent tests).
        skip_unreproducible: Skip (and count) rollouts whose files were not all kept instead of
            refusing the whole re-test.
        progress: Called with (done, total) after each rollout.

    Returns:
        A ``RetestSummary``.

    Raises:
        NotReproducibleError: a rollout cannot be rebuilt (without ``skip_unreproducible``).
        UsageError: the suite moved or changed since the run.
    """
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        raise InvalidArgumentError(f"times must be an integer >= 1, got {times!r}")
    if workers < 1:
        raise InvalidArgumentError(f"workers must be >= 1, got {workers!r}")
    with RunStore.open_existing(run_dir) as store:
        info = store.run_info()
        suite_path = info.suite_path
        if not suite_path or not Path(suite_path).is_dir():
            raise UsageError(f"{run_dir}: the run's suite is not at {suite_path!r} any more; "
                             "re-tests need the task starters and hidden tests")
        suite = load_suite(suite_path)
        if suite.content_hash != info.config.get("suite_hash"):
            raise UsageError(f"{suite_path}: the suite changed since the run (content hash); "
                             "re-testing on other tests would not measure harness noise")
        done: dict[tuple[str, str, int], int] = {}
        for row in store.retest_rows():
            key = (row["task_id"], row["agent"], row["rollout"])
            done[key] = max(done.get(key, 0), row["rep"] + 1)
        jobs: list[tuple[Rollout, dict[str, bytes], list[int]]] = []
        skipped: list[str] = []
        for r in store.rollouts():
            if r.status == "infra_error" or not r.tests:
                continue
            reps = list(range(done.get(r.key, 0), times))
            if not reps:
                continue
            files = open_artifacts(store.root, *r.key).kept_files()
            missing = _unkept(r, suite.task(r.task_id).workspace_dir, set(files))
            if missing:
                if not skip_unreproducible:
                    raise _not_reproducible(r, missing)
                skipped.append(f"{r.task_id}/{r.agent}/{r.rollout}")
                continue
            jobs.append((r, files, reps))
        paths: dict[str, set[str]] = {}
        ids = {t.id for t in suite.tasks}
        for r in store.rollouts():
            if r.status != "infra_error" and r.tests and r.task_id in ids:
                paths.setdefault(r.task_id, set()).add(retest_path(suite.task(r.task_id), r))
        refs: list[tuple[Task, str, list[int]]] = []
        for task_id in sorted(paths):
            task = suite.task(task_id)
            if task.solution_dir is None:
                continue
            for path in sorted(paths[task_id]):
                reps = list(range(done.get(reference_key(task_id, path), 0), times))
                if reps:
                    refs.append((task, path, reps))
        tasks = sorted({r.task_id for r, _, _ in jobs} | {t.id for t, _, _ in refs})
        selected = [suite.task(t) for t in tasks]
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-retest-"))
        os.chmod(scratch, 0o711)
        executed = errors = reference_runs = 0
        runners = TestPaths()
        try:
            environments = task_environments(sandbox or info.sandbox or "auto", selected)
            runners = TestPaths(environments=environments)
            if any(retest_path(suite.task(r.task_id), r) == "warm" for r, _, _ in jobs) or any(
                    path == "warm" for _, path, _ in refs):
                with contextlib.suppress(SandboxError):  # else those re-runs are test_error rows saying why
                    runners = TestPaths(open_test_workers("warm"), environments)
            expected = {t.id: collect_expected(environments[t.id].backend, 1, [t],
                                               paths=runners if t.repository is not None else None,
                                               environments=environments)[t.id] for t in selected}
            slots: queue.Queue[int] = queue.Queue()
            for slot in range(workers):
                slots.put(slot)

            def work(job: tuple[Rollout, dict[str, bytes], list[int]]) -> tuple[RetestRun, ...]:
                r, files, reps = job
                task = suite.task(r.task_id)
                slot = slots.get()
                try:
                    return retest_files(task, r, files, reps=reps, expected=expected[r.task_id],
                                        where=environments[task.id], paths=runners,
                                        limits=run_limits(info, task), slot=slot, scratch=scratch,
                                        shuffle=shuffle)
                finally:
                    slots.put(slot)

            def work_reference(job: tuple[Task, str, list[int]]) -> tuple[RetestRun, ...]:
                task, path, reps = job
                slot = slots.get()
                try:
                    return retest_reference(task, path, reps=reps, expected=expected[task.id],
                                            where=environments[task.id], paths=runners,
                                            limits=run_limits(info, task), slot=slot, scratch=scratch,
                                            shuffle=shuffle)
                finally:
                    slots.put(slot)

            with ThreadPoolExecutor(max_workers=workers) as pool:
                for n_done, results in enumerate(pool.map(work, jobs), start=1):
                    store.add_retests(retest_to_row(x) for x in results)
                    executed += len(results)
                    errors += sum(x.status == "test_error" for x in results)
                    if progress is not None:
                        progress(n_done, len(jobs))
                for results in pool.map(work_reference, refs):
                    store.add_retests(retest_to_row(x) for x in results)
                    reference_runs += len(results)
        finally:
            runners.close()
            remove_tree(scratch)
        total = len({(row["task_id"], row["agent"], row["rollout"]) for row in store.retest_rows()
                     if row["agent"] != REFERENCE_AGENT})
    return RetestSummary(total, executed, tuple(skipped), errors, times, reference_runs)


def retest_during_run(outcome: tuple[Rollout, Any], task: Task, expected: Sequence[TestOutcome],
                      where: TaskEnvironment, paths: TestPaths, limits: Limits, slot: int, scratch: Path,
                      times: int) -> tuple[Rollout, Any]:
    """The runner's hook (``run --retest R``): re-test a just-finished rollout on its kept files.

    The re-tests travel with the rollout's artifacts to the store's writer, and run on the
    rollout's own path among the run's ``paths``, in the task's environment ``where``. A
    rollout whose workspace cannot be rebuilt is not re-tested; its record says why
    (``meta["retest"]``).
    """
    rollout, art = outcome
    if rollout.status == "infra_error" or not rollout.tests:
        return outcome
    try:
        runs = retest_files(task, rollout, art.files, reps=range(times), expected=expected,
                            where=where, paths=paths, limits=limits, slot=slot, scratch=scratch)
    except NotReproducibleError as exc:
        return replace(rollout, meta={**rollout.meta, RETEST: f"not re-tested: {exc}"}), art
    return rollout, replace(art, retests=tuple(retest_to_row(r) for r in runs))
