"""``reliabench validate``: references pass, starters fail, insecure variants are caught."""

from __future__ import annotations

import os
import sys

import click
from rich.table import Table

from reliabench.commands._common import console, sandbox_option
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
        mark = "[green]ok[/]" if check.ok else "[red]FAIL[/]"
        err.print(f"{mark} {check.task_id}")

    checks = validate_suite(loaded, workers=workers, sandbox=sandbox, tasks=tasks or None, progress=show)
    table = Table("task", "tests", "security tests", "reference passed", "starter failed",
                  "insecure variants caught", "status", title=f"{loaded.name} {loaded.version}")
    for c in checks:
        variants = ", ".join(f"{v.name}: {'+'.join(v.caught_by) or 'NOT CAUGHT'}" for v in c.variants) or "-"
        table.add_row(c.task_id, str(c.tests), str(c.security_tests),
                      f"{c.reference_passed}/{c.tests + c.security_tests}", str(c.starter_failed), variants,
                      "ok" if c.ok else "FAIL")
    console().print(table)
    problems = [p for c in checks for p in c.problems]
    for p in problems:
        err.print(f"[red]problem:[/] {p}")
    isolation = sorted({c.isolation for c in checks})
    err.print(f"{len(checks) - sum(not c.ok for c in checks)}/{len(checks)} task(s) valid; "
              f"isolation: {', '.join(isolation)}")
    if problems:
        sys.exit(1)
