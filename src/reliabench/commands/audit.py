"""``reliabench audit PATH``: find misapplied pass@k in result data and show the right figures."""

from __future__ import annotations

import json
import math

import click
from rich.console import Console
from rich.table import Table

from reliabench.commands._common import agent_label, console, source_options
from reliabench.importers import load_source
from reliabench.metrics.analysis import parse_ks
from reliabench.studies.audit import AuditFailed, AuditReport, audit_records, report_to_dict

__all__ = ["command", "render"]


def _fmt(value: float, low: float | None = None, high: float | None = None) -> str:
    if not math.isfinite(value):
        return "-"
    text = f"{value:.3f}"
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        text += f" [{low:.3f}, {high:.3f}]"
    return text


def render(report: AuditReport, console: Console) -> None:
    """Print an audit report as tables."""
    console.print(f"[bold]audit[/bold] {report.source} (format: {report.format})")
    if report.findings:
        t = Table(title=f"{len(report.findings)} finding(s)", show_lines=True)
        t.add_column("severity")
        t.add_column("code")
        t.add_column("finding", overflow="fold")
        for f in report.findings:
            color = "red" if f.severity == "error" else "yellow"
            t.add_row(f"[{color}]{f.severity}[/{color}]", f.code, f.message)
        console.print(t)
    else:
        console.print("[green]no finding[/green]: the data supports reliability@k as computed below")
    if report.checks:
        t = Table(title="figures the harness reported, checked")
        for col in ("agent", "figure", "reported", "reliabench", "agrees"):
            t.add_column(col)
        for c in report.checks:
            fig = c.figure
            name = "mean" if fig.kind == "mean" else fig.kind.replace("k", str(fig.k))
            t.add_row(fig.agent, name, f"{fig.value:.4f}", _fmt(c.ours),
                      "yes" if c.matches else f"no ({c.explanation})")
        console.print(t)
    s = report.score
    sim = s.counts.simulated
    pct = round(100 * s.confidence)
    t = Table(title="per agent")
    for col in ("agent", "tasks", "n per task", "strict (1st rollout)", "macro test pass rate"):
        t.add_column(col, overflow="fold")
    for a in s.agents:
        n_text = str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"
        t.add_row(agent_label(a.agent, sim), str(a.tasks), n_text,
                  _fmt(a.metrics["strict_resolution_rate"].value),
                  _fmt(a.metrics["macro_test_pass_rate"].value))
    console.print(t)
    t = Table(title=f"correct figures: mean over tasks [{pct}% bootstrap CI over tasks]")
    for col in ("agent", "k", "reliability@k", "pass^k", "misapplied pass@k"):
        t.add_column(col, overflow="fold")
    for a in s.agents:
        for k in report.ks:
            rel, hat, mis = (a.metrics[f"{name}{k}"] for name in
                             ("reliability@", "pass^", "misapplied_pass@"))
            t.add_row(agent_label(a.agent, sim) if k == report.ks[0] else "", str(k),
                      _fmt(rel.value, rel.ci_low, rel.ci_high),
                      _fmt(hat.value, hat.ci_low, hat.ci_high), _fmt(mis.value))
    console.print(t)
    for line in report.missing:
        console.print(f"[bold]missing:[/bold] {line}")
    for line in report.notes:
        console.print(f"note: {line}")


@click.command("audit")
@click.argument("path", metavar="SOURCE")
@source_options()
@click.option("-k", "ks", default=None, help="k values, e.g. 1,5,10 (default: from the data).")
@click.option("--agent", default=None, help="Name for the agent (overrides the format's).")
@click.option("--scorer", default=None, help="Inspect logs: the scorer that decides success.")
@click.option("--strict", is_flag=True, help="Exit 1 when there is any finding.")
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(min=0),
              help="Bootstrap resamples for the CIs.")
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--format", "output", default="table", show_default=True,
              type=click.Choice(["table", "json"]), help="Output format.")
def command(path: str, input_format: str, leaderboard: str | None, ks: str | None, agent: str | None,
            scorer: str | None, strict: bool, resamples: int, seed: int, output: str) -> None:
    """Check PATH (rollout JSONL, a foreign result file or folder) for misapplied pass@k."""
    loaded = load_source(path, input_format, agent=agent, scorer=scorer, leaderboard=leaderboard)
    report = audit_records(loaded.records, ks=parse_ks(ks) if ks else None, reported=loaded.reported,
                           stated=loaded.stated, source=str(path), format=loaded.format,
                           notes=loaded.notes, n_resamples=resamples, seed=seed)
    if output == "json":
        click.echo(json.dumps(report_to_dict(report), indent=2))
    else:
        render(report, console())
    if strict and report.findings:
        raise AuditFailed(f"{len(report.findings)} finding(s) (--strict)")
