"""Dijkstra shortest paths on weighted directed graphs."""

from __future__ import annotations

import heapq
from typing import Mapping

Graph = Mapping[str, Mapping[str, float]]


def _nodes(graph: Graph) -> set[str]:
    nodes: set[str] = set(graph)
    for node, edges in graph.items():
        for target, weight in edges.items():
            if weight < 0:
                raise ValueError(f"negative weight {weight} on edge {node!r} -> {target!r}")
            nodes.add(target)
    return nodes


def _dijkstra(
    graph: Graph, start: str, goal: str | None = None
) -> tuple[dict[str, float], dict[str, str]]:
    dist: dict[str, float] = {start: 0}
    previous: dict[str, str] = {}
    done: set[str] = set()
    queue: list[tuple[float, str]] = [(0, start)]
    while queue:
        cost, node = heapq.heappop(queue)
        if node in done:
            continue
        done.add(node)
        if node == goal:
            break
        for target, weight in graph.get(node, {}).items():
            candidate = cost + weight
            if target not in dist or candidate < dist[target]:
                dist[target] = candidate
                previous[target] = node
                heapq.heappush(queue, (candidate, target))
    return dist, previous


def shortest_path(graph: Graph, start: str, goal: str) -> tuple[float, list[str]] | None:
    """Return ``(cost, path)`` of a cheapest path from ``start`` to ``goal``, or None."""
    nodes = _nodes(graph)
    for node in (start, goal):
        if node not in nodes:
            raise KeyError(node)
    dist, previous = _dijkstra(graph, start, goal)
    if goal not in dist:
        return None
    path = [goal]
    while path[-1] != start:
        path.append(previous[path[-1]])
    path.reverse()
    return dist[goal], path


def distances(graph: Graph, start: str) -> dict[str, float]:
    """Return the minimum distance from ``start`` to every reachable node."""
    if start not in _nodes(graph):
        raise KeyError(start)
    dist, _ = _dijkstra(graph, start)
    return dist
