"""Grouped statistics over CSV text."""

from __future__ import annotations


def group_stats(text: str, key: str, value: str) -> dict[str, dict[str, float | int]]:
    """Group the rows of CSV ``text`` by column ``key`` and aggregate column ``value``.

    Returns a mapping ``group -> {"count", "sum", "mean", "min", "max"}``.
    See prompt.md for the exact rules.
    """
    raise NotImplementedError
