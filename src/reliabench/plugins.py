"""Plugins published by other packages through entry points (scanners, sandbox backends, agent kinds).

One mechanism for every registry that accepts third-party entries: an entry-point group maps
names to ``module:attribute`` targets; the first entry of a name wins, and loading a broken
plugin is one :class:`~reliabench.errors.UsageError` naming the plugin, not a traceback.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from reliabench.errors import UsageError

__all__ = ["entry_points", "load_entry_point", "load_target"]


def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` by name (the first one of each name wins)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def load_target(target: str) -> Any:
    """Import ``module:attribute`` (a built-in plugin's target) and return the attribute."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def load_entry_point(ep: importlib.metadata.EntryPoint, what: str) -> Any:
    """Load a third-party plugin.

    Args:
        ep: The entry point.
        what: What it is, for the message (``scanner plugin``, ``sandbox backend plugin``).

    Raises:
        UsageError: the plugin failed to import.
    """
    try:
        return ep.load()
    except Exception as exc:
        raise UsageError(
            f"{what} {ep.name} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
        ) from exc
