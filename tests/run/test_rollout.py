"""RolloutRunner: every path through one rollout ends in one consistent record + artifacts.

Nothing runs in a sandbox (the backend is only named: ``none``) and the hidden tests are
replaced by canned runs (their own tests are tests/test_hidden_tests.py
and the end-to-end runs), so each path here is fast; the in-process agent, the
workspace, the scan (Bandit), the snapshot and the diff are real.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import one_task_suite

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.errors import SandboxError
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.layer import HiddenTestRunner, TestRequest
from reliabench.records import TestOutcome, rollout_from_dict, rollout_to_dict
from reliabench.run import rollout as rollout_mod
from reliabench.run.artifacts import StoredArtifacts, write_artifacts
from reliabench.run.draft import Outcome
from reliabench.run.environments import TaskEnvironment
from reliabench.run.phase_slots import PhaseSlots
from reliabench.run.plan import Job
from reliabench.run.rollout import RolloutRunner
from reliabench.run.settings import RunSettings
from reliabench.run.test_paths import TestPaths
from reliabench.sandbox.none import NoSandboxBackend
from reliabench.scanners import get_scanner
from reliabench.tasks.suite import Task, load_suite

BAD = "import subprocess\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
OUTCOMES = (TestOutcome("test_main.py::test_x", "passed"),)


@dataclass
class Agent:
    """An in-process agent doing what it is told."""

    name: str = "scripted"
    kind: str = "python"
    simulated: bool = False
    write: dict[str, str] = field(default_factory=lambda: {"main.py": BAD})
    status: str = "completed"
    raises: bool = False
    calls: int = 0

    def run(self, request: AgentRequest) -> AgentResult:
        self.calls += 1
        if self.raises:
            raise RuntimeError("the agent blew up")
        for rel, text in self.write.items():
            (request.workspace / rel).write_text(text)
        return AgentResult(status=self.status, log=f"agent {self.name}", tokens=7,
                           meta={"infra_reason": "auth"} if self.status == "infra_error" else {})


@pytest.fixture
def task(tmp_path: Path) -> Task:
    root = one_task_suite(tmp_path, {"main.py": "def run(cmd):\n    raise NotImplementedError\n"},
                          {"test_main.py": "def test_x():\n    assert True\n"}, name="paths")
    return load_suite(root).task("t1")


class CannedTests:
    """A hidden-test runner that returns ``result``, raises ``raises``, counts calls."""

    path = "fresh"

    def __init__(self) -> None:
        self.result: HiddenTestRun = HiddenTestRun(OUTCOMES, "completed", None, False, (), False, "none", 0.5,
                                                   "1 passed")
        self.raises: BaseException | None = None
        self.calls = 0

    def collect(self, *args: Any, **kw: Any) -> tuple[TestOutcome, ...]:
        return OUTCOMES

    def run(self, request: TestRequest) -> HiddenTestRun:
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        return self.result

    def close(self) -> None:
        pass


class CannedPaths(TestPaths):
    """Every task gets the canned runner."""

    def __init__(self, canned: CannedTests) -> None:
        super().__init__()
        self.canned = canned

    def for_task(self, task: Task) -> HiddenTestRunner:
        return self.canned


@pytest.fixture
def tests() -> CannedTests:
    return CannedTests()


@pytest.fixture
def runner(tmp_path: Path, task: Task, tests: CannedTests) -> Iterator[RolloutRunner]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    backend = NoSandboxBackend()
    where = TaskEnvironment(backend, backend.prepare(task.environment))
    r = RolloutRunner(RunSettings(n=1, sandbox="none"), {task.id: where}, CannedPaths(tests),
                      [get_scanner("bandit")], {task.id: OUTCOMES}, scratch)
    r.backoff_scale = 0.0
    yield r
    assert list(scratch.iterdir()) == []  # every attempt cleans up its workspace


def _run(runner: RolloutRunner, task: Task, agent: Agent, tmp_path: Path) -> Outcome:
    job = Job(task, agent, 0, 99)  # type: ignore[arg-type]
    outcome = runner.run_one(job, 0)
    assert outcome is not None
    r, art = outcome
    # consistent whatever the path: the key, the seed, a record that round-trips, artifacts that
    # write and read back, kept files among the changed ones
    assert r.key == (task.id, agent.name, 0) and r.meta["seed"] == 99 and r.meta["agent_kind"] == "python"
    assert rollout_from_dict(rollout_to_dict(r)) == r
    adir = tmp_path / "art"
    write_artifacts(adir, art)
    stored = StoredArtifacts(adir)
    assert (stored.agent_log(), stored.diff(), stored.test_log()) == (art.agent_log, art.diff, art.test_log)
    assert stored.kept_files() == art.files
    assert set(art.files) <= set(r.meta.get("changed_files", ()))
    if r.status in ("infra_error", "test_error"):
        assert not r.findings and not art.files and (r.meta.get("reason") or r.meta.get("infra_reason"))
    return r, art


def test_completed(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    r, art = _run(runner, task, Agent(), tmp_path)
    assert r.status == "completed" and r.passes and r.tests == OUTCOMES
    assert {f.rule_id for f in r.findings} >= {"B602"} and r.meta["scanned"] == ["bandit"]
    assert r.meta["changed_files"] == ["main.py"] and r.meta["deleted_files"] == []
    assert r.meta["test_path"] == "fresh" and r.meta["test_runner"] == "pytest"
    assert art.files == {"main.py": BAD.encode()} and "+++ b/main.py" in art.diff
    assert art.agent_log == "agent scripted" and art.test_log == "1 passed"
    assert r.cost is not None and r.cost.tokens == 7 and r.cost.test_s == 0.5 and r.isolation == "none"


def test_no_change(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    r, art = _run(runner, task, Agent(write={}), tmp_path)
    assert r.status == "no_change" and r.meta["changed_files"] == [] and art.files == {} and art.diff == ""


def test_the_agent_raising_is_its_error(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    r, art = _run(runner, task, Agent(raises=True), tmp_path)
    assert r.status == "agent_error" and tests.calls == 1 and r.tests == OUTCOMES
    assert "the agent blew up" in art.agent_log


def test_the_agents_infrastructure(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    agent = Agent(status="infra_error")
    r, art = _run(runner, task, agent, tmp_path)
    assert r.status == "infra_error" and r.meta["infra_reason"] == "auth" and r.tests == ()
    assert tests.calls == 0 and art.diff == "" and art.test_log == ""
    # "auth" is not transient: no retry
    assert agent.calls == 1 and "infra_attempts" not in r.meta


def test_a_sandbox_failure_is_the_harness(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    tests.raises = SandboxError("no uid")
    agent = Agent()
    r, art = _run(runner, task, agent, tmp_path)
    assert r.status == "infra_error" and r.meta["infra_reason"] == "sandbox"
    assert r.meta["reason"] == "sandbox failed: no uid" and r.meta["infra_attempts"] == 3 == agent.calls
    assert "+++ b/main.py" in art.diff and r.meta["changed_files"] == ["main.py"]


def test_tests_that_do_not_start(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    tests.result = HiddenTestRun(OUTCOMES, "test_error", "pytest did not start", False, (), False, "bubblewrap",
                              0.25, "ImportError")
    r, art = _run(runner, task, Agent(), tmp_path)
    assert r.status == "infra_error" and r.meta["infra_reason"] == "test_error"
    assert r.tests == OUTCOMES and r.isolation == "bubblewrap" and art.test_log == "ImportError"


def test_a_timeout_of_the_tests(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path) -> None:
    tests.result = HiddenTestRun((TestOutcome("test_main.py::test_x", "failed"),), "timeout", "wall limit", False,
                              (), False, "none", 30.0, "")
    r, _ = _run(runner, task, Agent(), tmp_path)
    assert r.status == "timeout" and r.meta["reason"] == "wall limit" and not r.passes


def test_tamper_and_forgery_are_on_the_record(runner: RolloutRunner, task: Task, tests: CannedTests,
                                             tmp_path: Path) -> None:
    tests.result = HiddenTestRun(OUTCOMES, "completed", "forged lines", True, ("conftest.py",), True, "none", 0.1, "")
    r, _ = _run(runner, task, Agent(), tmp_path)
    assert r.tamper_suspected and r.meta["forged_outcomes"] and r.meta["tamper_files"] == ["conftest.py"]


def _raising(exc: BaseException) -> Callable[..., Any]:
    def broken(*args: Any, **kw: Any) -> Any:
        raise exc

    return broken


def test_before_the_agent_ran(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout_mod, "materialize", _raising(OSError("disk full")))
    agent = Agent()
    r, art = _run(runner, task, agent, tmp_path)
    assert r.status == "infra_error" and r.meta["infra_reason"] == "sandbox" and agent.calls == 0
    assert r.meta["reason"] == "harness error while preparing the workspace: OSError: disk full"
    assert r.meta["infra_attempts"] == 3 and art.agent_log == ""


def test_after_the_agent_ran(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout_mod, "workspace_diff", _raising(RecursionError("deep")))
    r, art = _run(runner, task, Agent(), tmp_path)
    assert r.status == "test_error" and tests.calls == 0
    assert r.meta["reason"] == "harness error while diffing the workspace: RecursionError: deep"
    assert art.agent_log == "agent scripted" and art.diff == "" and r.tests == ()


def test_the_last_line_of_defence(runner: RolloutRunner, task: Task, tests: CannedTests, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_attempt", _raising(KeyError("escaped")))
    r, art = _run(runner, task, Agent(), tmp_path)
    assert r.status == "test_error" and r.meta["reason"] == "harness error while running the rollout: KeyError: 'escaped'"
    assert art.agent_log == "" and r.cost is not None and r.cost.seconds == 0.0


def test_a_stopped_agent_runs_nothing(runner: RolloutRunner, task: Task, tests: CannedTests) -> None:
    agent = Agent()
    runner.stopped = lambda name: name == agent.name
    assert runner.run_one(Job(task, agent, 0, 1), 0) is None  # type: ignore[arg-type]
    assert agent.calls == 0


# --- phases on their own slots (reliabench.run.phase_slots) ------------------------------------


@dataclass
class SlotAgent(Agent):
    """Notes the slot its request names."""

    slots: list[int] = field(default_factory=list)

    def run(self, request: AgentRequest) -> AgentResult:
        self.slots.append(request.slot)
        return Agent.run(self, request)


class SlotTests(CannedTests):
    """Notes each test request's slot and which pools are held while the tests run."""

    def __init__(self, slots: PhaseSlots) -> None:
        super().__init__()
        self.phase_slots = slots
        self.seen: list[tuple[int, int, int]] = []  # (slot, free agent slots, free test slots)

    def run(self, request: TestRequest) -> HiddenTestRun:
        self.seen.append((request.slot, self.phase_slots._agents.qsize(), self.phase_slots._tests.qsize()))
        return super().run(request)


def test_a_host_rollout_runs_its_agent_on_an_agent_slot_and_its_tests_on_a_test_slot(
        runner: RolloutRunner, task: Task) -> None:
    slots = PhaseSlots(2, 3)
    canned = SlotTests(slots)
    runner.paths = CannedPaths(canned)
    agent = SlotAgent()
    outcome = runner.run_one(Job(task, agent, 0, 99), slots)  # type: ignore[arg-type]
    assert outcome is not None and outcome[0].status == "completed"
    (agent_slot,) = agent.slots
    ((test_slot, free_agents, free_tests),) = canned.seen
    assert agent_slot in (2, 3, 4) and test_slot in (0, 1)
    assert free_agents == 3 and free_tests == 1  # the agent slot went back before the tests
    assert slots._agents.qsize() == 3 and slots._tests.qsize() == 2  # and everything after


def test_a_same_environment_rollout_holds_both_and_runs_on_the_test_slot(
        tmp_path: Path, task: Task) -> None:
    same = replace(task, environment=replace(task.environment, tests="same"))
    slots = PhaseSlots(1, 2)
    canned = SlotTests(slots)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    backend = NoSandboxBackend()
    where = TaskEnvironment(backend, backend.prepare(task.environment))
    r = RolloutRunner(RunSettings(n=1, sandbox="none"), {task.id: where}, CannedPaths(canned),
                      [], {task.id: OUTCOMES}, scratch)
    agent = SlotAgent()
    outcome = r.run_one(Job(same, agent, 0, 99), slots)  # type: ignore[arg-type]
    assert outcome is not None and outcome[0].status == "completed"
    assert agent.slots == [0] and canned.seen == [(0, 1, 0)]  # one agent place held, the test slot too
    assert slots._agents.qsize() == 2 and slots._tests.qsize() == 1


def test_an_agent_stopped_while_its_rollout_waited_for_a_slot_runs_nothing(
        runner: RolloutRunner, task: Task, tests: CannedTests) -> None:
    agent = SlotAgent()
    slots = PhaseSlots(1, 1)
    calls = {"n": 0}

    def stopped(name: str) -> bool:  # not stopped when the rollout starts; stopped once it has a slot
        calls["n"] += 1
        return calls["n"] > 1

    runner.stopped = stopped
    assert runner.run_one(Job(task, agent, 0, 99), slots) is None  # type: ignore[arg-type]
    assert agent.slots == [] and tests.calls == 0


def test_a_rollout_that_gets_its_slot_after_the_executor_stopped_runs_nothing(
        runner: RolloutRunner, task: Task, tests: CannedTests) -> None:
    agent = SlotAgent()
    slots = PhaseSlots(1, 1)
    slots.close()
    assert runner.run_one(Job(task, agent, 0, 99), slots) is None  # type: ignore[arg-type]
    assert agent.slots == [] and tests.calls == 0 and slots._agents.qsize() == 1
