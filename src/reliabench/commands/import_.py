"""``reliabench import PATH``: convert another harness's results to rollout JSONL.

The format-specific options (``--scorer``, ``--variant``, ``--leaderboard``, and those of
importer plugins) are not written here: each importer declares its own
(:class:`~reliabench.importers.ImporterOption`) and :func:`build_command` turns them into
click options.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from reliabench.commands._registry_choice import RegistryChoice
from reliabench.importers import IMPORTERS, declared_options
from reliabench.records import write_jsonl

__all__ = ["build_command", "command"]


def _run(path: Path, output: Path | None, input_format: str, agent: str | None,
         **options: Any) -> None:
    """Convert PATH, another harness's results (file or folder), to rollout JSONL.

    The format is detected from the content unless --format names it; the options after
    --agent belong to the formats named in their help.
    """
    from reliabench.runs import read_source

    result = read_source(path, input_format, agent=agent, **options)
    n = write_jsonl(result.records, output if output is not None else sys.stdout)
    agents = Counter(r.agent for r in result.records)
    tasks = len({r.task_id for r in result.records})
    click.echo(f"{result.format}: {n} rollout(s) of {len(agents)} agent(s) on {tasks} task(s)"
               + (f" -> {output}" if output else ""), err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


def build_command() -> click.Command:
    """The ``import`` command, with one option per option the importers declare."""
    params: list[click.Parameter] = [
        click.Argument(["path"], type=click.Path(exists=True, path_type=Path)),
        click.Option(["-o", "--output"], type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Write JSONL here (default: standard output)."),
        click.Option(["--format", "input_format"], default="auto", show_default=True,
                     type=RegistryChoice(IMPORTERS, ["auto"]), help="Format of PATH."),
        click.Option(["--agent"], default=None, help="Name for the agent (overrides the format's)."),
    ]
    for opt in declared_options():
        params.append(click.Option(
            [f"--{opt.name.replace('_', '-')}", opt.name], default=None,
            type=click.Choice(opt.choices) if opt.choices is not None else None, help=opt.help))
    return click.Command("import", callback=_run, params=params, help=_run.__doc__)


command = build_command()
