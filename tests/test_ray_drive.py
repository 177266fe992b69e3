"""The Ray driver loop against a scripted fake Ray: actors die, come back or not; no rollout is
recorded twice and none is lost silently (the two-node test does the same with real Ray)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from reliabench.errors import InvalidArgumentError, SandboxError, UsageError, WorkersLostError
from reliabench.records import Rollout
from reliabench.run.executors import ray as ray_executor
from reliabench.run.executors.ray import MAX_ATTEMPTS, WorkerStatus, _drive, _Pool
from reliabench.run.plan import Job
from reliabench.run.rollout import Outcome


class _Exceptions:
    class RayActorError(Exception):
        pass

    class ActorDiedError(RayActorError):
        pass

    class ActorUnavailableError(RayActorError):
        pass

    class ObjectLostError(Exception):
        pass

    class WorkerCrashedError(Exception):
        pass

    class NodeDiedError(Exception):
        pass

    class ActorUnschedulableError(Exception):
        pass

    class LocalRayletDiedError(Exception):
        pass


@dataclass(eq=False)  # hashable by identity, like ObjectRefs
class _Ref:
    value: Any = None
    error: BaseException | None = None


class _FakeRay:
    exceptions = _Exceptions

    def wait(self, refs: list[_Ref], num_returns: int = 1, timeout: float | None = None
             ) -> tuple[list[_Ref], list[_Ref]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: _Ref) -> Any:
        if ref.error is not None:
            raise ref.error
        return ref.value


@dataclass
class _Actor:
    """Dies when ``kills(job key)`` says so; comes back after ``down_for`` failed pings (None: never)."""

    index: int
    kills: Callable[[tuple[str, str, int]], bool] = lambda key: False
    down_for: int | None = 2
    problem: str | None = None
    dead_pings: int = 0
    dead: bool = False
    ran: list[tuple[str, str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.run = SimpleNamespace(remote=self._run)
        self.ready = SimpleNamespace(remote=self._ready)

    def _run(self, task: str, agent: str, rollout: int, seed: int) -> _Ref:
        key = (task, agent, rollout)
        if self.dead:
            return _Ref(error=_Exceptions.ActorUnavailableError("down"))
        self.ran.append(key)
        if self.kills(key):
            self.dead, self.dead_pings = True, 0
            return _Ref(error=_Exceptions.ActorDiedError(f"actor {self.index} died"))
        return _Ref(value=(Rollout(task, agent, rollout, meta={"seed": seed}), "artifacts"))

    def _ready(self) -> _Ref:
        if self.dead:
            if self.down_for is None or self.dead_pings < self.down_for:
                self.dead_pings += 1
                return _Ref(error=_Exceptions.ActorUnavailableError("restarting"))
            self.dead = False
        return _Ref(value=WorkerStatus(f"10.0.0.{self.index}", f"node{self.index}", self.problem,
                                       usage=True))


def _jobs(n: int) -> list[Job]:
    task, agent = SimpleNamespace(id="t"), SimpleNamespace(name="a")
    return [Job(task, agent, i, 100 + i) for i in range(n)]  # type: ignore[arg-type]


def _run(actors: list[_Actor], n: int, stop: threading.Event | None = None,
         on_record: Callable[[int], None] | None = None) -> list[Rollout]:
    ray = _FakeRay()
    got: list[Rollout] = []

    def record(outcome: Outcome | None) -> None:
        assert outcome is not None
        got.append(outcome[0])
        if on_record is not None:
            on_record(len(got))

    _drive(ray, _Pool(ray, actors), iter(_jobs(n)), record, stop)
    return got


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_executor, "_PING_RETRY_S", 0.0)
    monkeypatch.setattr(ray_executor, "RESTART_WAIT_S", 0.2)


def test_a_rollout_whose_actor_died_runs_again_and_is_recorded_once() -> None:
    dies_once = {("t", "a", 3)}

    def kills(key: tuple[str, str, int]) -> bool:
        if key in dies_once:
            dies_once.discard(key)
            return True
        return False

    actors = [_Actor(0), _Actor(1, kills=kills)]
    got = _run(actors, 10)
    assert Counter(r.key for r in got) == Counter(("t", "a", i) for i in range(10))
    # the one that killed the actor, and any queued behind it on that actor, ran again once
    again = {r.rollout: r.meta["ray_attempts"] for r in got if "ray_attempts" in r.meta}
    assert again.get(3) == 2 and set(again.values()) == {2}
    assert all(r.meta["seed"] == 100 + r.rollout for r in got)  # the same job, the same seed
    assert actors[1].ran.count(("t", "a", 3)) + actors[0].ran.count(("t", "a", 3)) == 2


def test_every_actor_gone_stops_resumably_counting_what_did_not_run() -> None:
    actors = [_Actor(i, kills=lambda key: key[2] >= 4, down_for=None) for i in range(2)]
    with pytest.raises(WorkersLostError, match=r"^(\d+) rollout\(s\) not run: the Ray workers were lost") as info:
        _run(actors, 10)
    not_run = int(str(info.value).split(" ")[0])
    recorded = sum(1 for a in actors for k in a.ran if k[2] < 4)
    assert recorded == 4 and not_run == 10 - recorded
    assert "run the same command again to resume" in str(info.value)


def test_a_rollout_that_kills_every_actor_is_given_up_after_max_attempts() -> None:
    actors = [_Actor(i, kills=lambda key: key[2] == 2, down_for=1) for i in range(2)]
    with pytest.raises(WorkersLostError, match=rf"1 rollout\(s\) not run: .*rollout t/a/2 lost its "
                                               rf"worker {MAX_ATTEMPTS} times"):
        _run(actors, 6)
    ran = Counter(k for a in actors for k in a.ran)
    assert ran[("t", "a", 2)] == MAX_ATTEMPTS
    assert all(ran[("t", "a", i)] == 1 for i in (0, 1, 3, 4, 5))


def test_recorded_rollouts_are_unique_when_one_never_comes_back() -> None:
    actors = [_Actor(0), _Actor(1, kills=lambda key: key[2] == 1, down_for=None)]
    got = _run(actors, 8)
    assert sorted(r.rollout for r in got) == list(range(8))


def test_a_node_problem_is_one_line_naming_the_node() -> None:
    actors = [_Actor(0), _Actor(1, problem="environment variable KEY is not set")]
    with pytest.raises(UsageError, match=r"^Ray worker on node 10\.0\.0\.1: environment variable KEY"):
        _run(actors, 4)


def test_infra_problems_are_sandbox_errors() -> None:
    actor = _Actor(0, problem="the shipped file suite/x differs after unpacking")
    actor.ready = SimpleNamespace(remote=lambda: _Ref(value=WorkerStatus("10.0.0.9", "n", actor.problem)))
    with pytest.raises(SandboxError, match=r"on node 10\.0\.0\.9: the shipped file suite/x differs"):
        _run([actor], 1)


def test_stop_leaves_the_rest_for_the_resume_without_error() -> None:
    stop = threading.Event()
    got = _run([_Actor(0)], 10, stop, on_record=lambda k: stop.set() if k == 1 else None)
    assert 1 <= len(got) <= 2  # what was in flight when it was asked to stop


def test_the_executor_needs_the_agents_file() -> None:
    context = SimpleNamespace(agents_file=None, warm=None)
    with pytest.raises(InvalidArgumentError, match="needs agents_file"):
        ray_executor.RAY_EXECUTOR.run([], context)  # type: ignore[arg-type]
    assert ray_executor.RAY_EXECUTOR.name == "ray"
