"""Dijkstra shortest paths on weighted directed graphs."""

from __future__ import annotations

from typing import Mapping

Graph = Mapping[str, Mapping[str, float]]


def shortest_path(graph: Graph, start: str, goal: str) -> tuple[float, list[str]] | None:
    """Return ``(cost, path)`` of a cheapest path from ``start`` to ``goal``, or None."""
    raise NotImplementedError


def distances(graph: Graph, start: str) -> dict[str, float]:
    """Return the minimum distance from ``start`` to every reachable node."""
    raise NotImplementedError
