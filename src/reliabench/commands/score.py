"""``reliabench score``: reliability@k, pass^k, the misapplied figure and more, per agent."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.commands._common import (
    bootstrap_options,
    emit,
    format_option,
    k_option,
    resolve_security,
    security_config_option,
    source_options,
    threshold_option,
)
from reliabench.errors import InvalidArgumentError
from reliabench.importers import load_source
from reliabench.metrics.analysis import parse_ks, score
from reliabench.metrics.security import SecurityThreshold
from reliabench.report import render_score

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
@click.pass_context
def command(ctx: click.Context, source: str, input_format: str, leaderboard: str | None, ks: str, fmt: str,
            threshold: SecurityThreshold, security_config: Path | None, confidence: float,
            resamples: int, seed: int, html_path: Path | None, exclude_flaky_tests: bool,
            flaky_verdict: str) -> None:
    """Score SOURCE: rollout JSONL (- for stdin), a run directory, or any importable format."""
    try:
        k_values = parse_ks(ks)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k") from None
    loaded = load_source(source, input_format, leaderboard=leaderboard)
    records = list(loaded.records)
    from reliabench.commands._noise_score import noise_for_score

    noise = noise_for_score(source, records, exclude_flaky_tests=exclude_flaky_tests,
                            flaky_verdict=flaky_verdict)
    if noise is not None:
        records = list(noise.records)
    threshold, finding_filter = resolve_security(ctx, threshold, security_config, source)
    report = score(records, k_values, threshold=threshold, finding_filter=finding_filter,
                   confidence=confidence, n_resamples=resamples, seed=seed)
    text = render_score(report, fmt, color=fmt == "table" and sys.stdout.isatty())
    if noise is not None:
        text = noise.attach(text, fmt)
    from reliabench.commands._adaptive_score import adaptive_for_score

    adaptive = adaptive_for_score(source, records)
    if adaptive is not None:
        text = adaptive.attach(text, fmt)
    emit(text)
    if html_path is not None:  # the same page as `reliabench report SOURCE -o FILE`
        from reliabench.report.explorer import write_source_page

        write_source_page(source, records, report, html_path)
        click.echo(f"HTML report: {html_path}", err=True)
