"""``reliabench suites``: the suites bundled with the package."""

from __future__ import annotations

import click
from rich.table import Table

from reliabench.commands._common import console
from reliabench.tasks.suite import bundled_suites, load_suite

__all__ = ["command"]


@click.command("suites")
def command() -> None:
    """List the bundled task suites (use the name wherever a SUITE path is expected)."""
    table = Table("name", "version", "tasks", "security tasks", "path", title="bundled suites")
    for name, path in bundled_suites().items():
        suite = load_suite(path)
        sec = sum("security" in t.tags for t in suite.tasks)
        table.add_row(name, suite.version, str(len(suite.tasks)), str(sec), str(path))
    console().print(table)
