"""One rollout: a fresh workspace, the agent, a scan of its changes, the hidden tests, a record.

:class:`RolloutRunner` runs single rollouts from shared, read-only state; the executor
(:mod:`reliabench.run.executors`) chooses the sandbox slot and the store's single writer records
the result. Nothing raised inside a rollout escapes it (docs/threat-model.md).
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.agents.infra import backoff_delay, backoff_scale, is_transient
from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.fresh import HiddenTestRun, run_hidden_tests
from reliabench.hidden_tests.stdio import run_stdio_tests
from reliabench.meta_keys import (
    AGENT_KIND,
    ARTIFACTS_OMITTED,
    CHANGED_FILES,
    DELETED_FILES,
    FORGED_OUTCOMES,
    INFRA_ATTEMPTS,
    INFRA_REASON,
    REASON,
    SCANNED,
    SEED,
    TAMPER_FILES,
    TEST_PATH,
    TEST_RUNNER,
)
from reliabench.records import Cost, Finding, Rollout, RolloutStatus, ScanError, TestOutcome
from reliabench.run import artifacts as _artifacts
from reliabench.run.artifacts import RolloutArtifacts, cap_record, cap_text, take_snapshot
from reliabench.run.plan import Job
from reliabench.run.settings import RunSettings
from reliabench.sandbox import SandboxBackend
from reliabench.scanners import Scanner, workspace_diff
from reliabench.scanners.workspace import scan_changes
from reliabench.tasks.suite import materialize
from reliabench.warm.hidden import WarmTests

__all__ = ["INFRA_RETRIES", "Outcome", "RolloutRunner"]

INFRA_RETRIES = 2


Outcome = tuple[Rollout, RolloutArtifacts]


class RolloutRunner:
    """Runs single rollouts from shared, read-only state; the caller chooses the sandbox slot."""

    def __init__(self, settings: RunSettings, backend: SandboxBackend,
                 scanners: Sequence[Scanner], expected: dict[str, tuple[TestOutcome, ...]],
                 scratch: Path, warm: WarmTests | None = None) -> None:
        self.settings = settings
        self.warm = warm
        self.backend = backend
        self.scanners = scanners
        self.expected = expected
        self.scratch = scratch
        self.stopped: Callable[[str], bool] = lambda agent: False
        self.backoff_scale = backoff_scale()

    def _call_agent(self, job: Job, workspace: Path, prompt_file: Path,
                    slot: int) -> tuple[AgentResult, float]:
        request = AgentRequest(
            task_id=job.task.id, prompt=job.task.prompt, workspace=workspace, seed=job.seed,
            rollout=job.rollout, timeout_s=job.task.timeout_s * 10, feedback_dir=job.task.feedback_dir,
            solution_dir=job.task.solution_dir if job.agent.simulated else None,
            variants=tuple((v.name, v.dir) for v in job.task.variants) if job.agent.simulated else (),
            prompt_file=prompt_file,
            slot=slot,
        )
        t0 = time.perf_counter()
        try:
            result = job.agent.run(request)
        except Exception:
            result = AgentResult(status="agent_error", log="agent raised:\n" + traceback.format_exc())
        return result, time.perf_counter() - t0

    def run_one(self, job: Job, slot: int) -> Outcome | None:
        """One rollout, retried on transient infrastructure failures.

        Up to ``INFRA_RETRIES`` retries, with exponential back-off
        (:func:`reliabench.agents.infra.backoff_delay`). Returns None, without running
        anything, when the job's agent was stopped early. Never raises (``Exception``):
        whatever escapes an attempt becomes that rollout's record, so one rollout can
        neither abort the run nor make a resume loop on it.
        """
        if self.stopped(job.agent.name):
            return None
        attempts = 0
        while True:
            try:
                rollout, art = self._attempt(job, slot)
            except Exception as exc:  # the last line of defence
                return self._harness_failure(job, "running the rollout", exc)
            attempts += 1
            reason = rollout.meta.get(INFRA_REASON)
            if (rollout.status != "infra_error" or attempts > INFRA_RETRIES
                    or not is_transient(reason) or self.stopped(job.agent.name)):
                break
            time.sleep(backoff_delay(attempts) * self.backoff_scale)
        if rollout.status == "infra_error" and attempts > 1:
            rollout = replace(rollout, meta={**rollout.meta, INFRA_ATTEMPTS: attempts})
        return rollout, art

    def _harness_failure(self, job: Job, stage: str, exc: BaseException,
                         meta: dict[str, Any] | None = None, result: AgentResult | None = None,
                         agent_seconds: float = 0.0, diff: str = "") -> Outcome:
        """The rollout's own failure (``test_error``): something raised after the agent ran."""
        detail = f"{type(exc).__name__}: {exc}"
        meta = {**(meta or {SEED: job.seed, AGENT_KIND: job.agent.kind}),
                REASON: f"harness error while {stage}: {detail[:500]}"}
        return self._record(job, "test_error", (), meta, result or AgentResult(status="agent_error"),
                            agent_seconds, None, (), (), diff)

    def _attempt(self, job: Job, slot: int) -> Outcome:
        """One attempt of one rollout.

        Before the agent runs, a failure is the harness's (``infra_error``, retried). After
        it ran, anything raised while examining, scanning, diffing or testing its workspace
        is that rollout's failure (``test_error``, see ``_harness_failure``): the agent's
        files may be what broke the harness, and only the harness may exclude a rollout.
        """
        tmp = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
        stage = "preparing the workspace"
        meta: dict[str, Any] = {SEED: job.seed, AGENT_KIND: job.agent.kind}
        result: AgentResult | None = None
        agent_seconds = 0.0
        diff = ""
        try:
            os.chmod(tmp, 0o711)
            workspace = tmp / "workspace"
            materialize(workspace, [job.task.workspace_dir])
            prompt_file = tmp / "prompt.md"
            prompt_file.write_text(job.task.prompt, encoding="utf-8")
            os.chmod(prompt_file, 0o644)
            stage = "running the agent"
            result, agent_seconds = self._call_agent(job, workspace, prompt_file, slot)
            meta.update(result.meta)
            if result.status == "infra_error":  # the agent produced nothing: no tests
                meta.setdefault(INFRA_REASON, "agent_infra")
                return self._record(job, "infra_error", (), meta, result, agent_seconds, None, (), (), "")
            stage = "scanning the workspace"
            findings, scan_errors, changes = scan_changes(self.scanners, job.task.workspace_dir, workspace)
            changed = sorted({*changes.added, *changes.modified, *changes.deleted})
            stage = "keeping the agent's files"
            snap = take_snapshot(workspace, changes.files, _artifacts.DEFAULT_BUDGET)
            meta[CHANGED_FILES] = list(changed)
            meta[DELETED_FILES] = list(changes.deleted)
            if snap.omitted:
                meta[ARTIFACTS_OMITTED] = [rel for rel, _ in snap.omitted]
            meta[SCANNED] = [s.name for s in self.scanners]
            stage = "diffing the workspace"
            diff = workspace_diff(job.task.workspace_dir, workspace,
                                  max_bytes=_artifacts.DEFAULT_BUDGET.max_diff_bytes)
            status: RolloutStatus = result.status
            if status == "completed" and not changed:
                status = "no_change"
            wall = job.task.timeout_s
            if self.settings.test_timeout_s is not None:
                wall = min(wall, self.settings.test_timeout_s)
            limits = replace(self.settings.limits, wall_s=wall, cpu_s=wall)
            stage = "running the hidden tests"
            meta[TEST_PATH] = "fresh" if self.warm is None else "warm"
            meta[TEST_RUNNER] = job.task.test_runner if self.warm is not None else "pytest"
            try:
                if job.task.stdio is not None:  # stdin/stdout cases, judged outside the sandbox
                    meta[TEST_PATH] = meta[TEST_RUNNER] = "stdio"
                    hidden = run_stdio_tests(workspace, job.task.stdio, timeout_s=wall, backend=self.backend,
                                             limits=limits, slot=slot)
                else:
                    hidden = run_hidden_tests(workspace, job.task.tests_dir,
                                              expected=self.expected[job.task.id],
                                              backend=self.backend, limits=limits, slot=slot,
                                              starter=job.task.workspace_dir, worker=self.warm,
                                              test_runner=job.task.test_runner)
            except SandboxError as exc:
                meta[REASON] = f"sandbox failed: {exc}"
                meta[INFRA_REASON] = "sandbox"
                return self._record(job, "infra_error", (), meta, result, agent_seconds, None, (), (), diff)
            if hidden.status == "test_error":
                # the harness did not start, not even on the starter workspace (hidden_tests/fresh.py)
                meta[REASON] = hidden.reason
                meta[INFRA_REASON] = "test_error"
                return self._record(job, "infra_error", hidden.outcomes, meta, result, agent_seconds,
                                    hidden, (), (), diff)
            if status == "completed" and hidden.status == "timeout":
                status = "timeout"
            if hidden.reason:
                meta[REASON] = hidden.reason
            if hidden.forged:
                meta[FORGED_OUTCOMES] = True
            if hidden.tamper_files:
                meta[TAMPER_FILES] = list(hidden.tamper_files)
            stage = "recording the rollout"
            outcome = self._record(job, status, hidden.outcomes, meta, result, agent_seconds, hidden,
                                   findings, scan_errors, diff, snap.files, snap.omitted)
            if self.settings.retest:
                from reliabench.run.retest import retest_during_run

                stage = "re-testing the rollout"
                outcome = retest_during_run(outcome, job.task, self.expected[job.task.id],
                                            self.backend, limits, slot, tmp, self.settings.retest)
            return outcome
        except Exception as exc:
            if result is None:
                # nothing of the agent's ran yet (_call_agent turns the agent's own
                # exceptions into agent_error): the harness failed
                meta[REASON] = f"harness error while {stage}: {type(exc).__name__}: {exc}"[:600]
                meta[INFRA_REASON] = "sandbox"  # the rollout's sandbox could not be prepared
                return self._record(job, "infra_error", (), meta, AgentResult(status="infra_error"),
                                    0.0, None, (), (), "")
            return self._harness_failure(job, stage, exc, meta, result, agent_seconds, diff)
        finally:
            remove_tree(tmp)

    def _record(self, job: Job, status: RolloutStatus, outcomes: tuple[TestOutcome, ...],
                meta: dict[str, Any], result: AgentResult, agent_seconds: float, hidden: HiddenTestRun | None,
                findings: tuple[Finding, ...], scan_errors: tuple[ScanError, ...], diff: str,
                files: dict[str, bytes] | None = None,
                omitted: tuple[tuple[str, str], ...] = ()) -> Outcome:
        seconds = agent_seconds + (hidden.seconds if hidden else 0.0)
        budget = _artifacts.DEFAULT_BUDGET  # looked up per call (tests shrink it)
        art = RolloutArtifacts(cap_text(result.log, budget.max_log_bytes),
                               cap_text(diff, budget.max_diff_bytes),
                               cap_text(hidden.log, budget.max_log_bytes) if hidden else "",
                               files or {}, omitted)
        return cap_record(Rollout(
            task_id=job.task.id, agent=job.agent.name, rollout=job.rollout,
            tests=outcomes, status=status, findings=findings, scan_errors=scan_errors,
            cost=Cost(tokens=result.tokens, usd=result.usd, seconds=round(seconds, 3),
                      tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                      agent_s=round(agent_seconds, 3),
                      test_s=round(hidden.seconds, 3) if hidden else None),
            isolation=hidden.isolation if hidden else self.backend.name,
            tamper_suspected=bool(hidden and hidden.tamper_suspected),
            simulated=job.agent.simulated, meta=meta,
        ), budget), art
