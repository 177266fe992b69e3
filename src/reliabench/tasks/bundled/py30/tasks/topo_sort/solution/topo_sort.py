"""Deterministic topological ordering of dependency graphs."""

from __future__ import annotations

import heapq
from typing import Iterable, Mapping


class CycleError(ValueError):
    """Raised when the dependency graph contains a cycle."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__("cycle detected: " + " -> ".join(cycle))


def _normalize(deps: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for node, requirements in deps.items():
        graph.setdefault(node, set()).update(requirements)
        for requirement in graph[node]:
            graph.setdefault(requirement, set())
    return graph


def _dependents(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    reverse: dict[str, list[str]] = {node: [] for node in graph}
    for node, requirements in graph.items():
        for requirement in requirements:
            reverse[requirement].append(node)
    return reverse


def _find_cycle(graph: dict[str, set[str]], remaining: set[str]) -> list[str]:
    # Every remaining node still has a remaining dependency, so walking along
    # dependencies must eventually revisit a node.
    node = min(remaining)
    path: list[str] = []
    seen: dict[str, int] = {}
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min(graph[node] & remaining)
    cycle = path[seen[node]:]
    start = cycle.index(min(cycle))
    rotated = cycle[start:] + cycle[:start]
    return rotated + [rotated[0]]


def topo_sort(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Return all nodes with dependencies first; ties broken by smallest node."""
    graph = _normalize(deps)
    reverse = _dependents(graph)
    pending = {node: len(requirements) for node, requirements in graph.items()}
    ready = [node for node, count in pending.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for dependent in reverse[node]:
            pending[dependent] -= 1
            if pending[dependent] == 0:
                heapq.heappush(ready, dependent)
    if len(order) < len(graph):
        raise CycleError(_find_cycle(graph, set(graph) - set(order)))
    return order


def levels(deps: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Group nodes into dependency levels (each level sorted)."""
    graph = _normalize(deps)
    reverse = _dependents(graph)
    pending = {node: len(requirements) for node, requirements in graph.items()}
    current = sorted(node for node, count in pending.items() if count == 0)
    result: list[list[str]] = []
    placed = 0
    while current:
        result.append(current)
        placed += len(current)
        following: list[str] = []
        for node in current:
            for dependent in reverse[node]:
                pending[dependent] -= 1
                if pending[dependent] == 0:
                    following.append(dependent)
        current = sorted(following)
    if placed < len(graph):
        placed_nodes = {node for level in result for node in level}
        raise CycleError(_find_cycle(graph, set(graph) - placed_nodes))
    return result
