"""Render an audit (``studies.audit``): terminal tables, and the JSON document of ``audit --format json``.

The tables: the findings, the figures the harness reported next to reliabench's, the data per
agent and the correct figures with their bootstrap intervals; simulated agents are marked.
"""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from reliabench.metrics.analysis import Estimate
from reliabench.report.marks import mark_agent, with_simulated_note
from reliabench.report.terminal import Parts
from reliabench.studies.audit import AuditReport

__all__ = ["audit_tables", "audit_to_dict"]


def _fmt(value: float, low: float | None = None, high: float | None = None) -> str:
    if not math.isfinite(value):
        return "-"
    text = f"{value:.3f}"
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        text += f" [{low:.3f}, {high:.3f}]"
    return text


def audit_tables(report: AuditReport) -> Parts:
    """The audit as terminal tables and lines (print them with ``terminal.print_parts``)."""
    parts: Parts = [f"[bold]audit[/bold] {report.source} (format: {report.format})"]
    if report.findings:
        t = Table(title=f"{len(report.findings)} finding(s)", show_lines=True)
        t.add_column("severity")
        t.add_column("code")
        t.add_column("finding", overflow="fold")
        for f in report.findings:
            color = "red" if f.severity == "error" else "yellow"
            t.add_row(f"[{color}]{f.severity}[/{color}]", f.code, f.message)
        parts.append(t)
    else:
        parts.append("[green]no finding[/green]: the data supports reliability@k as computed below")
    sim = report.score.counts.simulated
    if report.checks:
        t = Table(title="figures the harness reported, checked")
        for col in ("agent", "figure", "reported", "reliabench", "agrees"):
            t.add_column(col)
        for c in report.checks:
            fig = c.figure
            name = "mean" if fig.kind == "mean" else fig.kind.replace("k", str(fig.k))
            t.add_row(mark_agent(fig.agent, sim), name, f"{fig.value:.4f}", _fmt(c.ours),
                      "yes" if c.matches else f"no ({c.explanation})")
        parts.append(t)
    s = report.score
    pct = round(100 * s.confidence)
    t = Table(title="per agent")
    for col in ("agent", "tasks", "n per task", "strict (1st rollout)", "macro test pass rate"):
        t.add_column(col, overflow="fold")
    for a in s.agents:
        n_text = str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"
        t.add_row(mark_agent(a.agent, sim), str(a.tasks), n_text,
                  _fmt(a.metrics["strict_resolution_rate"].value),
                  _fmt(a.metrics["macro_test_pass_rate"].value))
    parts.append(t)
    t = Table(title=f"correct figures: mean over tasks [{pct}% bootstrap CI over tasks]")
    for col in ("agent", "k", "reliability@k", "pass^k", "misapplied pass@k"):
        t.add_column(col, overflow="fold")
    for a in s.agents:
        for k in report.ks:
            rel, hat, mis = (a.metrics[f"{name}{k}"] for name in
                             ("reliability@", "pass^", "misapplied_pass@"))
            t.add_row(mark_agent(a.agent, sim) if k == report.ks[0] else "", str(k),
                      _fmt(rel.value, rel.ci_low, rel.ci_high),
                      _fmt(hat.value, hat.ci_low, hat.ci_high), _fmt(mis.value))
    parts.append(t)
    parts += [f"[bold]missing:[/bold] {line}" for line in report.missing]
    parts += [f"note: {line}" for line in with_simulated_note(report.notes, report.score.counts.simulated)]
    return parts


def _round6(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)


def _estimate_dict(e: Estimate) -> dict[str, Any]:
    return {"value": _round6(e.value), "ci_low": _round6(e.ci_low), "ci_high": _round6(e.ci_high),
            "tasks": e.tasks, "excluded": e.excluded}


def audit_to_dict(report: AuditReport) -> dict[str, Any]:
    """A JSON-ready view of an ``AuditReport`` (NaN written as null; figures rounded to 6 places)."""
    s = report.score
    return {
        "source": report.source,
        "format": report.format,
        "clean": report.clean,
        "findings": [{"code": f.code, "severity": f.severity, "message": f.message,
                      "agents": list(f.agents)} for f in report.findings],
        "checks": [{"agent": c.figure.agent, "kind": c.figure.kind, "k": c.figure.k,
                    "reported": c.figure.value, "source": c.figure.source,
                    "ours": _round6(c.ours),
                    "matches": c.matches, "explanation": c.explanation} for c in report.checks],
        "ks": list(report.ks),
        "confidence": s.confidence,
        "agents": [{"agent": a.agent, "simulated": a.simulated, "tasks": a.tasks, "rollouts": a.rollouts,
                    "infra_errors": a.infra_errors, "min_n": a.min_n, "max_n": a.max_n,
                    "metrics": {k: _estimate_dict(v) for k, v in a.metrics.items()}}
                   for a in s.agents],
        "missing": list(report.missing),
        "notes": list(with_simulated_note(report.notes, s.counts.simulated)),
    }
