"""Read and write values in nested JSON-like data using dotted paths."""

from __future__ import annotations

from typing import Any

_MISSING: Any = object()


def parse_path(path: str) -> list[str | int]:
    """Split ``path`` into its steps: keys (str) and list indices (int)."""
    raise NotImplementedError


def get_path(data: Any, path: str, default: Any = _MISSING) -> Any:
    """Return the value at ``path`` in ``data`` (or ``default`` if given and not found)."""
    raise NotImplementedError


def set_path(data: Any, path: str, value: Any) -> None:
    """Set ``value`` at ``path`` inside ``data``, creating missing containers."""
    raise NotImplementedError
