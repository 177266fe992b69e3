"""Parsing and aggregating Apache common/combined access log lines."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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


_LINE = re.compile(
    r'(?P<host>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    r'"(?P<request>[^"]*)" (?P<status>\d{3}) (?P<size>\d+|-)'
    r'(?: "(?P<referer>[^"]*)" "(?P<agent>[^"]*)")?'
)
_TIME = re.compile(
    r"(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})"
)
_METHOD = re.compile(r"[A-Z]+")
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
        start=1,
    )
}


def _parse_time(text: str) -> datetime | None:
    match = _TIME.fullmatch(text)
    if match is None:
        return None
    day, month_name, year, hour, minute, second, sign, off_h, off_m = match.groups()
    month = _MONTHS.get(month_name)
    if month is None:
        return None
    offset = timedelta(hours=int(off_h), minutes=int(off_m))
    if sign == "-":
        offset = -offset
    try:
        return datetime(
            int(year), month, int(day), int(hour), int(minute), int(second),
            tzinfo=timezone(offset),
        )
    except ValueError:
        return None


def _dash_to_none(value: str | None) -> str | None:
    return None if value is None or value == "-" else value


def parse_line(line: str) -> LogEntry | None:
    """Parse one log line; return None if it is malformed."""
    match = _LINE.fullmatch(line.rstrip())
    if match is None:
        return None
    timestamp = _parse_time(match["time"])
    if timestamp is None:
        return None
    parts = match["request"].split(" ")
    if len(parts) != 3:
        return None
    method, path, protocol = parts
    if not _METHOD.fullmatch(method) or not path.startswith("/") or not protocol.startswith("HTTP/"):
        return None
    status = int(match["status"])
    if status < 100 or status > 599:
        return None
    size = 0 if match["size"] == "-" else int(match["size"])
    return LogEntry(
        host=match["host"],
        user=_dash_to_none(match["user"]),
        time=timestamp,
        method=method,
        path=path,
        protocol=protocol,
        status=status,
        size=size,
        referer=_dash_to_none(match["referer"]),
        user_agent=_dash_to_none(match["agent"]),
    )


def summarize(lines: Iterable[str], top_n: int = 3) -> LogStats:
    """Aggregate statistics over log lines (see prompt.md)."""
    if top_n < 0:
        raise ValueError(f"top_n must be >= 0, got {top_n}")
    stats = LogStats()
    statuses: Counter[int] = Counter()
    paths: Counter[str] = Counter()
    hosts: set[str] = set()
    errors = 0
    for line in lines:
        if not line.strip():
            continue
        entry = parse_line(line)
        if entry is None:
            stats.malformed += 1
            continue
        stats.total_requests += 1
        stats.total_bytes += entry.size
        statuses[entry.status] += 1
        paths[entry.path.split("?", 1)[0]] += 1
        hosts.add(entry.host)
        if entry.status >= 400:
            errors += 1
    stats.status_counts = dict(statuses)
    stats.unique_hosts = len(hosts)
    stats.error_rate = errors / stats.total_requests if stats.total_requests else 0.0
    ranked = sorted(paths.items(), key=lambda item: (-item[1], item[0]))
    stats.top_paths = ranked[:top_n]
    return stats
