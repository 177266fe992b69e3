"""Password-reset tokens."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Callable

MIN_TOKEN_BYTES = 16
MAX_TOKEN_BYTES = 256
DEFAULT_TOKEN_BYTES = 32


class InvalidTokenError(Exception):
    """Raised when a token is unknown, used, revoked, superseded or expired."""


def generate_reset_token(nbytes: int = DEFAULT_TOKEN_BYTES) -> str:
    """Return an unpadded URL-safe base64 token of ``nbytes`` random bytes."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise ValueError("nbytes must be an integer")
    if nbytes < MIN_TOKEN_BYTES or nbytes > MAX_TOKEN_BYTES:
        raise ValueError(f"nbytes must be between {MIN_TOKEN_BYTES} and {MAX_TOKEN_BYTES}")
    return secrets.token_urlsafe(nbytes)


@dataclass(frozen=True)
class _Grant:
    user_id: str
    issued_at: float


class ResetTokenStore:
    """Issues one-time password-reset tokens with a time-to-live."""

    def __init__(self, ttl_seconds: float = 900, clock: Callable[[], float] = time.time) -> None:
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)) or ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be a positive number")
        self._ttl = float(ttl_seconds)
        self._clock = clock
        self._grants: dict[str, _Grant] = {}

    def _is_live(self, grant: _Grant, now: float) -> bool:
        return now < grant.issued_at + self._ttl

    def issue(self, user_id: str) -> str:
        if not isinstance(user_id, str) or not user_id:
            raise ValueError("user_id must be a non-empty string")
        self.revoke_user(user_id)
        token = generate_reset_token()
        self._grants[token] = _Grant(user_id=user_id, issued_at=self._clock())
        return token

    def redeem(self, token: str) -> str:
        if not isinstance(token, str):
            raise InvalidTokenError("token must be a string")
        grant = self._grants.pop(token, None)
        if grant is None:
            raise InvalidTokenError("unknown or already used token")
        if not self._is_live(grant, self._clock()):
            raise InvalidTokenError("token has expired")
        return grant.user_id

    def revoke_user(self, user_id: str) -> int:
        doomed = [token for token, grant in self._grants.items() if grant.user_id == user_id]
        for token in doomed:
            del self._grants[token]
        return len(doomed)

    def pending_count(self) -> int:
        now = self._clock()
        return sum(1 for grant in self._grants.values() if self._is_live(grant, now))
