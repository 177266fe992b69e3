r"""Bandit, the default scanner: Python only, in-process, offline.

All files of one ``scan`` call go through ONE ``bandit.core.manager.BanditManager`` (no
subprocess per file). Files are handed to Bandit as absolute paths (a directory part keeps it
from logging per file and running about 2x slower) and the ``bandit`` logger is set to
ERROR when nobody configured it.

Mapping onto reliabench's scale (Bandit has no ``info`` and no ``critical``)::

    Bandit severity   LOW -> low   MEDIUM -> medium   HIGH -> high   UNDEFINED -> info
    Bandit confidence LOW -> low   MEDIUM -> medium   HIGH -> high   UNDEFINED -> low

The CWE is Bandit's own ``issue.cwe`` (``None`` when Bandit gives none); ``rule_id`` is the
test id (``B602``). ``# nosec`` comments are ignored: the code under scan is the agent's, and
an agent must not be able to silence the scanner that grades it.

Thread safety: a ``BanditScanner`` holds only immutable settings and builds a fresh
manager per ``scan`` call, so one instance may be shared by several threads. Bandit's
parsing runs under ``silence_parse_warnings`` (a process-wide lock: Bandit is pure Python,
so threads would not have run it in parallel anyway), which keeps a warning raised by
parsing agent code (an invalid escape such as ``"\d"``) from turning into a bogus
"syntax error" when warnings are errors.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from reliabench.errors import InvalidArgumentError
from reliabench.records import Confidence, Finding, ScanError, Severity
from reliabench.scanners.base import (
    ScanResult,
    keep_changed,
    prepare_targets,
    silence_parse_warnings,
)

with warnings.catch_warnings():
    # stevedore (Bandit's plugin loader) warns about its own deprecated argument on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from bandit.core import config as b_config
    from bandit.core import manager as b_manager

__all__ = ["BANDIT_CONFIDENCE", "BANDIT_SEVERITY", "PYTHON_SUFFIXES", "BanditScanner"]

BANDIT_SEVERITY: Final[Mapping[str, Severity]] = {
    "UNDEFINED": "info",
    "LOW": "low",
    "MEDIUM": "medium",
    "HIGH": "high",
}
BANDIT_CONFIDENCE: Final[Mapping[str, Confidence]] = {
    "UNDEFINED": "low",
    "LOW": "low",
    "MEDIUM": "medium",
    "HIGH": "high",
}
PYTHON_SUFFIXES: Final = frozenset({".py", ".pyw"})

_bandit_logger = logging.getLogger("bandit")
if _bandit_logger.level == logging.NOTSET:
    _bandit_logger.setLevel(logging.ERROR)
# Bandit's extension manager logs an ERROR for optional report formatters whose dependencies
# are absent (e.g. 'sarif' without sarif_om); reliabench uses none of them.
_stevedore_logger = logging.getLogger("stevedore.extension")
if _stevedore_logger.level == logging.NOTSET:
    _stevedore_logger.setLevel(logging.CRITICAL)


class BanditScanner:
    """Scan Python files with Bandit's Python API.

    Args:
        skip_tests: Bandit test ids to leave out (``("B101",)`` drops ``assert_used``).

    Raises:
        InvalidArgumentError: a test id is not of the form ``B<digits>``.

    Example:
        >>> BanditScanner(skip_tests=["B101"]).name
        'bandit'
    """

    name: str = "bandit"

    def __init__(self, *, skip_tests: Iterable[str] = ()) -> None:
        skips = tuple(skip_tests) if not isinstance(skip_tests, str) else (skip_tests,)
        for test_id in skips:
            if not (
                isinstance(test_id, str)
                and len(test_id) > 1
                and test_id[0] == "B"
                and test_id[1:].isdigit()
            ):
                raise InvalidArgumentError(
                    f"skip_tests: expected Bandit test ids like 'B101', got {test_id!r}"
                )
        self.skip_tests: tuple[str, ...] = tuple(sorted(set(skips)))

    def __repr__(self) -> str:
        return f"BanditScanner(skip_tests={list(self.skip_tests)!r})"

    def scan(
        self,
        root: Path,
        files: Sequence[str],
        changed_lines: Mapping[str, frozenset[int]] | None = None,
    ) -> ScanResult:
        """Scan the Python files among ``files`` in one Bandit run.

        Args:
            root: The workspace directory.
            files: POSIX paths relative to ``root``; only ``.py``/``.pyw`` files are read.
            changed_lines: When given, keep only findings whose line range touches a
                changed line (must cover every file in ``files``).

        Returns:
            Findings sorted by (path, line, rule_id); every file Bandit skipped (syntax
            error, unreadable, crash in a plugin) as a ``ScanError``.

        Raises:
            InvalidArgumentError: bad ``root``, ``files`` or ``changed_lines``.
        """
        targets, errors = prepare_targets(
            self.name, root, files, changed_lines, suffixes=PYTHON_SUFFIXES
        )
        if not targets:
            return ScanResult((), tuple(errors), 0)
        by_path = {str(t.path): t.rel for t in targets}
        profile: dict[str, Any] = {"exclude": set(self.skip_tests)} if self.skip_tests else {}
        manager = b_manager.BanditManager(
            b_config.BanditConfig(), "file", quiet=True, profile=profile, ignore_nosec=True
        )
        manager.discover_files(list(by_path))
        with silence_parse_warnings():
            manager.run_tests()
        for fname, reason in manager.get_skipped():
            errors.append(ScanError(self.name, by_path.get(str(fname), str(fname)), str(reason)))
        analysed = {str(fname) for fname in manager.files_list}
        for path, rel in by_path.items():
            if path not in analysed and not any(e.path == rel for e in errors):
                errors.append(ScanError(self.name, rel, "bandit did not analyse the file"))
        findings: list[Finding] = []
        for issue in manager.get_issue_list():
            rel = by_path.get(str(issue.fname), str(issue.fname))
            line = int(issue.lineno) if issue.lineno is not None else None
            span = [int(n) for n in (issue.linerange or ())] or ([line] if line else [])
            if not keep_changed(rel, span, changed_lines):
                continue
            cwe_id = int(getattr(issue.cwe, "id", 0) or 0)
            findings.append(
                Finding(
                    tool=self.name,
                    rule_id=str(issue.test_id),
                    severity=BANDIT_SEVERITY.get(str(issue.severity), "info"),
                    confidence=BANDIT_CONFIDENCE.get(str(issue.confidence), "low"),
                    cwe=cwe_id or None,
                    path=rel,
                    line=line,
                    message=str(issue.text),
                )
            )
        findings.sort(key=lambda f: (f.path, f.line or 0, f.rule_id, f.message))
        errors.sort(key=lambda e: (e.path, e.message))
        return ScanResult(
            findings=tuple(findings),
            errors=tuple(errors),
            files_scanned=len(analysed & set(by_path)),
        )
