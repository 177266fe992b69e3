"""``reliabench demo``: the whole idea on a fresh machine, offline, in one command.

Runs the bundled ``py30`` suite with three SIMULATED agents x n rollouts through the real
sandbox, hidden tests and Bandit scanner, stores the run (resumable: a second call only prints),
and prints reliability@k and pass^k with CIs, the misapplied pass@k beside them with the
inflation, the single-rollout figures, and security-adjusted reliability@k.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

import click

from reliabench.commands._common import console as make_console
from reliabench.commands._common import sandbox_option, test_workers_option, write_page
from reliabench.commands.run import execute_run
from reliabench.report import render_score
from reliabench.report.marks import SIMULATED
from reliabench.run.settings import RunSettings
from reliabench.runs import open_source
from reliabench.studies.scoring import score_result

__all__ = ["DEMO_AGENTS", "command"]

DEMO_AGENTS = Path(str(files("reliabench") / "examples" / "demo-agents.toml"))


@click.command("demo")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("reliabench-demo"),
              show_default=True, help="Run directory (an existing demo run is resumed).")
@click.option("-n", "n", type=click.IntRange(min=1), default=10, show_default=True, help="Rollouts per pair.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable; for a quick look).")
@sandbox_option()
@click.option("--test-timeout", type=click.FloatRange(min=0.5), default=8.0, show_default=True,
              help="Cap on the hidden tests' wall time per rollout (hanging code costs this much).")
@test_workers_option()
def command(out: Path, n: int, workers: int, seed: int, tasks: tuple[str, ...], sandbox: str,
            test_timeout: float, test_workers: str) -> None:
    """Run the bundled suite with three simulated agents and print the summary."""
    console = make_console()
    console.rule("[bold]reliabench demo")
    console.print(f"Three [yellow]{SIMULATED}[/] agents (known behaviour, real code, really executed and "
                  f"scanned) x the bundled py30 suite x n={n} rollouts.\n"
                  f"Agents file: {DEMO_AGENTS}\n")
    execute_run(RunSettings(n=n, workers=workers, seed=seed, sandbox=sandbox, scanners=("bandit",),
                            test_timeout_s=test_timeout, test_workers=test_workers, suite="py30",
                            agents=DEMO_AGENTS, out=out, tasks=tasks))
    ks = tuple(k for k in (1, 5, 10) if k <= n) or (1,)
    html_path = out / "report.html"
    with open_source(str(out)) as src:
        result = score_result(src.records, ks, seed=seed, retests=src.run.retests() if src.run else ())
        console.print()
        console.print(render_score(result.report, "table", color=console.is_terminal, width=console.width),
                      end="")
        console.print()
        write_page(src, result, html_path, title="reliabench demo (simulated agents)")
    console.print("How to read this: [bold]misapplied pass@k[/] is what a harness reports when it feeds the "
                  "tests of ONE rollout to the estimator; [bold]reliability@k[/] uses n independent rollouts "
                  "and counts a rollout only if it passes ALL hidden tests. The gap is the inflation.")
    console.print(f"\nRun directory: {out}   (re-score: reliabench score {out} -k 1,5,10)")
    console.print(f"HTML report:   {html_path}")
    console.print("Evaluate a real agent: reliabench run py30 --agents YOUR-agents.toml -n 10 --out RUN "
                  "(see docs/agents.md)")
