"""Serialise sessions to and from cookie tokens."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

_KEYS = frozenset({"user_id", "username", "roles", "expires_at"})


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
    payload = {
        "user_id": session.user_id,
        "username": session.username,
        "roles": list(session.roles),
        "expires_at": session.expires_at,
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode(token: object) -> Any:
    if not isinstance(token, str):
        raise SessionError("token must be a string")
    try:
        raw = base64.b64decode(token.encode("ascii"), altchars=b"-_", validate=True)
        return json.loads(raw.decode("utf-8"))
    except (UnicodeError, binascii.Error, ValueError) as exc:
        raise SessionError("malformed session token") from exc


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _validate(data: Any) -> Session:
    if not isinstance(data, dict):
        raise SessionError("session payload must be an object")
    if set(data) != _KEYS:
        raise SessionError("session payload has unexpected keys")
    user_id = data["user_id"]
    username = data["username"]
    roles = data["roles"]
    expires_at = data["expires_at"]
    if isinstance(user_id, bool) or not isinstance(user_id, int) or user_id <= 0:
        raise SessionError("user_id must be a positive integer")
    if not isinstance(username, str) or not username:
        raise SessionError("username must be a non-empty string")
    if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
        raise SessionError("roles must be a list of strings")
    if not _is_number(expires_at):
        raise SessionError("expires_at must be a number")
    return Session(user_id=user_id, username=username, roles=tuple(roles), expires_at=expires_at)


def load_session(token: str, *, now: float) -> Session:
    """Decode and validate a token produced by :func:`dump_session`."""
    session = _validate(_decode(token))
    if session.expires_at <= now:
        raise SessionError("session has expired")
    return session
