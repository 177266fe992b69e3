"""``reliabench retest``: re-run the hidden tests on the files each rollout left; report harness noise."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from reliabench.commands._common import emit, sandbox_option
from reliabench.run.retest import retest_run
from reliabench.store import RunStore
from reliabench.studies.noise import NoiseReport, harness_noise, noise_to_json

__all__ = ["command", "render_noise"]


def render_noise(report: NoiseReport, *, limit: int = 20) -> str:
    """Plain-text lines: the noise rate, the flaky tests, the variance split."""
    rate = report.noise_rate
    lines = [
        f"harness noise: {report.flaky_rollouts} of {rate.rollouts} re-tested rollout(s) flip their "
        f"verdict on identical code = {rate.value:.1%} [{rate.ci_low:.1%}, {rate.ci_high:.1%}] "
        f"({round(100 * rate.confidence)}% Clopper-Pearson); up to {report.max_reruns} re-run(s) per "
        f"rollout, {report.reruns} in all" + (f", {report.test_errors} harness error(s) left out"
                                              if report.test_errors else ""),
    ]
    if report.flaky_tests:
        lines.append(f"flaky tests ({len(report.flaky_tests)}): outcome changed on identical code, "
                     "on the reference solution or in several agents' code")
        for f in report.flaky_tests[:limit]:
            evidence = (f"reference flips {f.reference_flips} in {f.reference_runs} runs"
                        if f.evidence == "reference" else f"{f.agents} agent(s)")
            lines.append(f"  {f.task_id} :: {f.test}  flips {f.flips} in {f.runs} runs "
                         f"({f.rollouts} rollout(s); {evidence})")
        if len(report.flaky_tests) > limit:
            lines.append(f"  ... {len(report.flaky_tests) - limit} more (--format json lists all)")
    else:
        lines.append("flaky tests: none seen")
    if report.code_flips:
        lines.append(f"not counted as flaky ({len(report.code_flips)}): flipped only in one agent's code, "
                     "never on the reference (the code may be the cause)")
        for f in report.code_flips[:limit]:
            lines.append(f"  {f.task_id} :: {f.test}  flips {f.flips} in {f.runs} runs "
                         f"({f.rollouts} rollout(s))")
    if report.variance:
        lines.append("rollout-to-rollout variance of the verdict (mean over tasks): harness part "
                     "(same code) vs agent part (different code)")
        for v in report.variance:
            lines.append(f"  {v.agent:<24} total {v.total:.4f} = harness {v.harness:.4f} + agent "
                         f"{v.agent_part:.4f}  ({v.tasks} task(s))")
    return "\n".join(lines) + "\n"


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
    with RunStore.open_existing(run_dir, readonly=True) as store:
        records = store.rollouts()
        rows = store.retest_rows()
    report = harness_noise(records, rows, confidence=confidence)
    if fmt == "json":
        emit(json.dumps(noise_to_json(report), indent=2) + "\n")
    else:
        emit(render_noise(report))
