"""Token-bucket rate limiter with an injectable clock."""

from __future__ import annotations

import time
from typing import Callable


class TokenBucket:
    """Allows bursts of up to ``capacity`` and a sustained ``rate`` of tokens per second."""

    def __init__(
        self,
        rate: float,
        capacity: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if capacity <= 0:
            raise ValueError(f"capacity must be > 0, got {capacity}")
        self._rate = float(rate)
        self._capacity = float(capacity)
        self._clock = clock
        self._tokens = self._capacity
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self._capacity, self._tokens + elapsed * self._rate)
            self._last = now

    def _check_cost(self, cost: float) -> None:
        if cost <= 0:
            raise ValueError(f"cost must be > 0, got {cost}")
        if cost > self._capacity:
            raise ValueError(f"cost {cost} exceeds bucket capacity {self._capacity}")

    @property
    def tokens(self) -> float:
        """Tokens available right now (after refilling)."""
        self._refill()
        return self._tokens

    def allow(self, cost: float = 1.0) -> bool:
        """Consume ``cost`` tokens if available and return True, else return False."""
        self._check_cost(cost)
        self._refill()
        if self._tokens >= cost:
            self._tokens -= cost
            return True
        return False

    def wait_time(self, cost: float = 1.0) -> float:
        """Seconds until ``allow(cost)`` would succeed (0.0 if it would succeed now)."""
        self._check_cost(cost)
        self._refill()
        missing = cost - self._tokens
        if missing <= 0:
            return 0.0
        return missing / self._rate
