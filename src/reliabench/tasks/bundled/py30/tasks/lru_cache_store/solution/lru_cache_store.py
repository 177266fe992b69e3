"""A fixed-capacity least-recently-used key/value store."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Hashable


def _check_capacity(capacity: object) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity must be an int, got {type(capacity).__name__}")
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    return capacity


class LRUCache:
    """Key/value store that evicts the least recently used entry when full."""

    def __init__(self, capacity: int) -> None:
        self._capacity = _check_capacity(capacity)
        # Ordered from least recently used (first) to most recently used (last).
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    @property
    def capacity(self) -> int:
        return self._capacity

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key not in self._data:
            return default
        self._data.move_to_end(key)
        return self._data[key]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        return self._data.get(key, default)

    def put(self, key: Hashable, value: Any) -> tuple[Hashable, Any] | None:
        if key in self._data:
            self._data[key] = value
            self._data.move_to_end(key)
            return None
        self._data[key] = value
        if len(self._data) > self._capacity:
            return self._data.popitem(last=False)
        return None

    def delete(self, key: Hashable) -> Any:
        if key not in self._data:
            raise KeyError(key)
        return self._data.pop(key)

    def resize(self, capacity: int) -> list[tuple[Hashable, Any]]:
        self._capacity = _check_capacity(capacity)
        evicted: list[tuple[Hashable, Any]] = []
        while len(self._data) > self._capacity:
            evicted.append(self._data.popitem(last=False))
        return evicted

    def keys(self) -> list[Hashable]:
        return list(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"LRUCache(capacity={self._capacity}, items={list(self._data.items())!r})"
