"""``reliabench import PATH``: convert another harness's results to rollout JSONL."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from reliabench.importers import FORMATS, load_foreign
from reliabench.records import write_jsonl

__all__ = ["command"]


@click.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write JSONL here (default: standard output).")
@click.option("--format", "input_format", default="auto", show_default=True,
              type=click.Choice(["auto", *FORMATS]), help="Format of PATH.")
@click.option("--agent", default=None, help="Name for the agent (overrides the format's).")
@click.option("--scorer", default=None, help="Inspect logs: the scorer that decides success.")
@click.option("--variant", default=None, type=click.Choice(["plus", "base"]),
              help="EvalPlus: plus (base and plus tests, default) or base tests only.")
@click.option("--leaderboard", default=None,
              help="SWE-bench leaderboards file: the leaderboard to read (e.g. bash-only).")
def command(path: Path, output: Path | None, input_format: str, agent: str | None,
            scorer: str | None, variant: str | None, leaderboard: str | None) -> None:
    """Convert PATH (SWE-bench, Terminal-Bench, tau-bench, Inspect, EvalPlus, human-eval) to JSONL."""
    result = load_foreign(path, format=input_format, agent=agent, scorer=scorer, variant=variant,
                          leaderboard=leaderboard)
    n = write_jsonl(result.records, output if output is not None else sys.stdout)
    agents = Counter(r.agent for r in result.records)
    tasks = len({r.task_id for r in result.records})
    click.echo(f"{result.format}: {n} rollout(s) of {len(agents)} agent(s) on {tasks} task(s)"
               + (f" -> {output}" if output else ""), err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
