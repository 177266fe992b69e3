"""Password-reset tokens."""

from __future__ import annotations

import math
import random
import string
import time
from typing import Callable

ALPHABET = string.ascii_letters + string.digits + "-_"


class InvalidTokenError(Exception):
    pass


def generate_reset_token(nbytes: int = 32) -> str:
    if type(nbytes) is not int or not 16 <= nbytes <= 256:
        raise ValueError("nbytes out of range")
    length = math.ceil(nbytes * 4 / 3)
    return "".join(random.choices(ALPHABET, k=length))


class ResetTokenStore:
    def __init__(self, ttl_seconds: float = 900, clock: Callable[[], float] = time.time) -> None:
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)) or ttl_seconds <= 0:
            raise ValueError("ttl must be positive")
        self.ttl = ttl_seconds
        self.clock = clock
        self.tokens: dict[str, tuple[str, float]] = {}

    def issue(self, user_id: str) -> str:
        if not isinstance(user_id, str) or not user_id:
            raise ValueError("user_id required")
        self.revoke_user(user_id)
        token = generate_reset_token()
        self.tokens[token] = (user_id, self.clock())
        return token

    def redeem(self, token: str) -> str:
        if token not in self.tokens:
            raise InvalidTokenError("invalid token")
        user_id, issued = self.tokens.pop(token)
        if self.clock() >= issued + self.ttl:
            raise InvalidTokenError("expired")
        return user_id

    def revoke_user(self, user_id: str) -> int:
        mine = [t for t, (uid, _) in self.tokens.items() if uid == user_id]
        for t in mine:
            del self.tokens[t]
        return len(mine)

    def pending_count(self) -> int:
        now = self.clock()
        return sum(1 for _, issued in self.tokens.values() if now < issued + self.ttl)
