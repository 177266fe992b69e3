"""A scanner plugin: report every call of ``eval`` or ``exec`` in Python files (CWE-95).

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.scanners"]
    eval-calls = "eval_scanner:EvalCallScanner"

Then ``reliabench run ... --scanner eval-calls`` (or ``reliabench scan RUN --scanner eval-calls``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import InvalidArgumentError
from reliabench.records import SEVERITY_LEVELS, Finding, ScanError, Severity
from reliabench.scanners import ScanResult, keep_changed, prepare_targets, silence_parse_warnings

__all__ = ["EvalCallScanner"]

_CALLS = frozenset({"eval", "exec"})


class EvalCallScanner:
    """Finds ``eval(...)`` and ``exec(...)`` calls; a file that does not parse is a scan error.

    Args:
        severity: The severity of a finding (``high`` by default).

    Raises:
        InvalidArgumentError: ``severity`` is not a severity level.
    """

    name = "eval-calls"

    def __init__(self, severity: Severity = "high") -> None:
        if severity not in SEVERITY_LEVELS:
            raise InvalidArgumentError(f"severity must be one of {', '.join(SEVERITY_LEVELS)}, "
                                       f"got {severity!r}")
        self.severity: Severity = severity

    def scan(self, root: Path, files: Sequence[str],
             changed_lines: Mapping[str, frozenset[int]] | None = None) -> ScanResult:
        """Scan the Python files among ``files`` (see ``reliabench.scanners.Scanner``)."""
        targets, errors = prepare_targets(self.name, root, files, changed_lines, suffixes={".py"})
        findings: list[Finding] = []
        scanned = 0
        for target in targets:
            try:
                with silence_parse_warnings():
                    tree = ast.parse(target.path.read_bytes(), filename=target.rel)
            except (SyntaxError, ValueError, OSError) as exc:
                errors.append(ScanError(self.name, target.rel, f"cannot parse: {exc}"))
                continue
            scanned += 1
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in _CALLS
                        and keep_changed(target.rel, [node.lineno], changed_lines)):
                    findings.append(Finding(self.name, f"call-{node.func.id}", self.severity, "high",
                                            95, target.rel, node.lineno,
                                            f"{node.func.id}() runs code built at run time"))
        findings.sort(key=lambda f: (f.path, f.line or 0, f.rule_id))
        return ScanResult(tuple(findings), tuple(errors), scanned)
