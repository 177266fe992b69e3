"""Merging and measuring closed numeric intervals."""

from __future__ import annotations

from typing import Iterable, Sequence

Interval = tuple[float, float]


def merge(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Merge overlapping or touching intervals; return them sorted by start."""
    raise NotImplementedError


def insert(intervals: Iterable[Sequence[float]], new: Sequence[float]) -> list[Interval]:
    """Merge ``new`` into ``intervals`` and return the merged, sorted result."""
    raise NotImplementedError


def total_length(intervals: Iterable[Sequence[float]]) -> float:
    """Return the total length covered by the union of ``intervals``."""
    raise NotImplementedError


def gaps(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Return the uncovered gaps between the merged intervals."""
    raise NotImplementedError
