"""Deterministic topological ordering of dependency graphs."""

from __future__ import annotations

from typing import Iterable, Mapping


class CycleError(ValueError):
    """Raised when the dependency graph contains a cycle."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__("cycle detected: " + " -> ".join(cycle))


def topo_sort(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Return all nodes with dependencies first; ties broken by smallest node."""
    raise NotImplementedError


def levels(deps: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Group nodes into dependency levels (each level sorted)."""
    raise NotImplementedError
