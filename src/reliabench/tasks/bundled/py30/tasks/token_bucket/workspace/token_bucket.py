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
        raise NotImplementedError

    @property
    def tokens(self) -> float:
        """Tokens available right now (after refilling)."""
        raise NotImplementedError

    def allow(self, cost: float = 1.0) -> bool:
        """Consume ``cost`` tokens if available and return True, else return False."""
        raise NotImplementedError

    def wait_time(self, cost: float = 1.0) -> float:
        """Seconds until ``allow(cost)`` would succeed (0.0 if it would succeed now)."""
        raise NotImplementedError
