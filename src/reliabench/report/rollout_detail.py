r"""One rollout seen from the inside: what the explorer shows when a rollout is clicked.

From a record and its artifacts (``RUN/artifacts/<task>/<agent>/<rollout>/``: ``agent.log``,
``diff.patch``, ``tests.log``, optionally ``transcript.json``) this module builds a
``RolloutDetail``: status, isolation, duration and cost; every hidden test with its outcome
and, for a failed one, its failure message; the diff against the starter workspace, parsed
into files and lines with the scanner findings placed on the lines they flag; the security
tests; the tamper and forgery flags; the agent's log or transcript. Everything is cut to the
bounds of ``DetailLimits`` and every cut is said in ``RolloutDetail.cuts``.

Failure messages: the records keep outcomes, not messages, so messages are read back from the
stored pytest output (``tests.log``): each ``____ test_name ____`` section of pytest's
``FAILURES``/``ERRORS`` report belongs to the test of that name, and a ``FAILED id - message``
summary line is used when no section is found. ``TestOutcome.message_source`` says which.

Examples:
    >>> log = "_____ test_a _____\nE   assert 1 == 2\n=== short test summary info ===\n"
    >>> failure_messages(log, ["t.py::test_a", "t.py::test_b"])
    {'t.py::test_a': 'E   assert 1 == 2'}
    >>> [(ln.kind, ln.new) for ln in parse_diff("--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b\n")[0].lines]
    [('@', None), (' ', 1), ('+', 2)]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import FORGED_OUTCOMES, REASON, SEED, TAMPER_FILES
from reliabench.metrics.costs import phase_costs
from reliabench.records import Finding, Isolation, Rollout, RolloutStatus, TestOutcomeStatus
from reliabench.run.artifacts import StoredArtifacts

__all__ = [
    "DetailLimits",
    "DiffFile",
    "DiffLine",
    "RolloutDetail",
    "TestRow",
    "build_detail",
    "failure_messages",
    "parse_diff",
    "rollout_id",
]

_SECTION: Final = re.compile(r"^_{3,} (.+?) _{3,}$")
_BANNER: Final = re.compile(r"^={3,}.*={3,}$")
_SUMMARY: Final = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$")
_HUNK: Final = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class DetailLimits:
    """Bounds on what one rollout contributes to a page.

    Attributes:
        log_chars: Characters of the agent log or transcript kept (head and tail).
        diff_lines: Diff lines kept (over all files).
        message_chars: Characters of each failure message kept.
        messages: Failure messages kept per rollout.
    """

    log_chars: int = 8_000
    diff_lines: int = 600
    message_chars: int = 2_000
    messages: int = 60

    def __post_init__(self) -> None:
        for name in ("log_chars", "diff_lines", "message_chars", "messages"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class TestRow:
    """One hidden test of a rollout.

    Attributes:
        name: The test id.
        outcome: ``passed``, ``failed``, ``error`` or ``skipped``.
        security: A dynamic security test.
        message: The failure message (empty for a passed test or when none was found).
        message_source: ``section`` (pytest's failure report), ``summary`` (a one-line
            summary), or ``none``.
    """

    __test__ = False

    name: str
    outcome: TestOutcomeStatus
    security: bool = False
    message: str = ""
    message_source: str = "none"


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff.

    Attributes:
        kind: ``+`` added, ``-`` removed, `` `` context, ``@`` hunk header, ``!`` a note.
        text: The line without its marker.
        new: Its line number in the agent's version of the file (None for removed lines).
        findings: Indexes into ``RolloutDetail.findings`` of the findings on this line.
    """

    kind: str
    text: str
    new: int | None = None
    findings: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DiffFile:
    """The diff of one file."""

    path: str
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class RolloutDetail:
    """Everything the explorer shows about one rollout (JSON via ``to_json``)."""

    id: str
    task_id: str
    agent: str
    rollout: int
    status: RolloutStatus
    passes: bool
    isolation: Isolation | None
    seconds: float | None
    tokens: int | None
    usd: float | None
    phases: Mapping[str, float]
    simulated: bool
    tests: tuple[TestRow, ...]
    findings: tuple[Finding, ...]
    unplaced_findings: tuple[int, ...]
    scan_errors: tuple[str, ...]
    tamper_suspected: bool
    forged_outcomes: bool
    tamper_files: tuple[str, ...]
    reason: str
    seed: int | None
    diff: tuple[DiffFile, ...]
    log: str
    log_kind: str
    messages_from: str
    cuts: tuple[str, ...] = ()
    artifacts: bool = False

    def to_json(self) -> dict[str, Any]:
        """A compact JSON-ready dict (the explorer's data for this rollout)."""
        return {
            "id": self.id, "task": self.task_id, "agent": self.agent, "rollout": self.rollout,
            "status": self.status, "passes": self.passes, "isolation": self.isolation,
            "seconds": self.seconds, "tokens": self.tokens, "usd": self.usd,
            "phases": dict(self.phases), "simulated": self.simulated,
            "tests": [[t.name, t.outcome, int(t.security), t.message, t.message_source]
                      for t in self.tests],
            "findings": [{"tool": f.tool, "rule": f.rule_id, "severity": f.severity,
                          "confidence": f.confidence, "cwe": f.cwe, "path": f.path, "line": f.line,
                          "message": f.message} for f in self.findings],
            "unplaced": list(self.unplaced_findings), "scan_errors": list(self.scan_errors),
            "tamper": self.tamper_suspected, "forged": self.forged_outcomes,
            "tamper_files": list(self.tamper_files), "reason": self.reason,
            "seed": None if self.seed is None else str(self.seed),  # 63-bit: exact only as text in JS
            "diff": [{"path": d.path, "lines": [[ln.kind, ln.text, ln.new, list(ln.findings)]
                                                for ln in d.lines]} for d in self.diff],
            "log": self.log, "log_kind": self.log_kind, "messages_from": self.messages_from,
            "cuts": list(self.cuts), "artifacts": self.artifacts,
        }


def _section_keys(test_id: str) -> list[str]:
    """Names pytest may print in a failure section header for ``test_id``."""
    parts = test_id.split("::")
    tail = parts[1:] if len(parts) > 1 else parts
    keys = [".".join(tail), tail[-1]]
    return list(dict.fromkeys(keys))


def failure_messages(tests_log: str, test_ids: Iterable[str]) -> dict[str, str]:
    """Failure messages per test id, read from pytest's output.

    A section ``____ name ____`` (or ``____ ERROR at setup of name ____``) runs until the next
    section or ``====`` banner; a ``FAILED id - message`` summary line is the fallback.
    Tests without either are left out of the result.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    summaries: dict[str, str] = {}
    for line in tests_log.splitlines():
        m = _SECTION.match(line)
        if m:
            name = re.sub(r"^ERROR at (setup|teardown|call) of ", "", m.group(1))
            current = sections.setdefault(name, [])
            continue
        if _BANNER.match(line):
            current = None
            continue
        s = _SUMMARY.match(line)
        if s:
            summaries[s.group(2)] = s.group(3) or s.group(1)
            current = None
            continue
        if current is not None:
            current.append(line)
    out: dict[str, str] = {}
    for tid in test_ids:
        for key in _section_keys(tid):
            if key in sections and any(x.strip() for x in sections[key]):
                out[tid] = "\n".join(sections[key]).strip("\n")
                break
        else:
            if tid in summaries:
                out[tid] = summaries[tid]
    return out


def parse_diff(text: str) -> list[DiffFile]:
    """Split a unified diff into files and lines, numbering the lines of the new version."""
    files: list[DiffFile] = []
    path: str | None = None
    lines: list[DiffLine] = []
    new_no = 0
    old_path = ""

    def flush() -> None:
        if path is not None or lines:
            files.append(DiffFile(path or old_path or "?", tuple(lines)))

    for raw in text.splitlines():
        if raw.startswith("--- "):
            flush()
            path, lines, old_path = None, [], raw[4:].split("\t")[0].removeprefix("a/")
            continue
        if raw.startswith("+++ ") and path is None:
            target = raw[4:].split("\t")[0]
            path = old_path if target == "/dev/null" else target.removeprefix("b/")
            continue
        m = _HUNK.match(raw)
        if m:
            new_no = int(m.group(1))
            lines.append(DiffLine("@", raw))
            continue
        if raw.startswith("+"):
            lines.append(DiffLine("+", raw[1:], new_no))
            new_no += 1
        elif raw.startswith("-"):
            lines.append(DiffLine("-", raw[1:]))
        elif raw.startswith(" "):
            lines.append(DiffLine(" ", raw[1:], new_no))
            new_no += 1
        elif raw.startswith("\\"):
            lines.append(DiffLine("!", raw))
        else:  # a note line of workspace_diff (binary file, symlink, ...)
            flush()
            path, lines, old_path = None, [], ""
            files.append(DiffFile(raw.split(" ")[-1] if raw else "?", (DiffLine("!", raw),)))
    flush()
    return [f for f in files if f.lines]


def _cut_text(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    return (text[:head] + f"\n[... {len(text) - limit} characters cut ...]\n" + text[-tail:]), True


def _transcript_text(raw: str | None) -> str | None:
    """A readable rendering of ``transcript.json`` (a list of chat messages), if present."""
    if raw is None:
        return None
    try:
        messages = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    if not isinstance(messages, list):
        return raw
    parts = []
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            parts.append(f"[{m.get('role', '?')}] {text}")
    return "\n\n".join(parts)


def rollout_id(r: Rollout) -> str:
    """A stable id for a rollout in the page: task, agent and rollout joined by U+001F."""
    return f"{r.task_id}\x1f{r.agent}\x1f{r.rollout}"


def _place_findings(files: Sequence[DiffFile],
                    findings: Sequence[Finding]) -> tuple[list[DiffFile], tuple[int, ...]]:
    placed: set[int] = set()
    out = []
    for f in files:
        new_lines = []
        for ln in f.lines:
            hits = tuple(i for i, fd in enumerate(findings)
                         if ln.new is not None and ln.kind in "+ " and fd.line == ln.new
                         and fd.path.removeprefix("./") == f.path)
            placed.update(hits)
            new_lines.append(DiffLine(ln.kind, ln.text, ln.new, hits) if hits else ln)
        out.append(DiffFile(f.path, tuple(new_lines)))
    return out, tuple(i for i in range(len(findings)) if i not in placed)


def build_detail(r: Rollout, stored: StoredArtifacts | None,
                 limits: DetailLimits | None = None) -> RolloutDetail:
    """The explorer's view of one rollout (artifacts are optional: imported records have none).

    Args:
        r: The record.
        stored: The rollout's artifacts (``RunDirectory.artifacts(...)``), or None.
        limits: Bounds on logs, diffs and messages.
    """
    lim = limits or DetailLimits()
    cuts: list[str] = []
    has_art = stored is not None and stored.present
    tests_log = stored.test_log() if has_art and stored else None
    failed = [t.name for t in r.tests or () if t.failing]
    msgs = failure_messages(tests_log, failed) if tests_log else {}
    rows = []
    kept = 0
    for t in r.tests or ():
        message, source = "", "none"
        if t.name in msgs:
            if kept < lim.messages:
                message, was_cut = _cut_text(msgs[t.name], lim.message_chars)
                source = "section" if "\n" in msgs[t.name] or len(msgs[t.name]) > 200 else "summary"
                if was_cut:
                    cuts.append(f"failure message of {t.name} cut to {lim.message_chars} characters")
                kept += 1
            else:
                source = "cut"
        rows.append(TestRow(t.name, t.outcome, t.security, message, source))
    dropped = sum(1 for row in rows if row.message_source == "cut")
    if dropped:
        cuts.append(f"{dropped} more failure message(s) not shown (limit {lim.messages} per rollout)")
    if tests_log is None:
        messages_from = "no stored test output (imported records carry outcomes only)"
    elif msgs:
        messages_from = ("extracted from the stored pytest output (tests.log); no structured message "
                         "is recorded")
    elif failed:
        messages_from = "the stored test output (tests.log) names no failure section for these tests"
    else:
        messages_from = ""
    diff_text = stored.diff() if has_art and stored else None
    files = parse_diff(diff_text or "")
    total = sum(len(f.lines) for f in files)
    if total > lim.diff_lines:
        budget, trimmed = lim.diff_lines, []
        for f in files:
            take = f.lines[:max(0, budget)]
            budget -= len(take)
            if take:
                trimmed.append(DiffFile(f.path, take))
        files = trimmed
        cuts.append(f"diff cut to {lim.diff_lines} of {total} lines")
    files, unplaced = _place_findings(files, r.findings)
    log, log_kind = "", "none"
    if has_art and stored is not None:
        transcript = _transcript_text(stored.transcript())
        if transcript is not None:
            log, log_kind = transcript, "transcript"
        else:
            log = stored.agent_log() or ""
            log_kind = "agent log" if log else "none"
    log, was_cut = _cut_text(log, lim.log_chars)
    if was_cut:
        cuts.append(f"{log_kind} cut to {lim.log_chars} characters (head and tail kept)")
    cost = r.cost
    seed = r.meta.get(SEED)
    return RolloutDetail(
        id=rollout_id(r), task_id=r.task_id, agent=r.agent, rollout=r.rollout, status=r.status,
        passes=r.passes, isolation=r.isolation, seconds=cost.seconds if cost else None,
        tokens=cost.tokens if cost else None, usd=cost.usd if cost else None, phases=phase_costs(r),
        simulated=r.simulated, tests=tuple(rows), findings=r.findings, unplaced_findings=unplaced,
        scan_errors=tuple(f"{e.tool}: {e.path}: {e.message}" for e in r.scan_errors),
        tamper_suspected=r.tamper_suspected, forged_outcomes=bool(r.meta.get(FORGED_OUTCOMES)),
        tamper_files=tuple(str(x) for x in r.meta.get(TAMPER_FILES) or ()),
        reason=str(r.meta.get(REASON) or r.meta.get("error") or ""),
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        diff=tuple(files), log=log, log_kind=log_kind, messages_from=messages_from,
        cuts=tuple(cuts), artifacts=has_art,
    )
