"""Planning a run (run/plan.py): jobs, seeds, per-agent n, resume, the run's identity."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reliabench.errors import InvalidArgumentError
from reliabench.run.plan import derive_seed, per_agent_n, plan_jobs, plan_run, run_identity
from reliabench.run.settings import RunSettings
from reliabench.sandbox import Limits
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, resolve_suite


@dataclass
class FakeAgent:
    name: str
    kind: str = "python"
    simulated: bool = False


AGENTS = [FakeAgent("a"), FakeAgent("b")]


@pytest.fixture(scope="module")
def suite() -> Suite:
    return resolve_suite("py30")


def _key(task: str, agent: str, r: int) -> tuple[str, str, int]:
    return RunStore.stored_key(task, agent, r)


def test_seeds_are_stable_and_distinct(suite: Suite) -> None:
    tasks = suite.tasks[:5]
    jobs = plan_jobs(tasks, AGENTS, {"a": 4, "b": 4}, 7, set())  # type: ignore[arg-type]
    seeds = [j.seed for j in jobs]
    assert len(seeds) == 5 * 2 * 4 == len(set(seeds))  # distinct across tasks, agents and indices
    again = plan_jobs(tasks, AGENTS, {"a": 4, "b": 4}, 7, set())  # type: ignore[arg-type]
    assert [j.seed for j in again] == seeds
    assert all(j.seed == derive_seed(7, j.task.id, j.agent.name, j.rollout) for j in jobs)
    other = plan_jobs(tasks, AGENTS, {"a": 4, "b": 4}, 8, set())  # type: ignore[arg-type]
    assert not set(seeds) & {j.seed for j in other}  # another run seed, other seeds
    assert all(0 <= s < 2**63 for s in seeds)  # fits SQLite's signed 64 bits


@given(st.integers(min_value=0, max_value=2**62), st.text(max_size=20), st.text(max_size=20),
       st.integers(min_value=0, max_value=10**6))
def test_a_seed_depends_only_on_its_job(run_seed: int, task: str, agent: str, rollout: int) -> None:
    s = derive_seed(run_seed, task, agent, rollout)
    assert s == derive_seed(run_seed, task, agent, rollout) and 0 <= s < 2**63
    assert s != derive_seed(run_seed, task, agent, rollout + 1)


def test_a_seed_does_not_depend_on_n_order_or_round(suite: Suite) -> None:
    tasks = suite.tasks[:3]
    small = {(j.task.id, j.agent.name, j.rollout): j.seed
             for j in plan_jobs(tasks, AGENTS, {"a": 2, "b": 2}, 1, set())}  # type: ignore[arg-type]
    large = {(j.task.id, j.agent.name, j.rollout): j.seed
             for j in plan_jobs(tasks[::-1], AGENTS[::-1], {"a": 6, "b": 3}, 1, set())}  # type: ignore[arg-type]
    assert all(large[k] == v for k, v in small.items())


def test_jobs_come_task_by_task_then_agent_then_index(suite: Suite) -> None:
    tasks = suite.tasks[:2]
    jobs = plan_jobs(tasks, AGENTS, {"a": 2, "b": 1}, 0, set())  # type: ignore[arg-type]
    assert [(j.task.id, j.agent.name, j.rollout) for j in jobs] == [
        (tasks[0].id, "a", 0), (tasks[0].id, "a", 1), (tasks[0].id, "b", 0),
        (tasks[1].id, "a", 0), (tasks[1].id, "a", 1), (tasks[1].id, "b", 0)]


def test_resume_skips_done_keys(suite: Suite) -> None:
    tasks = suite.tasks[:2]
    done = {_key(tasks[0].id, "a", 0), _key(tasks[1].id, "b", 2), _key(tasks[0].id, "a", 9)}
    plan = plan_run(tasks, AGENTS, RunSettings(n=3), done)  # type: ignore[arg-type]
    keys = {(j.task.id, j.agent.name, j.rollout) for j in plan.jobs}
    assert (tasks[0].id, "a", 0) not in keys and (tasks[1].id, "b", 2) not in keys
    assert plan.planned == 2 * 2 * 3 and len(plan.jobs) == 10
    assert plan.skipped == 2  # a done key outside the plan (index 9 > n) is not counted
    full = plan_run(tasks, AGENTS, RunSettings(n=3), {_key(t.id, a.name, r) for t in tasks  # type: ignore[arg-type]
                                                      for a in AGENTS for r in range(3)})
    assert full.jobs == () and full.skipped == full.planned == 12


def test_per_agent_n_of_an_adaptive_round(suite: Suite) -> None:
    tasks = suite.tasks[:3]
    plan = plan_run(tasks, AGENTS, RunSettings(n=2), set(), {"b": 5})  # type: ignore[arg-type]
    assert plan.per_agent == {"a": 2, "b": 5} and plan.planned == 3 * (2 + 5)
    # the next round only adds rollouts: those of the earlier round are done
    done = {_key(j.task.id, j.agent.name, j.rollout) for j in plan.jobs}
    nxt = plan_run(tasks, AGENTS, RunSettings(n=2), done, {"a": 4, "b": 5})  # type: ignore[arg-type]
    assert {(j.agent.name, j.rollout) for j in nxt.jobs} == {("a", 2), ("a", 3)}
    assert nxt.skipped == 3 * 7 and all(j.seed == derive_seed(0, j.task.id, j.agent.name, j.rollout)
                                        for j in nxt.jobs)


@pytest.mark.parametrize(("given_n", "message"), [
    ({"c": 3}, "n_per_agent: no agent 'c' in this run (agents: a, b)"),
    ({"a": 0}, "n_per_agent['a'] must be an integer >= 1, got 0"),
    ({"a": True}, "n_per_agent['a'] must be an integer >= 1, got True"),
    ({"a": 2.5}, "n_per_agent['a'] must be an integer >= 1, got 2.5"),
])
def test_per_agent_n_is_checked(given_n: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        per_agent_n(AGENTS, 3, given_n)  # type: ignore[arg-type]
    assert str(err.value) == message


def _hash(suite: Suite, settings: RunSettings, tasks: int = 3, agents: tuple[str, ...] = ("a", "b")) -> str:
    return run_identity(suite, suite.tasks[:tasks], agents, settings)[1]


def test_identity_ignores_what_does_not_change_the_rollouts(suite: Suite) -> None:
    base = RunSettings(n=3)
    h = _hash(suite, base)
    for same in (replace(base, n=10), replace(base, workers=4), replace(base, executor="ray"),
                 replace(base, test_workers="fresh"), replace(base, retest=2),
                 replace(base, security_policy={"threshold": "high"}), replace(base, ray_address="x:1")):
        assert _hash(suite, same) == h, same
    assert _hash(suite, base, agents=("b", "a")) == h  # the agents' order neither


def test_identity_changes_with_what_makes_the_run(suite: Suite) -> None:
    base = RunSettings(n=3)
    h = _hash(suite, base)
    others = [replace(base, seed=1), replace(base, sandbox="bubblewrap"), replace(base, scanners=("semgrep",)),
              replace(base, scanners=()), replace(base, limits=Limits(memory_bytes=1 << 28)),
              replace(base, test_timeout_s=5.0), replace(base, agents_config_hash="x")]
    hashes = {_hash(suite, o) for o in others} | {_hash(suite, base, tasks=2), _hash(suite, base, agents=("a",))}
    assert h not in hashes and len(hashes) == len(others) + 2


def test_identity_config_names_its_parts(suite: Suite) -> None:
    config, digest = run_identity(suite, suite.tasks[:2], ["b", "a"], RunSettings(n=3, seed=5))
    assert config["agents"] == ["a", "b"] and config["seed"] == 5
    assert config["tasks"] == sorted(t.id for t in suite.tasks[:2])
    assert config["suite_hash"] == suite.content_hash and len(digest) == 64
