"""Semgrep, the optional second scanner (``pip install 'reliabench[semgrep]'``).

It runs the ``semgrep`` command ONCE for many files (start-up dominates the cost), fully
offline: only local rule files (the bundled ``scanners/rules/*.yml`` by default, never a
registry config such as ``auto`` or ``p/python``), ``--metrics=off`` and the version check
disabled (``SEMGREP_ENABLE_VERSION_CHECK=0``: without it each run can stall ~100 s offline).
``--experimental`` (the faster engine) is used when the installed Semgrep accepts it.
``nosemgrep`` comments are ignored (``--disable-nosem``): the agent must not be able to
silence the scanner that grades it. Explicit file targets bypass ``.semgrepignore`` and
``.gitignore``, so a workspace cannot hide files either.

Severity mapping onto reliabench's scale::

    rule metadata "reliabench-severity" (info|low|medium|high|critical)   used as is
    otherwise Semgrep severity   ERROR -> high   WARNING -> medium   INFO -> low
                                 CRITICAL -> critical  HIGH -> high  MEDIUM -> medium
                                 LOW -> low   EXPERIMENT / INVENTORY -> info
    confidence: rule metadata "confidence" (LOW|MEDIUM|HIGH), else medium
    CWE: the first number of rule metadata "cwe" ("CWE-89: ..." or a list of them)

A Python file that Python cannot parse, a file Semgrep reports an error for (including a
partial parse), and every file of a call that failed as a whole are ``ScanError``s.

Thread safety: instances hold only immutable settings; each ``scan`` runs its own process.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from reliabench.errors import InvalidArgumentError, MissingExtraError
from reliabench.records import SEVERITY_LEVELS, Confidence, Finding, ScanError, Severity
from reliabench.scanners.base import (
    ScanResult,
    ScanTarget,
    keep_changed,
    prepare_targets,
    silence_parse_warnings,
)

__all__ = [
    "BUNDLED_RULES",
    "LANGUAGE_SUFFIXES",
    "SEMGREP_SEVERITY",
    "SemgrepScanner",
    "find_semgrep",
]

BUNDLED_RULES: Final = Path(__file__).resolve().parent / "rules"
SEMGREP_SEVERITY: Final[Mapping[str, Severity]] = {
    "ERROR": "high",
    "WARNING": "medium",
    "INFO": "low",
    "CRITICAL": "critical",
    "HIGH": "high",
    "MEDIUM": "medium",
    "LOW": "low",
    "EXPERIMENT": "info",
    "INVENTORY": "info",
}
LANGUAGE_SUFFIXES: Final[Mapping[str, frozenset[str]]] = {
    "python": frozenset({".py", ".pyw", ".pyi"}),
    "javascript": frozenset({".js", ".mjs", ".cjs", ".jsx"}),
    "js": frozenset({".js", ".mjs", ".cjs", ".jsx"}),
    "typescript": frozenset({".ts", ".tsx", ".mts", ".cts"}),
    "ts": frozenset({".ts", ".tsx", ".mts", ".cts"}),
}
_LEVELS: Final[Mapping[str, Severity]] = {level: level for level in SEVERITY_LEVELS}
_CONFIDENCE: Final[Mapping[str, Confidence]] = {"LOW": "low", "MEDIUM": "medium", "HIGH": "high"}
_CWE_RE: Final = re.compile(r"CWE-(\d+)", re.IGNORECASE)
_LANGUAGES_RE: Final = re.compile(r"^\s*languages:\s*\[([^\]]*)\]", re.MULTILINE)
_BATCH: Final = 1000  # files per semgrep call: keeps the command line far below ARG_MAX


def find_semgrep() -> Path | None:
    """The ``semgrep`` executable: beside the running interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / "semgrep"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("semgrep")
    return Path(found) if found else None


def _rule_files(rules: Iterable[str | Path]) -> tuple[Path, ...]:
    out: list[Path] = []
    for i, item in enumerate(rules):
        text = str(item)
        if not text or "://" in text or text == "auto" or text.startswith(("p/", "r/", "s/")):
            raise InvalidArgumentError(
                f"rules[{i}]: expected a local rule file or directory (registry configs do "
                f"not work offline), got {text!r}"
            )
        path = Path(text)
        if not path.exists():
            raise InvalidArgumentError(f"rules[{i}]: no such rule file or directory: {text!r}")
        out.append(path.resolve())
    if not out:
        raise InvalidArgumentError("rules: expected at least one local rule file, got none")
    return tuple(out)


def _rule_suffixes(rule_paths: Sequence[Path]) -> frozenset[str]:
    """File suffixes the rules' ``languages: [...]`` lists cover (best effort)."""
    suffixes: set[str] = set()
    for path in rule_paths:
        files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        for f in files:
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for group in _LANGUAGES_RE.findall(text):
                for lang in group.split(","):
                    suffixes |= LANGUAGE_SUFFIXES.get(lang.strip().strip("'\"").lower(), set())
    return frozenset(suffixes)


def _cwe(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _cwe(item)
            if found is not None:
                return found
        return None
    if isinstance(value, str):
        match = _CWE_RE.search(value)
        return int(match.group(1)) if match else None
    return None


def _severity(extra: Mapping[str, Any]) -> Severity:
    metadata = extra.get("metadata") or {}
    override = metadata.get("reliabench-severity") if isinstance(metadata, dict) else None
    if isinstance(override, str) and override.lower() in _LEVELS:
        return _LEVELS[override.lower()]
    return SEMGREP_SEVERITY.get(str(extra.get("severity", "")).upper(), "medium")


def _confidence(extra: Mapping[str, Any]) -> Confidence:
    metadata = extra.get("metadata") or {}
    raw = metadata.get("confidence") if isinstance(metadata, dict) else None
    return _CONFIDENCE.get(str(raw).upper(), "medium") if raw is not None else "medium"


def _python_syntax_error(path: Path) -> str | None:
    try:
        source = path.read_bytes()
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    try:
        with silence_parse_warnings():
            compile(source, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"Python syntax error at line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes
        return f"Python cannot parse the file: {exc}"
    return None


class SemgrepScanner:
    """Scan files with Semgrep and local rules (the bundled ones by default).

    Args:
        rules: Local rule files or directories; default the bundled ``scanners/rules``.
        executable: The ``semgrep`` command; default found beside the interpreter or on PATH.
        timeout_s: Wall-clock limit of one Semgrep call, in seconds.
        experimental: Try Semgrep's faster ``--experimental`` engine first.

    Raises:
        MissingExtraError: Semgrep is not installed.
        InvalidArgumentError: a bad rule path, executable or timeout.
    """

    name: str = "semgrep"

    def __init__(
        self,
        *,
        rules: Iterable[str | Path] | None = None,
        executable: str | Path | None = None,
        timeout_s: float = 600.0,
        experimental: bool = True,
    ) -> None:
        if isinstance(rules, (str, Path)):
            rules = [rules]
        self.rules = _rule_files([BUNDLED_RULES] if rules is None else rules)
        if executable is None:
            found = find_semgrep()
            if found is None:
                raise MissingExtraError("semgrep", "the semgrep scanner")
            self.executable = found
        else:
            exe = Path(executable)
            if not exe.is_file():
                located = shutil.which(str(executable))
                if located is None:
                    raise InvalidArgumentError(
                        f"executable: no such program: {str(executable)!r}"
                    )
                exe = Path(located)
            self.executable = exe
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not (
            timeout_s > 0
        ):
            raise InvalidArgumentError(f"timeout_s: expected a number > 0, got {timeout_s!r}")
        self.timeout_s = float(timeout_s)
        self.experimental = bool(experimental)
        self.suffixes = _rule_suffixes(self.rules)

    def __repr__(self) -> str:
        return (
            f"SemgrepScanner(rules={[str(r) for r in self.rules]!r}, "
            f"executable={str(self.executable)!r})"
        )

    def command(self, targets: Sequence[str], *, experimental: bool | None = None) -> list[str]:
        """The Semgrep command line for ``targets`` (absolute paths)."""
        cmd = [str(self.executable), "scan"]
        for rule in self.rules:
            cmd += ["--config", str(rule)]
        cmd += [
            "--json",
            "--metrics=off",
            "--disable-version-check",
            "--disable-nosem",
            "--no-git-ignore",
            "--max-target-bytes=0",
            "--no-rewrite-rule-ids",
            "--quiet",
        ]
        if self.experimental if experimental is None else experimental:
            cmd.append("--experimental")
        return [*cmd, "--", *targets]

    def _run(self, root: Path, targets: Sequence[str]) -> tuple[dict[str, Any] | None, str]:
        env = dict(os.environ)
        env.update({"SEMGREP_ENABLE_VERSION_CHECK": "0", "SEMGREP_SEND_METRICS": "off"})
        attempts = [True, False] if self.experimental else [False]
        problem = ""
        for experimental in attempts:
            try:
                proc = subprocess.run(
                    self.command(targets, experimental=experimental),
                    cwd=root,
                    env=env,
                    capture_output=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return None, f"semgrep timed out after {self.timeout_s:g} s"
            except OSError as exc:
                return None, f"cannot run semgrep: {exc.strerror or exc}"
            try:
                data = json.loads(proc.stdout.decode("utf-8", "replace"))
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("results"), list):
                return data, ""
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            problem = f"semgrep failed (exit {proc.returncode}): {' | '.join(tail) or 'no output'}"
        return None, problem

    def scan(
        self,
        root: Path,
        files: Sequence[str],
        changed_lines: Mapping[str, frozenset[int]] | None = None,
    ) -> ScanResult:
        """Scan ``files`` in as few Semgrep calls as possible (one per 1000 files).

        Args:
            root: The workspace directory.
            files: POSIX paths relative to ``root``; files in languages no rule covers are
                ignored.
            changed_lines: When given, keep only findings whose line range touches a
                changed line (must cover every file in ``files``).

        Returns:
            Findings sorted by (path, line, rule_id) and the files that could not be scanned.

        Raises:
            InvalidArgumentError: bad ``root``, ``files`` or ``changed_lines``.
        """
        targets, errors = prepare_targets(self.name, root, files, changed_lines)
        targets = [t for t in targets if not self.suffixes or Path(t.rel).suffix in self.suffixes]
        findings: list[Finding] = []
        scanned: set[str] = set()
        failed: set[str] = set()
        for start in range(0, len(targets), _BATCH):
            batch = targets[start : start + _BATCH]
            self._scan_batch(Path(root), batch, changed_lines, findings, errors, scanned, failed)
        for target in targets:
            if target.rel in failed:
                continue
            if Path(target.rel).suffix in LANGUAGE_SUFFIXES["python"]:
                problem = _python_syntax_error(target.path)
                if problem is not None:
                    errors.append(ScanError(self.name, target.rel, problem))
                    failed.add(target.rel)
                    continue
            if target.rel not in scanned:
                errors.append(ScanError(self.name, target.rel, "semgrep did not analyse the file"))
                failed.add(target.rel)
        findings.sort(key=lambda f: (f.path, f.line or 0, f.rule_id, f.message))
        errors.sort(key=lambda e: (e.path, e.message))
        return ScanResult(
            findings=tuple(dict.fromkeys(findings)),
            errors=tuple(errors),
            files_scanned=len(scanned - failed),
        )

    def _scan_batch(
        self,
        root: Path,
        batch: Sequence[ScanTarget],
        changed_lines: Mapping[str, frozenset[int]] | None,
        findings: list[Finding],
        errors: list[ScanError],
        scanned: set[str],
        failed: set[str],
    ) -> None:
        by_path = {str(t.path): t.rel for t in batch}
        data, problem = self._run(root, list(by_path))
        if data is None:
            for t in batch:
                errors.append(ScanError(self.name, t.rel, problem))
                failed.add(t.rel)
            return
        paths = data.get("paths") or {}
        for p in paths.get("scanned") or ():
            if str(p) in by_path:
                scanned.add(by_path[str(p)])
        for err in data.get("errors") or ():
            if not isinstance(err, dict):
                continue
            message = str(err.get("message", "semgrep error")).strip().splitlines()
            text = f"{err.get('level', 'error')}: {message[0] if message else 'semgrep error'}"
            rel = by_path.get(str(err.get("path", "")))
            for abs_path, name in by_path.items():
                text = text.replace(abs_path, name)
            if rel is not None:
                errors.append(ScanError(self.name, rel, text))
                failed.add(rel)
            elif err.get("level") == "error":
                # An error that names no file (a broken rule, a crash) voids the whole batch.
                for t in batch:
                    errors.append(ScanError(self.name, t.rel, text))
                    failed.add(t.rel)
        for result in data["results"]:
            rel = by_path.get(str(result.get("path", "")))
            if rel is None:
                continue
            start = int(result.get("start", {}).get("line", 0)) or None
            end = int(result.get("end", {}).get("line", 0)) or start
            span = list(range(start, (end or start) + 1)) if start else []
            if not keep_changed(rel, span, changed_lines):
                continue
            extra = result.get("extra") or {}
            metadata = extra.get("metadata") or {}
            findings.append(
                Finding(
                    tool=self.name,
                    rule_id=str(result.get("check_id", "")),
                    severity=_severity(extra),
                    confidence=_confidence(extra),
                    cwe=_cwe(metadata.get("cwe")) if isinstance(metadata, dict) else None,
                    path=rel,
                    line=start,
                    message=" ".join(str(extra.get("message", "")).split()),
                )
            )
