"""``reliabench validate``: references pass, starters fail, insecure variants are caught."""

from __future__ import annotations

import os
import sys

import click

from reliabench.commands._common import console, sandbox_option
from reliabench.report.suite_tables import validation_line, validation_summary, validation_table
from reliabench.tasks.suite import resolve_suite
from reliabench.tasks.validate import TaskCheck, validate_suite

__all__ = ["command"]


@click.command("validate")
@click.argument("suite", metavar="SUITE")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count")
@sandbox_option()
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable).")
def command(suite: str, workers: int, sandbox: str, tasks: tuple[str, ...]) -> None:
    """Check SUITE (a path or a bundled name): exit 0 when every task is valid, 1 otherwise."""
    loaded = resolve_suite(suite)
    err = console(stderr=True)

    def show(check: TaskCheck) -> None:
        err.print(validation_line(check))

    checks = validate_suite(loaded, workers=workers, sandbox=sandbox, tasks=tasks or None, progress=show)
    console().print(validation_table(checks, f"{loaded.name} {loaded.version}"))
    for line in validation_summary(checks):
        err.print(line)
    if any(c.problems for c in checks):
        sys.exit(1)
