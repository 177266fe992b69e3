"""Planning a run (run/plan.py): jobs, seeds, per-agent n, resume, the run's identity."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

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
                 replace(base, security_policy={"threshold": "high"}),
                 replace(base, executor_options={"ray": {"address": "x:1"}}), replace(base, suite="other"),
                 replace(base, workers=3, preflight=False, tasks=("t",), out=None)):
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


# Runs made by reliabench before the identity was marked on RunSettings' fields (the allowlist
# of run/plan.run_identity): their stored configuration and hash. The same settings must give
# the same hash, or those runs could no longer be resumed.
OLD_RUNS = [
    # tests/fixtures/report/run (made with `reliabench run py30 ... -n 3 --task run_git_log
    # --task interval_merge --test-timeout 3`)
    ({"suite_hash": "bd9b1c52321a5969368096b3e1a47de4c32d6bbb3ee18a9af61b7d5d259f747e",
      "agents": ["sim-flaky", "sim-hasty"], "tasks": ["interval_merge", "run_git_log"],
      "agents_config_hash": "aa009ed1942a26ccd508a0f2baebf8b466150068a93a4e1e6fb018f41a95e64f",
      "test_timeout_s": 3.0}, "2fcd83843676252c7fd6bc8a0334c7d46aadb32527610f0da40fa3eb9e2c9e63"),
    # made on main before this change: `reliabench run py30 --agents demo-agents.toml -n 3
    # --task run_git_log --task interval_merge --task roman_numerals --task reset_token`
    ({"suite_hash": "bd9b1c52321a5969368096b3e1a47de4c32d6bbb3ee18a9af61b7d5d259f747e",
      "agents": ["sim-careful", "sim-flaky", "sim-hasty"],
      "tasks": ["interval_merge", "reset_token", "roman_numerals", "run_git_log"],
      "agents_config_hash": "ef78bb0ffb8a68250f3e55f10899dbeb226efac1fa3f48f6592e1ee1877e5228",
      "test_timeout_s": None}, "f327ee9e051615249aa9f192dbe54e9328ca0bd4c0f46a78284de5a83b1eac87"),
]


@pytest.mark.parametrize(("old", "digest"), OLD_RUNS)
def test_runs_made_before_keep_their_identity(old: dict[str, object], digest: str) -> None:
    suite = SimpleNamespace(content_hash=old["suite_hash"])
    tasks = [SimpleNamespace(id=t) for t in old["tasks"]]  # type: ignore[attr-defined]
    settings = RunSettings(n=3, workers=2, agents_config_hash=str(old["agents_config_hash"]),
                           test_timeout_s=old["test_timeout_s"])  # type: ignore[arg-type]
    config, got = run_identity(suite, tasks, list(old["agents"]), settings)  # type: ignore[arg-type, call-overload]
    assert got == digest
    assert config["limits"] == {"cpu_s": 60.0, "memory_bytes": 2147483648, "max_procs": 64,
                                "file_size_bytes": 67108864, "output_bytes": 1048576}


def test_the_fixture_runs_stored_identity_is_recomputed_from_its_own_configuration() -> None:
    from pathlib import Path

    from reliabench.runs import RunDirectory

    with RunDirectory.open(Path(__file__).parents[1] / "fixtures" / "report" / "run") as run:
        info = run.info()
    cfg = info.config
    settings = RunSettings(n=int(cfg["n"]), seed=cfg["seed"], sandbox=cfg["sandbox"], scanners=tuple(cfg["scanners"]),
                           limits=Limits(**cfg["limits"]), agents_config_hash=cfg["agents_config_hash"],
                           test_timeout_s=cfg["test_timeout_s"])
    suite = SimpleNamespace(content_hash=cfg["suite_hash"])
    config, digest = run_identity(suite, [SimpleNamespace(id=t) for t in cfg["tasks"]], cfg["agents"],  # type: ignore[arg-type]
                                  settings)
    assert digest == info.config_hash
    assert all(cfg[k] == v for k, v in config.items())
