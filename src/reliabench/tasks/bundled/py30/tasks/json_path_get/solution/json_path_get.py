"""Read and write values in nested JSON-like data using dotted paths."""

from __future__ import annotations

import re
from typing import Any

_MISSING: Any = object()

_SEGMENT = re.compile(r"([^.\[\]]*)((?:\[-?[0-9]+\])*)")
_INDEX = re.compile(r"\[(-?[0-9]+)\]")


def parse_path(path: str) -> list[str | int]:
    """Split ``path`` into its steps: keys (str) and list indices (int)."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, got {type(path).__name__}")
    steps: list[str | int] = []
    for position, segment in enumerate(path.split(".")):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise ValueError(f"malformed path {path!r}: bad segment {segment!r}")
        key, indices = match.groups()
        if key:
            steps.append(key)
        elif position > 0 or not indices:
            raise ValueError(f"malformed path {path!r}: empty key")
        steps.extend(int(number) for number in _INDEX.findall(indices))
    return steps


def _step(current: Any, step: str | int) -> Any:
    if isinstance(step, str):
        if not isinstance(current, dict):
            raise TypeError(f"cannot look up key {step!r} in {type(current).__name__}")
        return current[step]
    if not isinstance(current, list):
        raise TypeError(f"cannot index {type(current).__name__} with [{step}]")
    return current[step]


def get_path(data: Any, path: str, default: Any = _MISSING) -> Any:
    """Return the value at ``path`` in ``data`` (or ``default`` if given and not found)."""
    steps = parse_path(path)
    current = data
    try:
        for step in steps:
            current = _step(current, step)
    except (KeyError, IndexError, TypeError):
        if default is _MISSING:
            raise
        return default
    return current


def _check_container(container: Any, step: str | int) -> None:
    if isinstance(step, str):
        if not isinstance(container, dict):
            raise TypeError(f"cannot set key {step!r} on {type(container).__name__}")
    else:
        if not isinstance(container, list):
            raise TypeError(f"cannot index {type(container).__name__} with [{step}]")
        if step > len(container) or step < -len(container):
            raise IndexError(f"index {step} out of range for list of length {len(container)}")


def set_path(data: Any, path: str, value: Any) -> None:
    """Set ``value`` at ``path`` inside ``data``, creating missing containers."""
    steps = parse_path(path)
    current = data
    for step, next_step in zip(steps, steps[1:]):
        _check_container(current, step)
        fresh: Any = {} if isinstance(next_step, str) else []
        if isinstance(step, str):
            if step not in current:
                current[step] = fresh
        elif step == len(current):
            current.append(fresh)
        current = current[step]

    last = steps[-1]
    _check_container(current, last)
    if isinstance(last, int) and last == len(current):
        current.append(value)
    else:
        current[last] = value
