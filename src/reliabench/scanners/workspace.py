"""Scanning what an agent changed in its workspace: the one path the runner, validation and re-scans use."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Final

from reliabench.files.untrusted import walk_tree
from reliabench.records import Finding, ScanError
from reliabench.scanners.base import Scanner
from reliabench.scanners.changes import ChangeSet, changed_files, is_test_path

__all__ = ["BYTECODE_PATTERNS", "remove_bytecode", "scan_changes", "scan_workspace"]

BYTECODE_PATTERNS: Final = ("*.pyc", "*.pyo")
"""Compiled Python: no scanner reads it, and CPython may run it instead of the source."""


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


def remove_bytecode(workspace: Path) -> tuple[tuple[ScanError, ...], tuple[str, ...]]:
    """Delete every compiled Python file (``*.pyc``, ``*.pyo``, at any depth) from ``workspace``.

    The runner calls it after scanning and before the hidden tests, so that the code the tests
    run is the code the scanners read (and the artifacts keep): CPython loads an *unchecked*
    hash-based ``__pycache__/m.cpython-311.pyc`` without comparing it with ``m.py``, a
    timestamp-based one whose header the agent forged to match the source likewise, and a
    sourceless ``m.pyc`` with no ``m.py`` at all. Bytecode is a cache (never part of the
    change set); removing it costs a recompilation. Links are removed, never followed.

    Returns:
        ``(errors, removed)``: a scan error per file that could not be removed (its code may
        run unscanned: never clean), and the removed paths, sorted.
    """
    removed: list[str] = []
    errors: list[ScanError] = []
    for e in walk_tree(Path(workspace)):
        name = PurePosixPath(e.rel).name
        if e.kind in ("dir", "error") or not any(fnmatch.fnmatchcase(name, p) for p in BYTECODE_PATTERNS):
            continue
        try:
            os.unlink(Path(workspace) / e.rel)  # unlink removes a link itself, never its target
        except OSError as exc:
            errors.append(ScanError("reliabench", e.rel, f"compiled Python that could not be removed "
                                    f"({exc.strerror or exc}): it may run in place of the scanned source"))
            continue
        removed.append(e.rel)
    return tuple(errors), tuple(sorted(removed))
