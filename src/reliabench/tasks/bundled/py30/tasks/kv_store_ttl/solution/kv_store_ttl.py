"""In-memory key-value store with per-key time-to-live."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


def _check_ttl(ttl: float | None) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ValueError("ttl must be a positive number or None")
    return ttl


@dataclass
class _Entry:
    value: object
    expires_at: float | None

    def alive(self, now: float) -> bool:
        return self.expires_at is None or now < self.expires_at


class TTLStore:
    def __init__(self, clock: Callable[[], float] = time.monotonic, default_ttl: float | None = None) -> None:
        self._clock = clock
        self._default_ttl = _check_ttl(default_ttl)
        self._data: dict[str, _Entry] = {}

    def _expiry(self, ttl: float | None) -> float | None:
        effective = _check_ttl(ttl) if ttl is not None else self._default_ttl
        return None if effective is None else self._clock() + effective

    def _live(self, key: object) -> _Entry | None:
        entry = self._data.get(key)  # type: ignore[call-overload]
        if entry is None:
            return None
        if not entry.alive(self._clock()):
            del self._data[key]  # type: ignore[arg-type]
            return None
        return entry

    def set(self, key: str, value: object, ttl: float | None = None) -> None:
        if not isinstance(key, str):
            raise TypeError("keys must be strings")
        self._data[key] = _Entry(value, self._expiry(ttl))

    def get(self, key: str, default: object = None) -> object:
        entry = self._live(key)
        return default if entry is None else entry.value

    def delete(self, key: str) -> bool:
        if self._live(key) is None:
            return False
        del self._data[key]
        return True

    def ttl(self, key: str) -> float | None:
        entry = self._live(key)
        if entry is None:
            raise KeyError(key)
        if entry.expires_at is None:
            return None
        return entry.expires_at - self._clock()

    def touch(self, key: str, ttl: float | None = None) -> bool:
        expires_at = self._expiry(ttl)
        entry = self._live(key)
        if entry is None:
            return False
        entry.expires_at = expires_at
        return True

    def keys(self) -> list[str]:
        now = self._clock()
        return sorted(key for key, entry in self._data.items() if entry.alive(now))

    def purge_expired(self) -> int:
        now = self._clock()
        expired = [key for key, entry in self._data.items() if not entry.alive(now)]
        for key in expired:
            del self._data[key]
        return len(expired)

    def __contains__(self, key: object) -> bool:
        return self._live(key) is not None

    def __len__(self) -> int:
        return len(self.keys())
