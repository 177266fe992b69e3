"""Serialise sessions to and from cookie tokens."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Session:
    user_id: int
    username: str
    roles: tuple[str, ...]
    expires_at: float


class SessionError(ValueError):
    """Raised for malformed, invalid or expired session tokens."""


def dump_session(session: Session) -> str:
    """Encode ``session`` as a URL-safe base64 JSON token."""
    raise NotImplementedError


def load_session(token: str, *, now: float) -> Session:
    """Decode and validate a token produced by :func:`dump_session`."""
    raise NotImplementedError
