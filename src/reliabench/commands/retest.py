"""``reliabench retest``: re-run the hidden tests on the files each rollout left; report harness noise."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from reliabench.commands._common import emit, sandbox_option
from reliabench.report.noise_tables import noise_to_json, render_noise
from reliabench.run.retest import retest_run
from reliabench.runs import RunDirectory
from reliabench.studies.noise import harness_noise

__all__ = ["command"]


@click.command("retest")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--times", type=click.IntRange(min=1), default=5, show_default=True,
              help="Re-runs per rollout in total (those already recorded count: re-running tops up).")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count")
@sandbox_option(default=None, help="Sandbox backend (default: the run's).")
@click.option("--order", type=click.Choice(["shuffled", "fixed"]), default="shuffled", show_default=True,
              help="Test order of each re-run: seeded random (finds order-dependent tests) or as collected.")
@click.option("--skip-unreproducible", is_flag=True,
              help="Skip rollouts whose changed files were not all kept, instead of refusing.")
@click.option("--report-only", is_flag=True, help="Run nothing; report the re-tests already recorded.")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def command(run_dir: Path, times: int, workers: int, sandbox: str | None, order: str,
            skip_unreproducible: bool, report_only: bool, confidence: float, fmt: str) -> None:
    """Re-run the hidden tests of every rollout of RUN on its unchanged files; report flaky tests."""
    if not report_only:
        def show(done: int, total: int) -> None:
            if done == total or done % max(1, total // 10) == 0:
                print(f"re-tested {done}/{total} rollout(s)", file=sys.stderr, flush=True)

        summary = retest_run(run_dir, times, workers=workers, sandbox=sandbox, shuffle=order == "shuffled",
                             skip_unreproducible=skip_unreproducible, progress=show)
        skipped = summary.skipped_unreproducible
        extra = (f"; {len(skipped)} skipped (files not kept): " + ", ".join(skipped[:5])) if skipped else ""
        if summary.reference_runs:
            extra += f"; {summary.reference_runs} run(s) of reference solutions"
        click.echo(f"retest: {summary.executed} re-run(s) executed; {summary.rollouts} rollout(s) "
                   f"re-tested{extra}", err=True)
    with RunDirectory.open(run_dir) as run:
        report = harness_noise(run.records(), run.retests(), confidence=confidence)
    if fmt == "json":
        emit(json.dumps(noise_to_json(report), indent=2) + "\n")
    else:
        emit(render_noise(report))
