"""Scanning what an agent changed in its workspace: the one path the runner, validation and re-scans use."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from reliabench.records import Finding, ScanError
from reliabench.scanners.base import Scanner
from reliabench.scanners.changes import ChangeSet, changed_files, is_test_path

__all__ = ["scan_changes", "scan_workspace"]


def scan_workspace(
    scanners: Sequence[Scanner], starter: Path, workspace: Path
) -> tuple[tuple[Finding, ...], tuple[ScanError, ...], tuple[str, ...]]:
    """Scan what the agent changed in ``workspace`` relative to ``starter``.

    Paths that could not be examined (nested too deep, a path too long, no permission)
    become scan errors: never treated as clean.

    Returns:
        ``(findings, scan_errors, changed_files)``; findings only on changed lines.
    """
    findings, errors, changes = scan_changes(scanners, starter, workspace)
    touched = sorted({*changes.added, *changes.modified, *changes.deleted})
    return findings, errors, tuple(touched)


def scan_changes(scanners: Sequence[Scanner], starter: Path,
                 workspace: Path) -> tuple[tuple[Finding, ...], tuple[ScanError, ...], ChangeSet]:
    """Scan the changed files of ``workspace``; return findings, scan errors and the change set.

    Every file the agent added or changed is scanned, test-named ones included
    (``changed_files``' default); findings in test-named files come back marked
    ``test_file`` (whatever scanner, plugins included), and count like the others.
    """
    changes = changed_files(starter, workspace)
    files = list(changes.files)
    findings: list[Finding] = []
    errors: list[ScanError] = [
        ScanError("reliabench", rel, "not examined (nested too deep, path too long or not "
                                     "readable): its content was not scanned")
        for rel in changes.unreadable
    ]
    if files:
        for scanner in scanners:
            result = scanner.scan(workspace, files, changes.changed_lines)
            findings += _mark_test_files(result.findings)
            errors += result.errors
    return tuple(findings), tuple(errors), changes


def _mark_test_files(findings: Iterable[Finding]) -> list[Finding]:
    return [replace(f, test_file=is_test_path(f.path.replace("\\", "/"))) for f in findings]
