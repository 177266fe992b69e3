"""``reliabench score``: reliability@k, pass^k, the misapplied figure and more, per agent."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.commands._common import (
    bootstrap_options,
    by_option,
    emit,
    format_option,
    k_option,
    resolve_security,
    security_config_option,
    source_options,
    task_labels,
    threshold_option,
)
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import parse_ks
from reliabench.metrics.security import SecurityThreshold

__all__ = ["command"]


@click.command("score")
@click.argument("source", metavar="SOURCE")
@source_options()
@k_option()
@format_option()
@threshold_option()
@security_config_option()
@bootstrap_options()
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the HTML report of `reliabench report` (figures, heatmap, explorer).")
@click.option("--exclude-flaky-tests", is_flag=True,
              help="Run with re-tests: leave out tests whose outcome changed on identical code.")
@click.option("--flaky-verdict", type=click.Choice(["original", "majority"]), default="original",
              show_default=True, help="Run with re-tests: judge a rollout whose verdict flips by the "
                                      "majority of its runs.")
@by_option()
@click.pass_context
def command(ctx: click.Context, source: str, input_format: str, leaderboard: str | None, ks: str, fmt: str,
            threshold: SecurityThreshold, security_config: Path | None, confidence: float,
            resamples: int, seed: int, html_path: Path | None, exclude_flaky_tests: bool,
            flaky_verdict: str, by: str | None) -> None:
    """Score SOURCE: rollout JSONL (- for stdin), a run directory, or any importable format."""
    from reliabench.commands._common import write_page
    from reliabench.report.score_render import render_score_result
    from reliabench.runs import open_source
    from reliabench.studies.scoring import score_result

    try:
        k_values = parse_ks(ks)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k") from None
    with open_source(source, input_format, leaderboard=leaderboard) as src:
        run = src.run
        threshold, finding_filter = resolve_security(ctx, threshold, security_config, run)
        result = score_result(src.records, k_values, threshold=threshold, finding_filter=finding_filter,
                              confidence=confidence, n_resamples=resamples, seed=seed,
                              retests=run.retests() if run is not None else (),
                              adaptive=run.adaptive() if run is not None else None,
                              exclude_flaky_tests=exclude_flaky_tests, flaky_verdict=flaky_verdict,
                              source=source, labels=task_labels(src, by), by=by)
        emit(render_score_result(result, fmt, color=fmt == "table" and sys.stdout.isatty()))
        if html_path is not None:  # the same page as `reliabench report SOURCE -o FILE`
            write_page(src, result, html_path)
            click.echo(f"HTML report: {html_path}", err=True)
