"""``reliabench report``: the HTML report with its rollout explorer, or tables for papers."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.commands._common import (
    bootstrap_options,
    by_option,
    emit,
    k_option,
    resolve_security,
    security_config_option,
    source_options,
    task_labels,
    threshold_option,
)
from reliabench.errors import InvalidArgumentError, UsageError
from reliabench.metrics.analysis import parse_ks, score
from reliabench.metrics.security import SecurityThreshold

__all__ = ["command"]


@click.command("report")
@click.argument("source", metavar="SOURCE")
@source_options()
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write here (atomically); required for html, default standard output otherwise.")
@click.option("--format", "fmt", type=click.Choice(["html", "markdown", "latex", "csv"]), default="html",
              show_default=True, help="html: the page with the explorer; markdown/latex/csv: tables.")
@k_option()
@threshold_option()
@security_config_option()
@bootstrap_options()
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Bound on the rollout details embedded in the page (default 20 MB).")
@click.option("--title", default=None, help="Page or table title.")
@by_option()
@click.pass_context
def command(ctx: click.Context, source: str, input_format: str, leaderboard: str | None,
            output: Path | None, fmt: str, ks: str, threshold: SecurityThreshold,
            security_config: Path | None, confidence: float, resamples: int,
            seed: int, max_bytes: int | None, title: str | None, by: str | None) -> None:
    """Report on SOURCE: a run directory, rollout JSONL (- for stdin), or any file `import` reads.

    The HTML page is one self-contained file (no network): heatmap, figures, provenance and,
    for run directories, the rollout explorer. Tables: leaderboard with CIs and per-task c/n.
    """
    from reliabench.commands._common import write_page
    from reliabench.report.explorer import write_report_page
    from reliabench.runs import open_source
    from reliabench.studies.scoring import group_scores, score_result

    try:
        k_values = parse_ks(ks)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k") from None
    if fmt == "html" and output is None:
        raise UsageError("report --format html needs -o/--output FILE (the page is one file)")
    with open_source(source, input_format, leaderboard=leaderboard) as src:
        threshold, finding_filter = resolve_security(ctx, threshold, security_config, src.run)
        if fmt == "html":
            assert output is not None
            result = score_result(src.records, k_values, threshold=threshold, finding_filter=finding_filter,
                                  confidence=confidence, n_resamples=resamples, seed=seed,
                                  retests=src.run.retests() if src.run is not None else (), source=source,
                                  labels=task_labels(src, by), by=by)
            size = write_page(src, result, output, title=title, max_bytes=max_bytes)
            click.echo(f"HTML report: {output} ({size // 1024} KiB)", err=True)
            return
        rep = score(src.records, k_values, threshold=threshold, finding_filter=finding_filter,
                    confidence=confidence, n_resamples=resamples, seed=seed)
        labels = task_labels(src, by)
        groups = None if by is None or labels is None else group_scores(
            src.records, labels, by, k_values, threshold=threshold, finding_filter=finding_filter,
            confidence=confidence, n_resamples=resamples, seed=seed)
        notes = src.notes
    from reliabench.report.tables import render_tables

    text = render_tables(rep, fmt, title=title, groups=groups)
    if output is None:
        emit(text)
    else:
        write_report_page(output, text)
        click.echo(f"{fmt} tables: {output}", err=True)
    if notes and fmt != "csv":
        for note in notes:
            click.echo(f"note: {note}", err=True)
    sys.stdout.flush()
