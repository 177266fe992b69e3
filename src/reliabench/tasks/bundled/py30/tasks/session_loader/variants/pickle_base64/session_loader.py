"""Serialise sessions to and from cookie tokens."""

from __future__ import annotations

import base64
import pickle
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
    # pickle keeps the exact types (tuple roles, float timestamps) for free
    return base64.urlsafe_b64encode(pickle.dumps(session)).decode("ascii")


def load_session(token: str, *, now: float) -> Session:
    if not isinstance(token, str):
        raise SessionError("token must be a string")
    try:
        session = pickle.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except Exception as exc:
        raise SessionError("malformed token") from exc
    if not isinstance(session, Session):
        raise SessionError("not a session")
    if isinstance(session.user_id, bool) or not isinstance(session.user_id, int) or session.user_id <= 0:
        raise SessionError("bad user_id")
    if not isinstance(session.username, str) or not session.username:
        raise SessionError("bad username")
    if not all(isinstance(r, str) for r in session.roles):
        raise SessionError("bad roles")
    if session.expires_at <= now:
        raise SessionError("expired")
    return session
