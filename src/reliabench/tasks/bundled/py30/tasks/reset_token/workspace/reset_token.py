"""Password-reset tokens."""

from __future__ import annotations

import time
from typing import Callable


class InvalidTokenError(Exception):
    """Raised when a token is unknown, used, revoked, superseded or expired."""


def generate_reset_token(nbytes: int = 32) -> str:
    """Return an unpadded URL-safe base64 token of ``nbytes`` random bytes."""
    raise NotImplementedError


class ResetTokenStore:
    """Issues one-time password-reset tokens with a time-to-live."""

    def __init__(self, ttl_seconds: float = 900, clock: Callable[[], float] = time.time) -> None:
        raise NotImplementedError

    def issue(self, user_id: str) -> str:
        raise NotImplementedError

    def redeem(self, token: str) -> str:
        raise NotImplementedError

    def revoke_user(self, user_id: str) -> int:
        raise NotImplementedError

    def pending_count(self) -> int:
        raise NotImplementedError
