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
from reliabench.errors import ReliabenchError
from reliabench.report import render_score
from reliabench.report.marks import SIMULATED
from reliabench.run.settings import RunSettings
from reliabench.runs import open_source
from reliabench.store import RunStore, is_run_directory
from reliabench.studies.scoring import score_result

__all__ = ["DEMO_AGENTS", "DEMO_TEST_TIMEOUT_S", "command"]

DEMO_AGENTS = Path(str(files("reliabench") / "examples" / "demo-agents.toml"))

DEMO_TEST_TIMEOUT_S = 4.0
"""The demo's cap on the hidden tests' wall time per rollout, for a new run.

Every py30 reference solution's tests take well under 0.5 s on a fresh sandboxed pytest and
under 0.1 s warm (docs/benchmarks.md), so 4 s leaves a margin of 10x and more; what it bounds is
the simulated agents' hanging code (``while True: pass``, about 3% of the rollouts), each of
which costs the whole cap in CPU. The figures do not depend on it: a hang is ``timeout`` at any
cap. A run made with another cap (the demo's was 8 s before) resumes with its own.
"""


def _stored_timeout(out: Path) -> float | None:
    """The ``test_timeout_s`` an existing run in ``out`` was made with (None: no run there)."""
    if not is_run_directory(out):
        return None
    try:
        with RunStore.open_existing(out, readonly=True) as store:
            stored = store.run_info().test_timeout_s
    except ReliabenchError:  # a broken store: the run itself says what is wrong with it
        return None
    return float(stored) if stored is not None else None


@click.command("demo")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("reliabench-demo"),
              show_default=True, help="Run directory (an existing demo run is resumed).")
@click.option("-n", "n", type=click.IntRange(min=1), default=10, show_default=True, help="Rollouts per pair.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable; for a quick look).")
@sandbox_option()
@click.option("--test-timeout", type=click.FloatRange(min=0.5), default=None,
              help=f"Cap on the hidden tests' wall time per rollout (hanging code costs this much) "
                   f"[default: {DEMO_TEST_TIMEOUT_S:g} s; an existing run resumes with its own].")
@test_workers_option()
def command(out: Path, n: int, workers: int, seed: int, tasks: tuple[str, ...], sandbox: str,
            test_timeout: float | None, test_workers: str) -> None:
    """Run the bundled suite with three simulated agents and print the summary."""
    if test_timeout is None:
        test_timeout = _stored_timeout(out) or DEMO_TEST_TIMEOUT_S
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
