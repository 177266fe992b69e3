"""Parsing and formatting of human-readable durations such as "1h30m"."""

from __future__ import annotations


def parse_duration(text: str) -> float:
    """Return the number of seconds described by ``text`` (e.g. "2d 4h")."""
    raise NotImplementedError


def format_duration(seconds: float) -> str:
    """Format a non-negative number of seconds as e.g. "1d2h3m4s"."""
    raise NotImplementedError
