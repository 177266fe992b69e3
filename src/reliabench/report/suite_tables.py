"""Render suites: the bundled suites (``reliabench suites``) and a suite's validation (``validate``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from reliabench.tasks.validate import TaskCheck

__all__ = ["SuiteRow", "suites_table", "validation_line", "validation_summary", "validation_table"]


@dataclass(frozen=True, slots=True)
class SuiteRow:
    """One bundled suite, as listed."""

    name: str
    version: str
    tasks: int
    security_tasks: int
    path: Path


def suites_table(rows: Iterable[SuiteRow]) -> Table:
    """The table of ``reliabench suites``."""
    table = Table("name", "version", "tasks", "security tasks", "path", title="bundled suites")
    for r in rows:
        table.add_row(r.name, r.version, str(r.tasks), str(r.security_tasks), str(r.path))
    return table


def validation_line(check: TaskCheck) -> str:
    """The progress line of one checked task (rich markup): ``ok TASK`` or ``FAIL TASK``."""
    mark = "[green]ok[/]" if check.ok else "[red]FAIL[/]"
    return f"{mark} {check.task_id}" + (f" ({check.exception})" if check.exception else "")


def validation_table(checks: Sequence[TaskCheck], title: str) -> Table:
    """One row per task: tests, reference and starter results, insecure variants caught, status."""
    table = Table("task", "tests", "security tests", "reference passed", "starter failed",
                  "insecure variants caught", "status", title=title)
    for c in checks:
        variants = ", ".join(f"{v.name}: {'+'.join(v.caught_by) or 'NOT CAUGHT'}" for v in c.variants) or "-"
        table.add_row(c.task_id, str(c.tests), str(c.security_tests),
                      f"{c.reference_passed}/{c.tests + c.security_tests}", str(c.starter_failed), variants,
                      "ok" if c.ok else "FAIL")
    return table


def validation_summary(checks: Sequence[TaskCheck]) -> list[str]:
    """The problems (rich markup), declared deviations, exceptions by reason, the count of valid tasks.

    The exceptions (tasks that are not valid, by the first check they failed) are listed when
    the checks name them (:attr:`TaskCheck.exception`).
    """
    lines = [f"[red]problem:[/] {p}" for c in checks for p in c.problems]
    lines += [f"note: {n}" for c in checks for n in c.notes]
    by_kind: dict[str, list[str]] = {}
    for c in checks:
        if c.exception:
            by_kind.setdefault(c.exception, []).append(c.task_id)
    if by_kind:
        lines.append("exceptions by reason:")
        lines += [f"  {kind} ({len(ids)}): {', '.join(ids)}" for kind, ids in sorted(by_kind.items())]
    isolation = sorted({c.isolation for c in checks})
    lines.append(f"{len(checks) - sum(not c.ok for c in checks)}/{len(checks)} task(s) valid; "
                 f"isolation: {', '.join(isolation)}")
    return lines
