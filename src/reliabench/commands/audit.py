"""``reliabench audit PATH``: find misapplied pass@k in result data and show the right figures."""

from __future__ import annotations

import json

import click

from reliabench.commands._common import console, source_options
from reliabench.metrics.analysis import parse_ks
from reliabench.report.audit_tables import audit_tables, audit_to_dict
from reliabench.report.terminal import print_parts
from reliabench.studies.audit import AuditFailed, audit_records

__all__ = ["command"]


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
    from reliabench.runs import read_source

    loaded = read_source(path, input_format, agent=agent, scorer=scorer, leaderboard=leaderboard)
    report = audit_records(loaded.records, ks=parse_ks(ks) if ks else None, reported=loaded.reported,
                           stated=loaded.stated, source=str(path), format=loaded.format,
                           notes=loaded.notes, n_resamples=resamples, seed=seed)
    if output == "json":
        click.echo(json.dumps(audit_to_dict(report), indent=2))
    else:
        print_parts(console(), audit_tables(report))
    if strict and report.findings:
        raise AuditFailed(f"{len(report.findings)} finding(s) (--strict)")
