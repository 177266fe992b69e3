"""``reliabench export``: a run's rollout records as JSONL."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reliabench.records import write_jsonl
from reliabench.store import RunStore

__all__ = ["command"]


@click.command("export")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write here (atomically) instead of standard output.")
def command(run_dir: Path, fmt: str, output: Path | None) -> None:
    """Export the rollout records of RUN (each with its isolation level)."""
    with RunStore.open_existing(run_dir, readonly=True) as store:
        records = store.rollouts()
    if output is None:
        write_jsonl(records, sys.stdout)
    else:
        n = write_jsonl(records, output)
        click.echo(f"wrote {n} rollout record(s) to {output}", err=True)
