"""Parsing and aggregating Apache common/combined access log lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable


@dataclass(frozen=True)
class LogEntry:
    host: str
    user: str | None
    time: datetime
    method: str
    path: str
    protocol: str
    status: int
    size: int
    referer: str | None = None
    user_agent: str | None = None


@dataclass
class LogStats:
    total_requests: int = 0
    malformed: int = 0
    total_bytes: int = 0
    status_counts: dict[int, int] = field(default_factory=dict)
    unique_hosts: int = 0
    error_rate: float = 0.0
    top_paths: list[tuple[str, int]] = field(default_factory=list)


def parse_line(line: str) -> LogEntry | None:
    """Parse one log line; return None if it is malformed."""
    raise NotImplementedError


def summarize(lines: Iterable[str], top_n: int = 3) -> LogStats:
    """Aggregate statistics over log lines (see prompt.md)."""
    raise NotImplementedError
