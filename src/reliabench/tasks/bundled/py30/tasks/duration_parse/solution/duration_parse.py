"""Parsing and formatting of human-readable durations such as "1h30m"."""

from __future__ import annotations

import math
import re

_UNITS: dict[str, int] = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_ORDER = "wdhms"
_COMPONENT = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)([a-z])")
_FORMAT_UNITS: tuple[tuple[str, int], ...] = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def parse_duration(text: str) -> float:
    """Return the number of seconds described by ``text`` (e.g. "2d 4h")."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    body = text.strip()
    if not body:
        raise ValueError("empty duration")
    total = 0.0
    last_rank = -1
    position = 0
    while position < len(body):
        match = _COMPONENT.match(body, position)
        if match is None:
            raise ValueError(f"invalid duration {text!r} at position {position}")
        number, unit = match.groups()
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r} in {text!r}")
        rank = _ORDER.index(unit)
        if rank <= last_rank:
            raise ValueError(f"unit {unit!r} repeated or out of order in {text!r}")
        last_rank = rank
        total += float(number) * _UNITS[unit]
        position = match.end()
    return total


def format_duration(seconds: float) -> str:
    """Format a non-negative number of seconds as e.g. "1d2h3m4s"."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"expected int or float, got {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration must be a finite non-negative number, got {seconds!r}")
    remaining = math.floor(seconds + 0.5)
    if remaining == 0:
        return "0s"
    parts: list[str] = []
    for unit, size in _FORMAT_UNITS:
        amount, remaining = divmod(remaining, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts)
