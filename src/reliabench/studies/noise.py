r"""Harness noise: which tests and verdicts change on identical code, and how scoring can allow for it.

Inputs are a run's rollout records and its re-tests (``reliabench.run.retest``: the hidden tests
re-run R times on the files each rollout left, on the rollout's own execution path, and on
each task's reference solution). For one rollout, its *runs* are the original test run and
every re-run that completed or timed out (re-runs the harness could not run at all are left
out and counted). Runs of one rollout run the SAME code, so a change comes from the harness
(the tests, their environment, the order, the clock) -- or from the code itself: code may be
nondeterministic, or answer differently on purpose (when it is not pid 1, on odd seconds).

* **Flip**: a test whose outcome (passed or not) changes between runs of one rollout or of
  the reference. ``runs`` counts its outcomes over all rollouts, ``flips`` the changes
  between consecutive runs, ``rollouts`` the rollouts where it changed at least once,
  ``agents`` the distinct agents of those rollouts; ``reference_runs`` and
  ``reference_flips`` the same on the task's reference solution.
* **Flaky test** (harness noise): a flipping test whose variation cannot come from one
  rollout's own code: it flips on the trusted reference solution (``evidence =
  "reference"``), or in rollouts of at least :data:`MIN_AGENTS` distinct agents
  (``evidence = "agents"``; one agent's rollouts are all written by the same, possibly
  adversarial, policy). Other flips are listed apart (``NoiseReport.code_flips``) and
  change nothing in scoring: they may be the rollout's own doing.
* **Flaky verdict** (``verdict_flaky``): the rollout's verdict (passes all functional tests)
  is not the same in every run.
* **Harness noise rate**: flaky verdicts / re-tested rollouts, with an exact
  Clopper-Pearson interval (Clopper & Pearson 1934): the bounds are Beta quantiles,
  :math:`[B(\alpha/2; x, n-x+1),\ B(1-\alpha/2; x+1, n-x)]`. With R re-runs it is a lower
  bound on the share of rollouts that can flip (a verdict that flips with probability q
  shows it with probability :math:`1 - q^{R+1} - (1-q)^{R+1}`).
* **Variance split** (law of total variance, per (task, agent), averaged over tasks):
  total variance of the rollouts' verdicts :math:`s^2` (ddof 1) = harness part
  :math:`\overline{q_r(1-q_r)\,m_r/(m_r-1)}` (within-rollout variance of the verdict over
  its :math:`m_r` runs, unbiased) + agent part (the rest, clipped at 0): what different code
  from the agent contributes.

Scoring policies (:func:`apply_flaky_policy`): drop the flaky tests from every rollout of
their task before judging it (``exclude_flaky_tests``), and/or judge a rollout whose verdict
flips by the majority of its runs (``flaky_verdict="majority"``; a tie keeps the original),
only when every test that flipped in it is a flaky test: a verdict that flips through a test
only its own code makes flip keeps the original run's verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from reliabench.errors import InvalidArgumentError, UsageError
from reliabench.meta_keys import REASON
from reliabench.records import Rollout, RolloutStatus, TestOutcome, TestOutcomeStatus
from reliabench.store import REFERENCE_AGENT

if TYPE_CHECKING:
    from reliabench.store import RetestRow

__all__ = [
    "FLAKY_VERDICT_POLICIES",
    "MIN_AGENTS",
    "FlakyTest",
    "NoiseRate",
    "NoiseReport",
    "PolicyResult",
    "RolloutNoise",
    "VarianceSplit",
    "ScoreNoise",
    "apply_flaky_policy",
    "clopper_pearson",
    "harness_noise",
    "score_noise",
]

FLAKY_VERDICT_POLICIES = ("original", "majority")
MIN_AGENTS = 2
"""Distinct agents whose rollouts must flip a test (without the reference) for it to be flaky."""


@dataclass(frozen=True, slots=True)
class FlakyTest:
    """A hidden test whose outcome changed on identical code.

    Attributes:
        task_id: The task.
        test: The test's id.
        runs: Its outcomes over every run of every re-tested rollout.
        flips: Changes between consecutive runs of one rollout, summed.
        rollouts: Rollouts in which it changed.
        agents: Distinct agents of those rollouts.
        reference_runs: Its outcomes over the runs of the task's reference solution.
        reference_flips: Changes between consecutive runs of the reference.
        evidence: Why it counts as flaky: ``reference``, ``agents``, or ``""`` (it does not:
            only one agent's code made it flip, which that code may have caused).
    """

    task_id: str
    test: str
    runs: int
    flips: int
    rollouts: int
    agents: int = 0
    reference_runs: int = 0
    reference_flips: int = 0
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class RolloutNoise:
    """One re-tested rollout: its verdict in every run.

    Attributes:
        key: ``(task_id, agent, rollout)``.
        verdicts: The original verdict, then one per usable re-run.
        verdict_flaky: The verdicts are not all equal.
        flaky_tests: Tests whose outcome changed in this rollout's runs.
    """

    key: tuple[str, str, int]
    verdicts: tuple[bool, ...]
    verdict_flaky: bool
    flaky_tests: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NoiseRate:
    """Share of re-tested rollouts whose verdict flips, with an exact interval."""

    value: float
    ci_low: float
    ci_high: float
    flaky: int
    rollouts: int
    confidence: float
    method: str = "clopper-pearson"


@dataclass(frozen=True, slots=True)
class VarianceSplit:
    """An agent's rollout-to-rollout variance of the verdict, split into harness and agent parts.

    Attributes:
        agent: The agent.
        tasks: Tasks with at least 2 re-tested rollouts.
        total: Mean over tasks of the verdicts' sample variance.
        harness: Mean over tasks of the within-rollout (same code) variance.
        agent_part: ``max(total - harness, 0)``.
    """

    agent: str
    tasks: int
    total: float
    harness: float
    agent_part: float


@dataclass(frozen=True, slots=True)
class NoiseReport:
    """Harness noise of a run.

    Attributes:
        rollouts: Per re-tested rollout, its verdicts.
        flaky_tests: Flaky tests (harness noise by the rule above), most flips first.
        noise_rate: Flaky verdicts / re-tested rollouts with its interval.
        variance: Per agent, the variance split.
        reruns: Usable re-runs in total.
        test_errors: Re-runs the harness could not run (left out).
        max_reruns: Most re-runs of one rollout.
        code_flips: Tests that flipped only where the rollouts' own code may be the cause
            (one agent, never on the reference): reported, never treated as flaky.
    """

    rollouts: tuple[RolloutNoise, ...]
    flaky_tests: tuple[FlakyTest, ...]
    noise_rate: NoiseRate
    variance: tuple[VarianceSplit, ...]
    reruns: int
    test_errors: int
    max_reruns: int
    code_flips: tuple[FlakyTest, ...] = ()

    @property
    def flaky_rollouts(self) -> int:
        """Rollouts whose verdict flips."""
        return sum(r.verdict_flaky for r in self.rollouts)


def clopper_pearson(x: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion x/n.

    Examples:
        >>> [round(b, 4) for b in clopper_pearson(0, 10)]
        [0.0, 0.3085]
        >>> [round(b, 4) for b in clopper_pearson(5, 10)]
        [0.1871, 0.8129]
    """
    if isinstance(n, bool) or n < 1 or not 0 <= x <= n:
        raise InvalidArgumentError(f"need 0 <= x <= n and n >= 1, got x={x!r}, n={n!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence!r}")
    a = 1.0 - confidence
    low = 0.0 if x == 0 else float(stats.beta.ppf(a / 2, x, n - x + 1))
    high = 1.0 if x == n else float(stats.beta.ppf(1 - a / 2, x + 1, n - x))
    return low, high


def _passed(outcome: TestOutcomeStatus) -> bool:
    return outcome == "passed"


def _verdict(r: Rollout, tests: Sequence[TestOutcome], status: RolloutStatus, excluded: set[str]) -> bool:
    """The verdict of one run of a rollout's code (same rule as ``Rollout.passes``)."""
    if status != "completed":
        return False
    functional = [t for t in tests if not t.security and t.name not in excluded
                  and t.outcome != "skipped"]
    return bool(functional) and all(t.outcome == "passed" for t in functional)


def _base_status(r: Rollout) -> RolloutStatus | None:
    """Whether a run of this rollout's code can pass at all (agent-side status)."""
    if r.status == "completed":
        return "completed"
    if r.status == "timeout" and "wall time limit" in str(r.meta.get(REASON, "")):
        return "completed"  # the tests timed out, not the agent: a re-run may finish
    return None


def _tests_of(row: RetestRow) -> tuple[TestOutcome, ...]:
    return tuple(TestOutcome(str(t[0]), t[1], bool(t[2])) for t in row["tests"])


def _flips(seq: Sequence[bool]) -> int:
    return sum(a != b for a, b in itertools.pairwise(seq))


def _reference_flips(rows: Iterable[RetestRow]) -> dict[tuple[str, str], list[int]]:
    """(task, test) -> [runs, flips] over the reference solution's runs, path by path."""
    seqs: dict[tuple[str, str, int], dict[str, list[bool]]] = {}
    for row in sorted(rows, key=lambda x: int(x["rep"])):
        if row["status"] == "test_error":
            continue
        per = seqs.setdefault((row["task_id"], row["agent"], int(row["rollout"])), {})
        for t in _tests_of(row):
            per.setdefault(t.name, []).append(_passed(t.outcome))
    out: dict[tuple[str, str], list[int]] = {}
    for (task_id, _, _), per in seqs.items():
        for name, seq in per.items():
            acc = out.setdefault((task_id, name), [0, 0])
            acc[0] += len(seq)
            acc[1] += _flips(seq)
    return out


def _runs(r: Rollout, rows: Sequence[RetestRow]
          ) -> list[tuple[RolloutStatus, tuple[TestOutcome, ...]]]:
    """The (status, tests) of the original run and every usable re-run of a rollout."""
    base = _base_status(r)
    first_status = r.status if base is None else ("completed" if r.status == "completed" else "timeout")
    out = [(first_status, tuple(r.tests or ()))]
    for row in rows:
        if row["status"] == "test_error":
            continue
        status = row["status"] if base is not None else r.status
        out.append((status, _tests_of(row)))
    return out


def harness_noise(records: Iterable[Rollout], retests: Iterable[RetestRow], *,
                  confidence: float = 0.95) -> NoiseReport:
    """Flaky tests, flaky verdicts, the noise rate and the variance split of a run.

    Args:
        records: The run's rollouts.
        retests: Its re-test rows (``RunStore.retest_rows()``), the reference solution's
            (agent :data:`~reliabench.store.REFERENCE_AGENT`) included.
        confidence: Level of the noise rate's interval.

    Raises:
        InvalidArgumentError: when no rollout has a usable re-run.
    """
    by_key: dict[tuple[str, str, int], list[RetestRow]] = {}
    reference: list[RetestRow] = []
    errors = 0
    for row in retests:
        if row["agent"] == REFERENCE_AGENT:
            reference.append(row)
        else:
            by_key.setdefault((row["task_id"], row["agent"], int(row["rollout"])), []).append(row)
        errors += row["status"] == "test_error"
    recs = {r.key: r for r in records}
    per_rollout: list[RolloutNoise] = []
    tests: dict[tuple[str, str], list[int]] = {}  # (task, test) -> [runs, flips, rollouts]
    agents: dict[tuple[str, str], set[str]] = {}  # (task, test) -> agents whose rollouts flipped it
    reruns = max_reruns = 0
    for key in sorted(by_key):
        r = recs.get(key)
        if r is None:
            continue
        runs = _runs(r, sorted(by_key[key], key=lambda row: int(row["rep"])))
        if len(runs) < 2:
            continue
        reruns += len(runs) - 1
        max_reruns = max(max_reruns, len(runs) - 1)
        verdicts = tuple(_verdict(r, t, s, set()) for s, t in runs)
        seqs: dict[str, list[bool]] = {}
        for _, outcomes in runs:
            for t in outcomes:
                seqs.setdefault(t.name, []).append(_passed(t.outcome))
        flaky_here = []
        for name, seq in seqs.items():
            flips = _flips(seq)
            acc = tests.setdefault((r.task_id, name), [0, 0, 0])
            acc[0] += len(seq)
            acc[1] += flips
            acc[2] += flips > 0
            if flips:
                flaky_here.append(name)
                agents.setdefault((r.task_id, name), set()).add(r.agent)
        per_rollout.append(RolloutNoise(key, verdicts, len(set(verdicts)) > 1, tuple(sorted(flaky_here))))
    if not per_rollout:
        raise InvalidArgumentError("no rollout has a usable re-test: run `reliabench retest RUN` first")
    ref = _reference_flips(reference)
    seen: list[FlakyTest] = []
    for test_key in sorted(set(tests) | set(ref)):
        v, rv = tests.get(test_key, [0, 0, 0]), ref.get(test_key, [0, 0])
        who = agents.get(test_key, set())
        if not (v[1] or rv[1]):
            continue
        evidence = "reference" if rv[1] else ("agents" if len(who) >= MIN_AGENTS else "")
        seen.append(FlakyTest(*test_key, v[0], v[1], v[2], len(who), rv[0], rv[1], evidence))
    order = sorted(seen, key=lambda f: (-(f.flips + f.reference_flips), f.task_id, f.test))
    flaky = [f for f in order if f.evidence]
    x = sum(r.verdict_flaky for r in per_rollout)
    n = len(per_rollout)
    low, high = clopper_pearson(x, n, confidence)
    rate = NoiseRate(x / n, low, high, x, n, confidence)
    return NoiseReport(tuple(per_rollout), tuple(flaky), rate, _variance_split(per_rollout),
                       reruns, errors, max_reruns, tuple(f for f in order if not f.evidence))


def _variance_split(rollouts: Sequence[RolloutNoise]) -> tuple[VarianceSplit, ...]:
    groups: dict[str, dict[str, list[RolloutNoise]]] = {}
    for r in rollouts:
        groups.setdefault(r.key[1], {}).setdefault(r.key[0], []).append(r)
    out = []
    for agent in sorted(groups):
        totals, harness = [], []
        for rs in groups[agent].values():
            if len(rs) < 2:
                continue
            first = np.array([x.verdicts[0] for x in rs], dtype=float)
            totals.append(float(first.var(ddof=1)))
            within = []
            for x in rs:
                m = len(x.verdicts)
                q = sum(x.verdicts) / m
                within.append(q * (1 - q) * m / (m - 1))
            harness.append(float(np.mean(within)))
        if not totals:
            continue
        total, harm = float(np.mean(totals)), float(np.mean(harness))
        out.append(VarianceSplit(agent, len(totals), total, harm, max(total - harm, 0.0)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """Records re-judged under a flaky-test policy, with what changed.

    Attributes:
        records: The records to score.
        exclude_flaky_tests: Whether flaky tests were dropped.
        flaky_verdict: ``original`` or ``majority``.
        excluded_tests: Flaky tests dropped (distinct (task, test)).
        tests_removed: Test outcomes removed over all rollouts.
        verdicts_changed: Rollouts whose pass/fail changed.
        notes: One line per effect, for the report.
    """

    records: tuple[Rollout, ...]
    exclude_flaky_tests: bool
    flaky_verdict: str
    excluded_tests: int
    tests_removed: int
    verdicts_changed: int
    notes: tuple[str, ...]


def apply_flaky_policy(records: Iterable[Rollout], report: NoiseReport,
                       retests: Iterable[RetestRow], *, exclude_flaky_tests: bool = False,
                       flaky_verdict: str = "original") -> PolicyResult:
    """Re-judge rollouts: drop flaky tests and/or take the majority verdict of flipping rollouts.

    Only flaky tests by the rule of the module docstring count: ``exclude_flaky_tests`` drops
    those (from every rollout of their task), and ``majority`` re-judges a rollout only when
    each test that flipped in its runs is one of them; otherwise its flips may be its own
    code's and the original verdict stands (counted in the notes).
    """
    if flaky_verdict not in FLAKY_VERDICT_POLICIES:
        raise InvalidArgumentError(f"flaky_verdict must be one of {', '.join(FLAKY_VERDICT_POLICIES)}, "
                                   f"got {flaky_verdict!r}")
    recs = list(records)
    flaky: dict[str, set[str]] = {}
    for f in report.flaky_tests:
        flaky.setdefault(f.task_id, set()).add(f.test)
    flaky_by_task = flaky if exclude_flaky_tests else {}
    flipped = {r.key: set(r.flaky_tests) for r in report.rollouts}
    by_key: dict[tuple[str, str, int], list[RetestRow]] = {}
    for row in retests:
        by_key.setdefault((row["task_id"], row["agent"], int(row["rollout"])), []).append(row)
    out = []
    removed = changed = kept_original = 0
    for r in recs:
        new = r
        excluded = flaky_by_task.get(r.task_id, set())
        if excluded and r.tests:
            kept = tuple(t for t in r.tests if t.name not in excluded)
            removed += len(r.tests) - len(kept)
            new = replace(new, tests=kept)
        if flaky_verdict == "majority" and r.key in by_key:
            runs = _runs(r, sorted(by_key[r.key], key=lambda row: int(row["rep"])))
            verdicts = [_verdict(r, t, s, excluded) for s, t in runs]
            yes = sum(verdicts)
            own = flipped.get(r.key, set())
            harness = bool(own) and own <= flaky.get(r.task_id, set())
            if len(set(verdicts)) > 1 and not harness:
                kept_original += 1
            elif len(set(verdicts)) > 1 and yes * 2 != len(verdicts):
                majority = yes * 2 > len(verdicts)
                status = "completed" if majority and _base_status(r) else new.status
                new = replace(new, verdict=majority, status=status)
        changed += new.passes != r.passes
        out.append(new)
    notes = []
    if exclude_flaky_tests:
        notes.append(f"--exclude-flaky-tests: {sum(len(v) for v in flaky_by_task.values())} flaky test(s) "
                     f"on {len(flaky_by_task)} task(s) left out ({removed} outcome(s) removed)")
    if flaky_verdict == "majority":
        notes.append(f"--flaky-verdict majority: {report.flaky_rollouts} rollout(s) with a flipping "
                     "verdict judged by the majority of their runs (ties keep the original)")
        if kept_original:
            notes.append(f"{kept_original} of them kept their original verdict: a test that flipped "
                         "in them is not flaky (it flipped only in one agent's code, not on the reference)")
    if exclude_flaky_tests or flaky_verdict == "majority":
        notes.append(f"{changed} of {len(recs)} rollout verdict(s) changed by the flaky-test policy")
    return PolicyResult(tuple(out), exclude_flaky_tests, flaky_verdict,
                        sum(len(v) for v in flaky_by_task.values()), removed, changed, tuple(notes))


@dataclass(frozen=True, slots=True)
class ScoreNoise:
    """Harness noise as a part of a run's score: the noise report, and the policy applied.

    Attributes:
        records: The records re-judged under the policy (the ones to score).
        report: The noise report of the original records.
        policy: The flaky-test policy applied, with what it changed.
    """

    records: tuple[Rollout, ...]
    report: NoiseReport
    policy: PolicyResult


def score_noise(records: Sequence[Rollout], retests: Sequence[RetestRow], *,
                exclude_flaky_tests: bool = False, flaky_verdict: str = "original",
                source: str = "the run", confidence: float = 0.95) -> ScoreNoise | None:
    """The harness noise of a run's records, and the records re-judged by the flaky-test policy.

    None when there is nothing to say: no re-test, or none usable for these records (re-tests
    of other rollouts), and no policy asked for.

    Raises:
        UsageError: a policy (``exclude_flaky_tests`` or ``flaky_verdict="majority"``) was
            asked for, but ``source`` has no usable re-test.
    """
    asked = exclude_flaky_tests or flaky_verdict != "original"
    report = None
    if retests:
        try:
            report = harness_noise(records, retests, confidence=confidence)
        except InvalidArgumentError:  # re-tests recorded, but none of these records'
            if asked:
                raise
    if report is None:
        if asked:
            raise UsageError(f"{source}: no re-tests recorded; --exclude-flaky-tests and --flaky-verdict "
                             f"need them (run: reliabench retest {source})")
        return None
    policy = apply_flaky_policy(records, report, retests, exclude_flaky_tests=exclude_flaky_tests,
                                flaky_verdict=flaky_verdict)
    return ScoreNoise(policy.records, report, policy)
