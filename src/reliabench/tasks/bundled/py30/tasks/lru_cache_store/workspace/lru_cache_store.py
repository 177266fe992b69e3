"""A fixed-capacity least-recently-used key/value store."""

from __future__ import annotations

from typing import Any, Hashable


class LRUCache:
    """Key/value store that evicts the least recently used entry when full."""

    def __init__(self, capacity: int) -> None:
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        raise NotImplementedError

    def get(self, key: Hashable, default: Any = None) -> Any:
        raise NotImplementedError

    def peek(self, key: Hashable, default: Any = None) -> Any:
        raise NotImplementedError

    def put(self, key: Hashable, value: Any) -> tuple[Hashable, Any] | None:
        raise NotImplementedError

    def delete(self, key: Hashable) -> Any:
        raise NotImplementedError

    def resize(self, capacity: int) -> list[tuple[Hashable, Any]]:
        raise NotImplementedError

    def keys(self) -> list[Hashable]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __contains__(self, key: object) -> bool:
        raise NotImplementedError
