"""Run tasks x agents x n rollouts: agent, scan, hidden tests, record -- resumably.

Each rollout is independent: a fresh copy of the task's starter workspace, a seed derived
from (run seed, task, agent, rollout), the agent's edit, a scan of what the agent changed, and
the hidden tests in the task's environment. Before the first rollout every task gets its
backend, refused or prepared once (:mod:`reliabench.run.environments`: a task no rollout of
which could run refuses the run, exit 2), a repository task its checkout and environment
(:func:`~reliabench.run.test_paths.prepare_repositories`, refused the same way), and its
hidden-test runner (:mod:`reliabench.run.test_paths`). Workers do the work, each with its own sandbox
slot and uid: threads of this process (``executor="local"``) or Ray actors on a local or
remote cluster (``executor="ray"``, the ``ray`` extra). The calling thread is the store's
single writer: it writes each rollout's artifacts and records it in one transaction as soon
as it is done, so an interruption loses nothing that was recorded and a re-run with the same
arguments does only the missing rollouts.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reliabench.agents.base import Agent
from reliabench.agents.infra import InfraStopWatch
from reliabench.errors import InfraStopError, InvalidArgumentError
from reliabench.meta_keys import TestPath
from reliabench.run.executors import EXECUTORS
from reliabench.run.executors.context import ExecutionContext
from reliabench.run.expected import collect_expected
from reliabench.run.plan import derive_seed, plan_run, run_identity
from reliabench.run.recording import store_rollout
from reliabench.run.rollout import Outcome
from reliabench.run.settings import ProgressEvent, RunSettings, RunSummary
from reliabench.run.test_paths import TestPaths, check_harness, prepare_repositories
from reliabench.sandbox.choice import choose_backends, prepare_environments
from reliabench.scanners import get_scanner
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite

__all__ = ["ProgressEvent", "RunSettings", "RunSummary", "derive_seed", "run_suite"]

_PACKAGES = ("reliabench", "numpy", "scipy", "pytest", "bandit", "semgrep", "openai")


def _package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def run_suite(
    suite: Suite,
    agents: Sequence[Agent],
    out_dir: str | Path,
    settings: RunSettings,
    *,
    tasks: Sequence[str] | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    stop: threading.Event | None = None,
    agents_file: str | Path | None = None,
    provenance: Mapping[str, Any] | None = None,
    n_per_agent: Mapping[str, int] | None = None,
) -> RunSummary:
    """Run every missing rollout of ``suite`` x ``agents`` x ``settings.n`` into ``out_dir``.

    A second call with the same arguments resumes: rollouts already in the store are skipped.
    A different configuration in an existing ``out_dir`` is refused (``RunMismatchError``).

    Args:
        suite: The loaded suite.
        agents: Loaded agents (unique names).
        out_dir: The run directory.
        settings: n, seed, workers, sandbox, scanners, limits.
        tasks: Restrict to these task ids (part of the run's identity).
        progress: Called after each recorded rollout, from the calling thread.
        stop: Set it to stop after the rollouts in flight (they are recorded).
        agents_file: The agents file ``agents`` came from; the Ray executor needs it (its
            workers load the agents on their own nodes).
        provenance: Kept with the run for reports, not part of its identity (e.g. the command
            line and the agents' configuration, secrets masked by the caller).
        n_per_agent: Rollouts per task of these agents instead of ``settings.n`` (adaptive
            runs); like n, not part of the run's identity.

    Returns:
        A ``RunSummary``.
    """
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"agent names must be unique, got {names!r}")
    selected = [suite.task(t) for t in tasks] if tasks else list(suite.tasks)
    specs = {t.id: t.environment for t in selected}
    backends = choose_backends(settings.sandbox, specs)
    environments = prepare_environments(specs, backends)  # refuses the run before anything is written
    check_harness(selected, environments, settings.test_workers)
    isolation = ",".join(sorted({b.name for b in backends.values()}))  # one name unless tasks differ
    scanners = [get_scanner(name) for name in settings.scanners]
    config, config_hash = run_identity(suite, selected, names, settings)
    config["suite_path"] = str(suite.root.resolve())  # where `reliabench scan` finds the starters
    # what `score --by language|tag` groups tasks by (kept with the run, not part of its identity)
    config["task_labels"] = {t.id: {"language": t.language, "tags": list(t.tags)} for t in selected}
    if settings.security_policy:
        config["security_policy"] = settings.security_policy
    config.update({k: v for k, v in (provenance or {}).items() if k not in config})
    t0 = time.perf_counter()
    # repository tasks: checkout, environment, test patch, gold patch -- refused before anything is written
    repository = prepare_repositories(selected, environments, limits=settings.limits,
                                      test_timeout_s=settings.test_timeout_s, workers=settings.workers)
    try:
        store, resumed = RunStore.create_or_resume(
            out_dir, config={**config, "n": settings.n}, config_hash=config_hash,
            suite={"name": suite.name, "version": suite.version, "hash": suite.content_hash},
            packages=_package_versions(), isolation=isolation,
        )
    except BaseException:
        repository.close()
        raise
    stopped: dict[str, str] = {}  # agent -> why it was stopped early
    with store, contextlib.ExitStack() as cleanup:
        cleanup.callback(repository.close)
        done = store.done_keys(except_status="infra_error")  # infra errors are rerun
        plan = plan_run(selected, agents, settings, done, n_per_agent)
        jobs, planned, skipped = plan.jobs, plan.planned, plan.skipped
        passed = sum(1 for r in store.rollouts() if r.passes) if done else 0
        executed = infra = 0
        watch = InfraStopWatch()
        test_path: TestPath | None = None  # None: nothing ran
        if jobs:
            needed = [suite.task(t) for t in sorted({j.task.id for j in jobs})]
            paths = TestPaths.open(settings.test_workers, environments, repository)
            cleanup.callback(paths.close)
            test_path = paths.host_path
            ran_on = {paths.test_path(t) for t in needed}
            if len(ran_on) == 1:  # one kind of task (every one a repository's, say): its path
                test_path = ran_on.pop()
            expected = collect_expected(backends[needed[0].id], settings.workers, needed, paths, environments)

            def record(outcome: Outcome | None) -> None:
                nonlocal executed, passed, infra
                if outcome is None:  # its agent was stopped before it started
                    return
                rollout, art = outcome
                # artifacts first, then the one-transaction commit: a recorded rollout always
                # has its artifacts; artifacts without a record are replaced when it reruns.
                # OutputError (full or read-only run directory) stops the run: resumable.
                rollout = store_rollout(store, rollout, art)
                if art.retests:
                    store.add_retests(art.retests)
                executed += 1
                passed += rollout.passes
                infra += rollout.status == "infra_error"
                why = watch.observe(rollout)
                if why is not None:
                    stopped[rollout.agent] = why
                if progress is not None:
                    progress(ProgressEvent(skipped + executed, planned, passed, rollout))

            # an agent stopped early gets no new rollouts (those in flight finish and are kept)
            live_jobs = (j for j in jobs if j.agent.name not in stopped)
            context = ExecutionContext(suite, settings, environments, scanners, expected, paths, store,
                                       stopped.__contains__, record, stop,
                                       None if agents_file is None else Path(agents_file))
            EXECUTORS.get(settings.executor).run(live_jobs, context)
    summary = RunSummary(Path(out_dir), resumed, planned, skipped, executed, passed, infra,
                         isolation, time.perf_counter() - t0, test_path)
    if stopped:
        not_run = planned - skipped - executed
        raise InfraStopError(
            "; ".join(f"agent {a!r} stopped: {why}" for a, why in stopped.items())
            + f"; {not_run} rollout(s) not run. Fix the cause and run the same command again "
            f"to resume (rollouts recorded as infra_error are rerun)", summary=summary)
    return summary
