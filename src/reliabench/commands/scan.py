"""``reliabench scan``: re-scan a finished run with other scanners, without rerunning agents.

The re-scan itself is :func:`reliabench.scanners.rescan.rescan_run` (each rollout's
workspace rebuilt from the starter and the files the run kept, scanned on the agent's
changed lines, its findings replaced in the store; ``--dry-run`` only prints). This module
parses the options and prints the security-adjusted figures.
"""

from __future__ import annotations

import math
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from reliabench.commands._common import console as make_console
from reliabench.commands._common import (
    k_option,
    resolve_security,
    security_config_option,
    threshold_option,
)
from reliabench.metrics.analysis import parse_ks, ranking_change, score
from reliabench.metrics.security import FindingFilter, SecurityThreshold
from reliabench.records import Rollout
from reliabench.scanners import get_scanner
from reliabench.scanners.rescan import rescan_run

__all__ = ["command", "security_table"]


def security_table(records: list[Rollout], ks: tuple[int, ...], threshold: SecurityThreshold,
                   console: Console, finding_filter: FindingFilter | None = None) -> None:
    """Print reliability@k vs security-adjusted reliability@k, per-CWE counts and ranking changes.

    ``threshold`` and ``finding_filter`` are the security policy (``resolve_security``): the
    same policy gives the same figures as ``reliabench score``.
    """
    report = score(records, ks, threshold=threshold, finding_filter=finding_filter)
    table = Table(title=f"security-adjusted reliability@k (threshold {threshold})")
    table.add_column("agent", style="bold")
    for k in ks:
        table.add_column(f"reliability@{k}", justify="right")
        table.add_column(f"sec-adj@{k}", justify="right")
    table.add_column("insecure share of passing", justify="right")
    for a in report.agents:
        cells = []
        for k in ks:
            cells += [f"{a.metrics[f'reliability@{k}'].value:.3f}",
                      f"{a.metrics[f'security_adjusted_reliability@{k}'].value:.3f}"]
        share = a.metrics["insecure_share_of_passing"].value
        label = a.agent + (" [SIMULATED]" if a.simulated else "")
        table.add_row(label, *cells, "n/a" if math.isnan(share) else f"{share:.3f}")
    console.print(table)
    cwes = report.counts.cwe_counts
    all_cwes = sorted({c for d in cwes.values() for c in d}, key=lambda c: (c is None, c or 0))
    if all_cwes:
        ct = Table(title="findings at or above the threshold, by CWE")
        ct.add_column("agent", style="bold")
        for c in all_cwes:
            ct.add_column(f"CWE-{c}" if c is not None else "no CWE", justify="right")
        for a in report.agents:
            ct.add_row(a.agent, *(str(cwes.get(a.agent, {}).get(c, 0)) for c in all_cwes))
        console.print(ct)
    lenses = report.counts.lens_counts
    for a in report.agents:
        flagged = lenses.get(a.agent, {})
        if flagged:
            parts = ", ".join(f"{lens}: {count}" for lens, count in sorted(flagged.items()))
            console.print(f"{a.agent}: passing but insecure rollouts by lens -> {parts}")
    for k in ks:
        change = ranking_change(report, k)
        tau = "n/a" if math.isnan(change.kendall_tau) else f"{change.kendall_tau:.3f}"
        swaps = ", ".join(f"{a} > {b} becomes {b} > {a}" for a, b in change.swapped) or "none"
        console.print(f"k={k}: Kendall tau between the rankings = {tau}; pairs that swap: {swaps}")


@click.command("scan")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--scanner", "scanners", multiple=True, default=("bandit",), show_default=True,
              help="Scanner(s) to run (repeatable): bandit, semgrep, or a plugin.")
@threshold_option()
@security_config_option()
@k_option("1,5,10")
@click.option("--dry-run", is_flag=True, help="Print the result; leave the stored findings as they are.")
@click.pass_context
def command(ctx: click.Context, run_dir: Path, scanners: tuple[str, ...], threshold: SecurityThreshold,
            security_config: Path | None, ks: str, dry_run: bool) -> None:
    """Re-scan the code each rollout of RUN wrote, and print the security-adjusted figures.

    The figures use the run's stored security policy, as ``score RUN`` does (``--security-config``
    replaces it; an explicit ``--security-threshold`` wins over its threshold).
    """
    k_values = parse_ks(ks)
    threshold, finding_filter = resolve_security(ctx, threshold, security_config, str(run_dir))
    result = rescan_run(run_dir, [get_scanner(name) for name in scanners], dry_run=dry_run)
    console = make_console()
    console.print(f"re-scanned {result.rescanned} rollout(s) with {', '.join(scanners)}"
                  + (" (dry run: store unchanged)" if dry_run else "")
                  + (f"; {result.kept} kept as recorded (infrastructure errors or no artifacts)"
                     if result.kept else ""))
    security_table(list(result.records), k_values, threshold, console, finding_filter)
