"""What defines a run besides the suite and the agents, and what a run reports back."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import TestPath
from reliabench.records import Isolation, Rollout
from reliabench.run.executors.base import EXECUTORS
from reliabench.sandbox import MAX_SECONDS, Limits

__all__ = ["ProgressEvent", "RunSettings", "RunSummary"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything that defines a run besides the suite and the agents.

    Attributes:
        n: Rollouts per (task, agent).
        seed: The run seed.
        workers: Parallel rollouts.
        sandbox: Backend name (``auto``, ``bubblewrap``, ``namespaces``, ``none`` or a plugin's).
        scanners: Scanner names run on what each agent changed.
        limits: Resource limits of the hidden-test process (wall time comes from the task).
        agents_config_hash: Hash of the agents file (part of the run's identity).
        test_timeout_s: Cap on each task's ``timeout_s`` for the hidden tests (None: no cap).
        security_policy: A security policy (threshold, allow/deny lists) kept with the run and
            applied when it is scored; analysis-time only, so not part of the run's identity.
        executor: A name of the executor registry (``reliabench.run.executors.EXECUTORS``):
            ``local`` (a thread pool on this machine), ``ray`` (Ray actors, one per worker slot,
            on a local or remote cluster) or a plugin's; not part of the run's identity.
        ray_address: Address of an existing Ray cluster (None: start a local one).
        retest: Re-run each rollout's hidden tests this many times on its unchanged files
            (``reliabench.run.retest``; harness noise); not part of the run's identity.
        test_workers: ``auto`` (warm test workers where they work, else fresh sandboxed
            processes), ``warm`` or ``fresh``; not part of the run's identity (verdicts are
            the same), each rollout records the path in ``meta["test_path"]``.
    """

    n: int
    seed: int = 0
    workers: int = 1
    sandbox: str = "auto"
    scanners: tuple[str, ...] = ("bandit",)
    limits: Limits = field(default_factory=Limits)
    agents_config_hash: str = ""
    test_timeout_s: float | None = None
    security_policy: dict[str, Any] | None = None
    executor: str = "local"
    ray_address: str | None = None
    retest: int = 0
    test_workers: str = "auto"

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise InvalidArgumentError(f"executor must be one of {', '.join(EXECUTORS.names())}, "
                                       f"got {self.executor!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {self.n!r}")
        if self.workers < 1:
            raise InvalidArgumentError(f"workers must be >= 1, got {self.workers!r}")
        t = self.test_timeout_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not math.isfinite(t) or not 0 < t <= MAX_SECONDS):
            raise InvalidArgumentError(
                f"test_timeout_s must be a number of seconds in (0, {MAX_SECONDS:g}], got {t!r}")


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Sent after each recorded rollout."""

    done: int
    total: int
    passed: int
    rollout: Rollout


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a call to ``run_suite`` did."""

    run_dir: Path
    resumed: bool
    planned: int
    skipped: int
    executed: int
    passed: int
    infra_errors: int
    isolation: Isolation
    seconds: float
    test_path: TestPath | None = None
    """Where the hidden tests of this call ran (``fresh`` or ``warm``); None when none ran."""
