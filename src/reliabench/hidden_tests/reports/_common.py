"""Helpers of the report readers: a missing report, text decoding, names, messages."""

from __future__ import annotations

import json
import posixpath
from typing import Any, Final

from reliabench.hidden_tests.reports import MAX_CASES, ParsedReport, ReportedCase, merge_cases

__all__ = ["MESSAGE_CHARS", "cut", "decode_text", "finish", "load_json", "missing", "relative_to"]

MESSAGE_CHARS: Final = 500
"""A failure message is kept to this many characters."""


def missing(coarse: bool = False) -> ParsedReport:
    """The result for a report that was never written: no case, one problem."""
    return ParsedReport((), ("no report was written (every expected test counts as not run)",),
                        coarse=coarse, found=False)


def decode_text(data: bytes, problems: list[str]) -> str:
    """``data`` as UTF-8; invalid bytes become U+FFFD and one problem line says where."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"not UTF-8 at byte {exc.start} (invalid bytes replaced)")
        return data.decode("utf-8", errors="replace")


def cut(message: str | None) -> str | None:
    """A message kept to :data:`MESSAGE_CHARS` characters (None stays None)."""
    if message is None:
        return None
    message = message.strip()
    if not message:
        return None
    return message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS - 1] + "\u2026"


def relative_to(path: str, workdir: str) -> str:
    """``path`` relative to ``workdir`` when it lies below it (reports name files absolutely).

    Example:
        >>> relative_to("/w/x/a.spec.js", "/w/x"), relative_to("/elsewhere/a.js", "/w/x")
        ('a.spec.js', '/elsewhere/a.js')
    """
    if workdir and path.startswith(workdir.rstrip("/") + "/"):
        return posixpath.relpath(path, workdir)
    return path


def finish(cases: list[ReportedCase], problems: list[str], *, inconsistent: bool = False) -> ParsedReport:
    """Merge duplicates, cap the count, and wrap the result.

    Args:
        cases: The cases read, in order.
        problems: The problems said so far.
        inconsistent: The reader found counts that disagree with the lines (a duplicate name
            makes the report inconsistent too).
    """
    if len(cases) > MAX_CASES:
        problems.append(f"more than {MAX_CASES} test cases: the rest were not read")
        del cases[MAX_CASES:]
    said = len(problems)
    merged = merge_cases(cases, problems)
    return ParsedReport(merged, tuple(problems), inconsistent=inconsistent or len(problems) > said)


def load_json(data: bytes, problems: list[str]) -> Any:
    """The JSON document ``data`` (None when it is not one; the problem is said)."""
    text = decode_text(data, problems)
    try:
        return json.loads(text)
    except RecursionError:
        problems.append("JSON nested too deep")
    except ValueError as exc:
        problems.append(f"not JSON: {str(exc)[:200]}")
    return None
