"""RolloutDraft: each ending makes one consistent record and its artifacts (run/draft.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from reliabench.agents.base import AgentResult
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.records import Finding, Rollout, ScanError, TestOutcome, rollout_from_dict, rollout_to_dict
from reliabench.run import artifacts
from reliabench.run.artifacts import ArtifactBudget, Snapshot
from reliabench.run.draft import Outcome, RolloutDraft
from reliabench.run.plan import Job
from reliabench.scanners.changes import ChangeSet
from reliabench.tasks.suite import Task, resolve_suite

FINDING = Finding("bandit", "B307", "medium", "high", 78, "new.py", 1, "eval")
SCAN_ERROR = ScanError("bandit", "odd.py", "syntax error: not scanned")
CHANGES = ChangeSet(added=("new.py",), modified=("old.py",), deleted=("gone.py",))
OUTCOMES = (TestOutcome("t.py::test_a", "passed"), TestOutcome("t.py::test_b", "failed"))


@dataclass
class FakeAgent:
    name: str = "fake"
    kind: str = "python"
    simulated: bool = False


def _task() -> Task:
    return resolve_suite("py30").tasks[0]


def _job(simulated: bool = False) -> Job:
    return Job(_task(), FakeAgent(simulated=simulated), 3, 12345)  # type: ignore[arg-type]


def _hidden(status: str = "completed", **kw: object) -> HiddenTestRun:
    values: dict[str, object] = dict(outcomes=OUTCOMES, status=status, reason=None, tamper_suspected=False,
                                      tamper_files=(), forged=False, isolation="bubblewrap", seconds=1.25,
                                      log="pytest output")
    values.update(kw)
    return HiddenTestRun(**values)  # type: ignore[arg-type]


def _full_draft() -> RolloutDraft:
    d = RolloutDraft.start(_job(), "namespaces")
    d.agent_ran(AgentResult(status="completed", tokens=30, usd=0.5, log="agent log", meta={"choice": "x"},
                            tokens_in=10, tokens_out=20), 2.5)
    d.scanned((FINDING,), (SCAN_ERROR,), CHANGES, ["bandit"])
    d.kept(Snapshot({"new.py": b"eval(input())\n"}, (("old.py", "over the budget"),)))
    d.diff = "--- a/old.py\n+++ b/old.py\n"
    return d


def _consistent(outcome: Outcome, job: Job) -> Rollout:
    """What holds for every ending: the key, the seed, a record that round-trips, files named."""
    r, art = outcome
    assert (r.task_id, r.agent, r.rollout) == (job.task.id, job.agent.name, job.rollout)
    assert r.meta["seed"] == job.seed and r.meta["agent_kind"] == job.agent.kind
    assert r.simulated == job.agent.simulated
    assert rollout_from_dict(rollout_to_dict(r)) == r
    assert set(art.files) <= set(r.meta.get("changed_files", ()))
    assert {rel for rel, _ in art.omitted} <= set(r.meta.get("artifacts_omitted", ()))
    assert r.cost is not None and r.cost.agent_s is not None
    assert r.cost.seconds == round(r.cost.agent_s + (r.cost.test_s or 0.0), 3)
    if r.status == "infra_error" or r.status == "test_error":
        assert not r.findings and not r.scan_errors and not art.files and not art.omitted
        assert r.meta["reason"]
    return r


def test_completed_keeps_every_stage() -> None:
    d = _full_draft()
    d.tested(_hidden(tamper_files=("conftest.py",), forged=True, reason="forged lines seen"))
    r, art = d.completed()
    _consistent((r, art), d.job)
    assert r.status == "completed" and r.tests == OUTCOMES and not r.passes
    assert r.findings == (FINDING,) and r.scan_errors == (SCAN_ERROR,)
    assert r.isolation == "bubblewrap"  # what the tests ran under, not the backend's name
    assert (r.cost.tokens, r.cost.usd, r.cost.tokens_in, r.cost.tokens_out) == (30, 0.5, 10, 20)
    assert (r.cost.agent_s, r.cost.test_s, r.cost.seconds) == (2.5, 1.25, 3.75)
    assert r.meta["changed_files"] == ["gone.py", "new.py", "old.py"]
    assert r.meta["deleted_files"] == ["gone.py"] and r.meta["scanned"] == ["bandit"]
    assert r.meta["artifacts_omitted"] == ["old.py"] and r.meta["choice"] == "x"
    assert r.meta["forged_outcomes"] is True and r.meta["tamper_files"] == ["conftest.py"]
    assert r.meta["reason"] == "forged lines seen"
    assert art.agent_log == "agent log" and art.test_log == "pytest output"
    assert art.diff.startswith("--- a/old.py") and art.files == {"new.py": b"eval(input())\n"}
    assert art.omitted == (("old.py", "over the budget"),)


@pytest.mark.parametrize(("agent_status", "changes", "tests_status", "expected"), [
    ("completed", CHANGES, "completed", "completed"),
    ("completed", ChangeSet(), "completed", "no_change"),
    ("completed", CHANGES, "timeout", "timeout"),
    ("completed", ChangeSet(), "timeout", "no_change"),  # nothing changed says more than a slow test
    ("agent_error", CHANGES, "timeout", "agent_error"),
    ("timeout", ChangeSet(), "completed", "timeout"),
])
def test_completed_status(agent_status: str, changes: ChangeSet, tests_status: str, expected: str) -> None:
    d = RolloutDraft.start(_job(), "none")
    d.agent_ran(AgentResult(status=agent_status), 0.1)
    d.scanned((), (), changes, [])
    d.tested(_hidden(tests_status))
    r = _consistent(d.completed(), d.job)
    assert r.status == expected


def test_completed_needs_the_agent_and_the_tests() -> None:
    d = RolloutDraft.start(_job(), "none")
    with pytest.raises(ValueError, match="agent's result and the hidden-test run"):
        d.completed()
    d.agent_ran(AgentResult(), 0.0)
    with pytest.raises(ValueError, match="hidden-test run"):
        d.completed()


def test_infra_error_keeps_the_reason_and_the_diff_not_the_scan() -> None:
    d = _full_draft()
    r, art = d.infra_error("sandbox", "sandbox failed: boom")
    _consistent((r, art), d.job)
    assert r.status == "infra_error" and r.tests == () and r.isolation == "namespaces"
    assert r.meta["infra_reason"] == "sandbox" and r.meta["reason"] == "sandbox failed: boom"
    assert art.diff.startswith("--- a/old.py") and art.agent_log == "agent log" and art.test_log == ""
    assert r.cost.test_s is None and r.cost.agent_s == 2.5


def test_infra_error_with_the_test_run_that_says_why() -> None:
    d = _full_draft()
    hidden = _hidden("test_error", reason="pytest did not start", isolation="bubblewrap")
    r, art = d.infra_error("test_error", hidden.reason, hidden=hidden)
    _consistent((r, art), d.job)
    assert r.tests == OUTCOMES and r.isolation == "bubblewrap" and art.test_log == "pytest output"
    assert r.meta["reason"] == "pytest did not start" and r.cost.test_s == 1.25


def test_infra_error_before_the_agent_ran() -> None:
    d = RolloutDraft.start(_job(), "bubblewrap")
    r, art = d.infra_error("sandbox", "harness error while preparing the workspace: OSError: x")
    _consistent((r, art), d.job)
    assert r.cost.seconds == 0.0 and r.cost.tokens is None and art.agent_log == "" and art.diff == ""


@pytest.mark.parametrize(("given", "expected"), [({}, "agent_infra"), ({"infra_reason": "auth"}, "auth")])
def test_agent_infra_error_keeps_the_agents_reason(given: dict[str, str], expected: str) -> None:
    d = RolloutDraft.start(_job(), "none")
    d.agent_ran(AgentResult(status="infra_error", log="401", meta=dict(given)), 0.2)
    r, art = d.agent_infra_error()
    assert r.status == "infra_error" and r.meta["infra_reason"] == expected and art.agent_log == "401"
    assert "reason" not in r.meta  # the agent's log says why; nothing invented


def test_harness_error_is_the_rollouts_failure_and_drops_the_tests() -> None:
    d = _full_draft()
    d.tested(_hidden())
    r, art = d.harness_error("re-testing the rollout", RecursionError("x" * 2000))
    _consistent((r, art), d.job)
    assert r.status == "test_error" and r.tests == () and not r.passes
    assert r.meta["reason"].startswith("harness error while re-testing the rollout: RecursionError: x")
    assert len(r.meta["reason"]) == len("harness error while re-testing the rollout: ") + 500
    assert art.diff and art.test_log == "" and r.cost.test_s is None


def test_harness_error_without_an_agent_result() -> None:
    d = RolloutDraft.start(_job(simulated=True), "none")
    r, _ = d.harness_error("running the rollout", ValueError("boom"))
    _consistent((r, _), d.job)
    assert r.status == "test_error" and r.simulated
    assert r.meta["reason"] == "harness error while running the rollout: ValueError: boom"


def test_the_current_budget_bounds_every_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "DEFAULT_BUDGET", ArtifactBudget(max_log_bytes=10, max_diff_bytes=10,
                                                                     max_findings=1, max_listed=1))
    d = _full_draft()
    d.result = AgentResult(log="L" * 100)
    d.findings = (FINDING, FINDING)
    d.tested(_hidden(log="T" * 100))
    r, art = d.completed()
    assert "cut by reliabench" in art.agent_log and "cut by reliabench" in art.test_log
    assert "cut by reliabench" in art.diff
    assert len(r.findings) == 1 and r.meta["findings_total"] == 2
    assert r.meta["changed_files"] == ["gone.py"] and r.meta["changed_files_total"] == 3


def test_an_outcome_writes_and_reads_back(tmp_path: Path) -> None:
    d = _full_draft()
    d.tested(_hidden())
    _, art = d.completed()
    left_out = artifacts.write_artifacts(tmp_path / "a", art)
    assert left_out == art.omitted
    stored = artifacts.StoredArtifacts(tmp_path / "a")
    assert stored.agent_log() == art.agent_log and stored.diff() == art.diff
    assert stored.test_log() == art.test_log and stored.kept_files() == art.files


def test_undeclared_skips_flag_the_record() -> None:
    d = _full_draft()
    d.tested(_hidden(undeclared_skips=("t.py::test_b",), reason="1 test(s) skipped or xfailed ..."))
    r, _ = d.completed()
    assert r.meta["undeclared_skips"] == ["t.py::test_b"] and not r.passes
    assert rollout_from_dict(rollout_to_dict(r)) == r  # the record stays readable
    d = _full_draft()
    d.tested(_hidden())
    assert "undeclared_skips" not in d.completed()[0].meta
