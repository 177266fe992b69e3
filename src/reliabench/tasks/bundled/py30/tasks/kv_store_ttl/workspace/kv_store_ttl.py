"""In-memory key-value store with per-key time-to-live."""

from __future__ import annotations

import time
from typing import Callable


class TTLStore:
    def __init__(self, clock: Callable[[], float] = time.monotonic, default_ttl: float | None = None) -> None:
        raise NotImplementedError

    def set(self, key: str, value: object, ttl: float | None = None) -> None:
        raise NotImplementedError

    def get(self, key: str, default: object = None) -> object:
        raise NotImplementedError

    def delete(self, key: str) -> bool:
        raise NotImplementedError

    def ttl(self, key: str) -> float | None:
        raise NotImplementedError

    def touch(self, key: str, ttl: float | None = None) -> bool:
        raise NotImplementedError

    def keys(self) -> list[str]:
        raise NotImplementedError

    def purge_expired(self) -> int:
        raise NotImplementedError

    def __contains__(self, key: object) -> bool:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError
