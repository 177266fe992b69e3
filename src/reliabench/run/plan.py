"""Planning a run: its jobs (task, agent, rollout index), their seeds and the run's identity.

A rollout's seed depends only on (run seed, task, agent, rollout index), so the same job gets
the same seed on any machine, in any order, on a resume, and in an adaptive run's later rounds.
:func:`plan_run` is what ``run_suite`` asks before it runs anything: the rollouts per task of
each agent (the run's n, or an adaptive round's per-agent n), the jobs not yet recorded, and
how many the run holds when complete.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reliabench.agents.base import Agent
from reliabench.errors import InvalidArgumentError
from reliabench.run.settings import RunSettings, identity_of
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, Task

__all__ = ["Job", "RunPlan", "derive_seed", "per_agent_n", "plan_jobs", "plan_run", "run_identity"]


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


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a call to ``run_suite`` has to do.

    Attributes:
        jobs: The rollouts not yet recorded, in run order (task, agent, rollout index).
        per_agent: Rollouts per task of each agent.
        planned: Rollouts of the complete run: tasks x the sum of ``per_agent``.
    """

    jobs: tuple[Job, ...]
    per_agent: Mapping[str, int]
    planned: int

    @property
    def skipped(self) -> int:
        """Planned rollouts already recorded (a resume skips them)."""
        return self.planned - len(self.jobs)


def per_agent_n(agents: Sequence[Agent], n: int,
                n_per_agent: Mapping[str, int] | None = None) -> dict[str, int]:
    """Rollouts per task of each agent: ``n_per_agent[name]`` where given, else ``n``.

    Examples:
        >>> from types import SimpleNamespace as A
        >>> per_agent_n([A(name="a"), A(name="b")], 5, {"b": 12})
        {'a': 5, 'b': 12}

    Raises:
        InvalidArgumentError: ``n_per_agent`` names an agent not in ``agents``, or gives a
            count that is not an integer >= 1.
    """
    names = [a.name for a in agents]
    for name, count in (n_per_agent or {}).items():
        if name not in names:
            raise InvalidArgumentError(f"n_per_agent: no agent {name!r} in this run "
                                       f"(agents: {', '.join(names)})")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidArgumentError(f"n_per_agent[{name!r}] must be an integer >= 1, got {count!r}")
    return {name: (n_per_agent or {}).get(name, n) for name in names}


def plan_run(tasks: Sequence[Task], agents: Sequence[Agent], settings: RunSettings,
             done: Collection[tuple[str, str, int]],
             n_per_agent: Mapping[str, int] | None = None) -> RunPlan:
    """The plan of a run of ``tasks`` x ``agents``: per-agent n, the jobs still to run, the total.

    Args:
        tasks: The run's tasks.
        agents: The run's agents (unique names).
        settings: n and the run seed.
        done: Stored keys (``RunStore.stored_key``) of the rollouts already recorded.
        n_per_agent: Rollouts per task of these agents instead of ``settings.n`` (an
            adaptive run's round).
    """
    per_agent = per_agent_n(agents, settings.n, n_per_agent)
    jobs = plan_jobs(tasks, agents, per_agent, settings.seed, done)
    return RunPlan(tuple(jobs), per_agent, len(tasks) * sum(per_agent.values()))


def run_identity(suite: Suite, tasks: Sequence[Task], agent_names: Sequence[str],
                 settings: RunSettings) -> tuple[dict[str, Any], str]:
    """The configuration that makes a run what it is, and its hash.

    A resume must match it. It holds the suite's content hash, the agents' names and the task
    ids, and the fields of ``settings`` marked as identity (``run.settings.identity_of``);
    the others -- n, workers, the executor, the test path, the security policy -- change
    neither which rollouts exist nor their verdicts.

    The hash is that of ``repr`` of the sorted items: runs made by earlier versions keep
    their hash for the same settings (``tests/run/test_plan.py`` pins it on stored runs).
    """
    config: dict[str, Any] = {
        "suite_hash": suite.content_hash,
        "agents": sorted(agent_names),
        "tasks": sorted(t.id for t in tasks),
        **identity_of(settings),
    }
    return config, hashlib.sha256(repr(sorted(config.items())).encode()).hexdigest()
