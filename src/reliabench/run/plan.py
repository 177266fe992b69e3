"""Planning a run: its jobs (task, agent, rollout index), their seeds and the run's identity.

A rollout's seed depends only on (run seed, task, agent, rollout index), so the same job gets
the same seed on any machine, in any order, on a resume, and in an adaptive run's later rounds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reliabench.agents.base import Agent
from reliabench.run.settings import RunSettings
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, Task

__all__ = ["Job", "derive_seed", "plan_jobs", "run_identity"]


def derive_seed(run_seed: int, task_id: str, agent: str, rollout: int) -> int:
    """A per-rollout seed from (run seed, task, agent, rollout): stable across runs and machines.

    Examples:
        >>> derive_seed(0, "t", "a", 1) == derive_seed(0, "t", "a", 1) != derive_seed(0, "t", "a", 2)
        True
    """
    h = hashlib.sha256(f"{run_seed}\0{task_id}\0{agent}\0{rollout}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class Job:
    """One rollout to run: a task, an agent, the rollout index and its seed."""

    task: Task
    agent: Agent
    rollout: int
    seed: int


def plan_jobs(tasks: Sequence[Task], agents: Sequence[Agent], per_agent: Mapping[str, int],
              seed: int, done: Collection[tuple[str, str, int]]) -> list[Job]:
    """The jobs still to run: every (task, agent, rollout < per_agent[agent]) not in ``done``.

    Ordered task by task, then agent, then rollout index (a run's natural order).
    """
    return [
        Job(task, agent, r, derive_seed(seed, task.id, agent.name, r))
        for task in tasks for agent in agents for r in range(per_agent[agent.name])
        if RunStore.stored_key(task.id, agent.name, r) not in done
    ]


def run_identity(suite: Suite, tasks: Sequence[Task], agent_names: Sequence[str],
                 settings: RunSettings) -> tuple[dict[str, Any], str]:
    """The configuration that makes a run what it is, and its hash.

    A resume must match it; n, workers, the executor, the test path and the security policy
    are not part of it (they change neither which rollouts exist nor their verdicts).
    """
    config: dict[str, Any] = {
        "suite_hash": suite.content_hash,
        "agents": sorted(agent_names),
        "agents_config_hash": settings.agents_config_hash,
        "seed": settings.seed,
        "sandbox": settings.sandbox,
        "scanners": list(settings.scanners),
        "limits": {k: getattr(settings.limits, k) for k in
                   ("cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "output_bytes")},
        "tasks": sorted(t.id for t in tasks),
        "test_timeout_s": settings.test_timeout_s,
    }
    return config, hashlib.sha256(repr(sorted(config.items())).encode()).hexdigest()
