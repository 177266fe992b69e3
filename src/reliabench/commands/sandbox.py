"""``reliabench sandbox check``: run the containment self-check on a sandbox backend.

Exit codes: 0 every check passed; 1 a check failed or could not run (the table says which and
why); 2 usage (unknown backend name or check); 3 the backend does not work on this host.
"""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from reliabench.commands._common import console, emit

__all__ = ["command"]


@click.group("sandbox")
def command() -> None:
    """Sandbox backends: check that one contains hostile code (see docs/threat-model.md)."""


def _backend_names() -> list[str]:
    from reliabench.sandbox import SANDBOXES

    return ["auto", *SANDBOXES.names()]


@command.command("check")
@click.option("--backend", "backend", default="auto", show_default=True, metavar="NAME",
              help="auto (the backend a run would use), a registered backend (built-in or plugin), "
                   "or warm (the warm test workers' jail).")
@click.option("--slot", type=click.IntRange(0, 3999), default=0, show_default=True,
              help="The worker slot to attack in (its uid, as root, and its host-wide lock).")
@click.option("--check", "checks", multiple=True, metavar="NAME",
              help="Run only this check (repeatable; default: all).")
@click.option("--image", metavar="REF", default=None,
              help="Run the attacks in this image (a container backend: an image with python3).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def check_command(backend: str, slot: int, checks: tuple[str, ...], image: str | None, fmt: str) -> None:
    """Run the attacks a sandbox must stop against a backend; exit 1 if one gets through.

    Every third-party backend must pass all of them. The built-in `none` backend fails by design
    (it does not isolate), and `namespaces` fails read_world_readable_dirs (no private file system
    view); see docs/threat-model.md.

    Exit status: 0 every check passed; 1 a check failed or could not run; 2 usage error; 3 the
    backend does not work on this host.
    """
    from reliabench.errors import UsageError
    from reliabench.sandbox.environment import HOST, EnvironmentSpec
    from reliabench.sandbox.selfcheck import CHECKS, run_selfcheck

    names = _backend_names()
    if backend not in names:
        raise UsageError(f"--backend: unknown sandbox backend {backend!r}; choose one of: {', '.join(names)}")
    spec = HOST if image is None else EnvironmentSpec(image=image, source="--image")
    report = run_selfcheck(backend, slot=slot, checks=list(checks) or None, spec=spec)
    if fmt == "json":
        emit(json.dumps({
            "backend": report.backend, "slot": report.slot, "python": report.python, "passed": report.passed,
            "checks": [{"check": r.check, "status": r.status, "detail": r.detail} for r in report.results],
        }, indent=2) + "\n")
    else:
        promises = {c.name: c.promise for c in CHECKS}
        table = Table("check", "status", "promise", "detail",
                      title=f"containment self-check: backend {report.backend} (slot {report.slot})")
        colour = {"passed": "green", "failed": "red", "skipped": "yellow"}
        for r in report.results:
            table.add_row(r.check, f"[{colour[r.status]}]{r.status}[/]", promises[r.check], r.detail)
        console().print(table)
        passed = sum(r.status == "passed" for r in report.results)
        verdict = "contains hostile code" if report.passed else "does NOT pass the containment self-check"
        click.echo(f"{report.backend}: {passed}/{len(report.results)} check(s) passed: {verdict}", err=True)
    if not report.passed:
        sys.exit(1)
