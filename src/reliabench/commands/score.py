"""``reliabench score``: reliability@k, pass^k, the misapplied figure and more, per agent."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.analysis import parse_ks, score
from reliabench.commands._common import (
    emit,
    format_option,
    k_option,
    load_records,
    resolve_security,
    security_config_option,
    threshold_option,
)
from reliabench.errors import InvalidArgumentError
from reliabench.report import render_score
from reliabench.security import SecurityThreshold

__all__ = ["command"]


@click.command("score")
@click.argument("source", metavar="ROLLOUTS")
@k_option()
@format_option()
@threshold_option()
@security_config_option()
@click.option("--confidence", type=float, default=0.95, show_default=True, help="CI level.")
@click.option("--resamples", type=int, default=10_000, show_default=True,
              help="Bootstrap resamples over tasks (0: no intervals).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the HTML report of `reliabench report` (figures, heatmap, explorer).")
@click.pass_context
def command(ctx: click.Context, source: str, ks: str, fmt: str, threshold: SecurityThreshold,
            security_config: Path | None, confidence: float, resamples: int, seed: int,
            html_path: Path | None) -> None:
    """Score ROLLOUTS (a JSONL file of rollout records, - for stdin, or a run directory)."""
    try:
        k_values = parse_ks(ks)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k") from None
    records = load_records(source)
    threshold, finding_filter = resolve_security(ctx, threshold, security_config, source)
    report = score(records, k_values, threshold=threshold, finding_filter=finding_filter,
                   confidence=confidence, n_resamples=resamples, seed=seed)
    emit(render_score(report, fmt, color=fmt == "table" and sys.stdout.isatty()))
    if html_path is not None:  # the same page as `reliabench report SOURCE -o FILE`
        from reliabench.report.explorer import write_source_page

        write_source_page(source, records, report, html_path)
        click.echo(f"HTML report: {html_path}", err=True)
