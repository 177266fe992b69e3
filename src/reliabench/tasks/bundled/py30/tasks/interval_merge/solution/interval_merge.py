"""Merging and measuring closed numeric intervals."""

from __future__ import annotations

from typing import Iterable, Sequence

Interval = tuple[float, float]


def _validated(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    result: list[Interval] = []
    for item in intervals:
        start, end = item
        if start > end:
            raise ValueError(f"interval start {start!r} is greater than end {end!r}")
        result.append((start, end))
    return result


def merge(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Merge overlapping or touching intervals; return them sorted by start."""
    ordered = sorted(_validated(intervals))
    merged: list[Interval] = []
    for start, end in ordered:
        if merged and start <= merged[-1][1]:
            last_start, last_end = merged[-1]
            if end > last_end:
                merged[-1] = (last_start, end)
        else:
            merged.append((start, end))
    return merged


def insert(intervals: Iterable[Sequence[float]], new: Sequence[float]) -> list[Interval]:
    """Merge ``new`` into ``intervals`` and return the merged, sorted result."""
    return merge([*intervals, new])


def total_length(intervals: Iterable[Sequence[float]]) -> float:
    """Return the total length covered by the union of ``intervals``."""
    return sum(end - start for start, end in merge(intervals))


def gaps(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Return the uncovered gaps between the merged intervals."""
    merged = merge(intervals)
    return [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1)]
