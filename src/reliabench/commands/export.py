"""``reliabench export``: a run's rollout records as JSONL, or as Inspect AI eval logs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.records import write_jsonl
from reliabench.runs import RunDirectory

__all__ = ["command"]


@click.command("export")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "inspect"]), default="jsonl", show_default=True,
              help="jsonl: rollout records; inspect: Inspect AI eval log(s) for `inspect view`.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Write here (atomically) instead of standard output; for inspect: a .eval file, "
                   "or a directory that gets one <agent>.eval per agent.")
@click.option("--agent", default=None, help="inspect: export only this agent.")
def command(run_dir: Path, fmt: str, output: Path | None, agent: str | None) -> None:
    """Export the rollout records of RUN as JSONL, or as Inspect AI logs (--format inspect)."""
    if fmt == "inspect":
        from reliabench.exporters.inspect_eval import export_inspect

        if output is None:
            raise click.BadParameter("--format inspect writes files: give -o run.eval or -o DIR",
                                     param_hint="-o")
        with RunDirectory.open(run_dir) as run:
            written = export_inspect(run, output, agent=agent)
        for path in written:
            click.echo(f"wrote {path} (open it with: inspect view --log-dir {path.parent})", err=True)
        return
    if agent is not None:
        raise click.BadParameter("--agent applies to --format inspect", param_hint="--agent")
    with RunDirectory.open(run_dir) as run:
        records = run.records()
    if output is None:
        write_jsonl(records, sys.stdout)
    else:
        n = write_jsonl(records, output)
        click.echo(f"wrote {n} rollout record(s) to {output}", err=True)
