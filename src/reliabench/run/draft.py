"""A rollout's record while it is being made: each stage fills in what it learned.

:class:`RolloutDraft` collects, stage by stage, what one rollout produced -- the agent's
result and time, the scan of its changes, the files kept for re-scans, the diff, the
hidden-test run -- and turns it into the stored record and its artifacts (an
:data:`Outcome`) in ONE place, :meth:`RolloutDraft._outcome`. How the rollout ends decides
what of it is kept:

* :meth:`~RolloutDraft.completed` keeps everything: the tests, the scan, the kept files,
  the diff and the agent's log;
* :meth:`~RolloutDraft.infra_error` and :meth:`~RolloutDraft.agent_infra_error` keep the
  diff, the agent's log and -- when the test harness did not start -- the hidden-test run
  that says why; no scan, no kept files;
* :meth:`~RolloutDraft.harness_error` keeps the diff and the agent's log only.

The statuses:

* ``completed``: the status is the agent's (``completed``, ``agent_error``, ``timeout``),
  made ``no_change`` when a completed agent changed nothing and ``timeout`` when the hidden
  tests hit their wall limit;
* ``infra_error``: the harness could not do its part (the agent's infrastructure, the
  sandbox, a test harness that does not start even on the starter). The rollout is
  excluded and rerun on resume; its record keeps the reason, and the hidden-test run when
  one said why, but no findings: a rollout that is not scored has no security figures;
* ``test_error``: something raised after the agent ran (``harness error while <stage>``).
  The agent's files may be what broke the harness, and only the harness may exclude a
  rollout, so the rollout counts as a failure; nothing but the agent's result, the diff
  and the reason is kept.

Every record goes through :func:`~reliabench.run.artifacts.cap_record` and every log and
diff through :func:`~reliabench.run.artifacts.cap_text` with the current
:data:`~reliabench.run.artifacts.DEFAULT_BUDGET`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reliabench.agents.base import AgentResult
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.repository import RepositoryTestRun
from reliabench.meta_keys import (
    AGENT_KIND,
    ARTIFACTS_OMITTED,
    CHANGED_FILES,
    COST_DROPPED,
    DELETED_FILES,
    FORGED_OUTCOMES,
    INFRA_REASON,
    REASON,
    SCANNED,
    SEED,
    SWEBENCH,
    TAMPER_FILES,
    UNDECLARED_SKIPS,
)
from reliabench.records import (
    Cost,
    Finding,
    Isolation,
    Rollout,
    RolloutStatus,
    ScanError,
    checked_cost,
)
from reliabench.run import artifacts as _artifacts
from reliabench.run.artifacts import RolloutArtifacts, Snapshot, cap_record, cap_text
from reliabench.run.plan import Job
from reliabench.scanners.changes import ChangeSet

__all__ = ["Outcome", "RolloutDraft"]

Outcome = tuple[Rollout, RolloutArtifacts]
"""A finished rollout: its record and what is kept beside it."""


@dataclass(slots=True)
class RolloutDraft:
    """What one rollout produced so far; one of the three endings makes its record.

    Build one with :meth:`start`, fill it in with :meth:`agent_ran`, :meth:`scanned`,
    :meth:`kept`, :attr:`diff` and :meth:`tested`, in the order the stages run, and end it
    with :meth:`completed`, :meth:`infra_error` or :meth:`harness_error` (see the module
    docstring for what each keeps).

    Attributes:
        job: The rollout's job (task, agent, rollout index, seed).
        isolation: The sandbox backend's name: the record's isolation unless a hidden-test
            run says what the tests ran under.
        meta: The record's ``meta``, filled in as stages run.
        result: The agent's result; None until the agent ran.
        agent_seconds: Wall-clock seconds of the agent.
        findings: Scanner findings on the agent's changed lines.
        scan_errors: What the scanners could not examine.
        changed: Every path the agent added, modified or deleted.
        snapshot: The agent's files kept for re-scans and re-tests.
        diff: The unified diff of the workspace against the starter.
        hidden: The hidden-test run; None until the tests ran.
    """

    job: Job
    isolation: Isolation
    meta: dict[str, Any] = field(default_factory=dict)
    result: AgentResult | None = None
    agent_seconds: float = 0.0
    findings: tuple[Finding, ...] = ()
    scan_errors: tuple[ScanError, ...] = ()
    changed: tuple[str, ...] = ()
    snapshot: Snapshot | None = None
    diff: str = ""
    hidden: HiddenTestRun | None = None

    @classmethod
    def start(cls, job: Job, isolation: Isolation) -> RolloutDraft:
        """A draft for ``job`` with the seed and the agent kind in its ``meta``."""
        return cls(job, isolation, {SEED: job.seed, AGENT_KIND: job.agent.kind})

    def agent_ran(self, result: AgentResult, seconds: float) -> None:
        """The agent returned ``result`` after ``seconds``; its ``meta`` joins the record's."""
        self.result = result
        self.agent_seconds = seconds
        self.meta.update(result.meta)

    def scanned(self, findings: tuple[Finding, ...], errors: tuple[ScanError, ...], changes: ChangeSet,
                scanners: Sequence[str]) -> None:
        """The scanners ``scanners`` examined ``changes``: findings, errors and what changed."""
        self.findings = findings
        self.scan_errors = errors
        self.changed = tuple(sorted({*changes.added, *changes.modified, *changes.deleted}))
        self.meta[CHANGED_FILES] = list(self.changed)
        self.meta[DELETED_FILES] = list(changes.deleted)
        self.meta[SCANNED] = list(scanners)

    def kept(self, snapshot: Snapshot) -> None:
        """The agent's files kept for re-scans; those left out are named in ``meta``."""
        self.snapshot = snapshot
        if snapshot.omitted:
            self.meta[ARTIFACTS_OMITTED] = [rel for rel, _ in snapshot.omitted]

    def tested(self, hidden: HiddenTestRun) -> None:
        """The hidden tests ran; reason, forged lines, tamper files, undeclared skips go to ``meta``.

        A repository task's run adds SWE-bench's verdict (``meta["swebench"]``: resolution,
        resolved, FAIL_TO_PASS and PASS_TO_PASS as ``[passed, total]``).
        """
        self.hidden = hidden
        if hidden.reason:
            self.meta[REASON] = hidden.reason
        if hidden.forged:
            self.meta[FORGED_OUTCOMES] = True
        if hidden.tamper_files:
            self.meta[TAMPER_FILES] = list(hidden.tamper_files)
        if hidden.undeclared_skips:
            self.meta[UNDECLARED_SKIPS] = list(hidden.undeclared_skips)
        if isinstance(hidden, RepositoryTestRun):  # SWE-bench's verdict next to the per-test outcomes
            self.meta[SWEBENCH] = dict(hidden.swebench)

    # ---- endings ----------------------------------------------------------------------------

    def completed(self) -> Outcome:
        """The rollout ran to the end: the agent's status, refined by its changes and its tests.

        Raises:
            ValueError: the agent or the hidden tests have not run (a bug of the caller).
        """
        if self.result is None or self.hidden is None:
            raise ValueError("RolloutDraft.completed() needs the agent's result and the hidden-test run")
        status: RolloutStatus = self.result.status
        if status == "completed" and not self.changed:
            status = "no_change"
        if status == "completed" and self.hidden.status == "timeout":
            status = "timeout"
        return self._outcome(status, self.result, self.hidden, scan=True)

    def infra_error(self, infra_reason: str, reason: str | None = None, *,
                    hidden: HiddenTestRun | None = None) -> Outcome:
        """The harness could not do its part: excluded from the figures and rerun on resume.

        Args:
            infra_reason: The class of failure (``meta["infra_reason"]``; see
                :mod:`reliabench.agents.infra`).
            reason: What happened, for the record (``meta["reason"]``); None keeps any
                reason already there.
            hidden: The hidden-test run that says why, when the test harness did not start:
                its outcomes, time, isolation and log are kept.
        """
        if reason is not None:
            self.meta[REASON] = reason
        self.meta[INFRA_REASON] = infra_reason
        return self._outcome("infra_error", self.result or AgentResult(status="infra_error"), hidden,
                             scan=False)

    def agent_infra_error(self) -> Outcome:
        """The agent's own infrastructure failed (its result says ``infra_error``): no tests ran.

        The agent's ``meta["infra_reason"]`` is kept; ``agent_infra`` when it gave none.
        """
        self.meta.setdefault(INFRA_REASON, "agent_infra")
        return self._outcome("infra_error", self.result or AgentResult(status="infra_error"), None,
                             scan=False)

    def harness_error(self, stage: str, exc: BaseException) -> Outcome:
        """Something raised while ``stage`` ran, after the agent: the rollout's own failure."""
        detail = f"{type(exc).__name__}: {exc}"
        self.meta[REASON] = f"harness error while {stage}: {detail[:500]}"
        return self._outcome("test_error", self.result or AgentResult(status="agent_error"), None,
                             scan=False)

    # ---- the one place a record is made -------------------------------------------------------

    def _outcome(self, status: RolloutStatus, result: AgentResult, hidden: HiddenTestRun | None, *,
                 scan: bool) -> Outcome:
        budget = _artifacts.DEFAULT_BUDGET  # looked up per call (tests shrink it)
        snap = self.snapshot if scan and self.snapshot is not None else Snapshot({})
        seconds = self.agent_seconds + (hidden.seconds if hidden else 0.0)
        art = RolloutArtifacts(
            agent_log=cap_text(result.log, budget.max_log_bytes),
            diff=cap_text(self.diff, budget.max_diff_bytes),
            test_log=cap_text(hidden.log, budget.max_log_bytes) if hidden else "",
            files=dict(snap.files),
            omitted=snap.omitted,
        )
        job = self.job
        # the agent's numbers are untrusted: what the record reader would refuse is dropped
        # here, with the reason, so that the run stays readable (records.checked_cost)
        cost, dropped = checked_cost(Cost(
            tokens=result.tokens, usd=result.usd, seconds=round(seconds, 3),
            tokens_in=result.tokens_in, tokens_out=result.tokens_out,
            agent_s=round(self.agent_seconds, 3),
            test_s=round(hidden.seconds, 3) if hidden else None))
        meta = dict(self.meta)
        if dropped:
            meta[COST_DROPPED] = dropped
        rollout = Rollout(
            task_id=job.task.id, agent=job.agent.name, rollout=job.rollout,
            tests=hidden.outcomes if hidden else (), status=status,
            findings=self.findings if scan else (), scan_errors=self.scan_errors if scan else (),
            cost=cost,
            isolation=hidden.isolation if hidden else self.isolation,
            tamper_suspected=bool(hidden and hidden.tamper_suspected),
            simulated=job.agent.simulated, meta=meta,
        )
        return cap_record(rollout, budget), art
