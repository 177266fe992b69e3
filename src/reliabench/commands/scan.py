"""``reliabench scan``: re-scan a finished run with other scanners, without rerunning agents.

The re-scan itself is :func:`reliabench.scanners.rescan.rescan_run` (each rollout's
workspace rebuilt from the starter and the files the run kept, scanned on the agent's
changed lines, its findings replaced in the store; ``--dry-run`` only prints). This module
parses the options and prints the security-adjusted figures.
"""

from __future__ import annotations

from pathlib import Path

import click

from reliabench.commands._common import console as make_console
from reliabench.commands._common import (
    k_option,
    resolve_security,
    security_config_option,
    threshold_option,
)
from reliabench.metrics.analysis import parse_ks, score
from reliabench.metrics.security import SecurityThreshold
from reliabench.report.scan_tables import security_tables
from reliabench.report.terminal import print_parts
from reliabench.runs import RunDirectory
from reliabench.scanners import get_scanner
from reliabench.scanners.rescan import rescan_run

__all__ = ["command"]


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
    with RunDirectory.open(run_dir, writable=not dry_run) as run:
        threshold, finding_filter = resolve_security(ctx, threshold, security_config, run)
        result = rescan_run(run, [get_scanner(name) for name in scanners], dry_run=dry_run)
    console = make_console()
    console.print(f"re-scanned {result.rescanned} rollout(s) with {', '.join(scanners)}"
                  + (" (dry run: store unchanged)" if dry_run else "")
                  + (f"; {result.kept} kept as recorded (infrastructure errors or no artifacts)"
                     if result.kept else ""))
    report = score(list(result.records), k_values, threshold=threshold, finding_filter=finding_filter)
    print_parts(console, security_tables(report))
