"""Data-access helpers for the ``users`` table (SQLite)."""

from __future__ import annotations

import sqlite3
from typing import Any

VALID_ROLES = frozenset({"user", "admin", "auditor"})
MAX_LIMIT = 100

_COLUMNS = ("id", "username", "email", "role")
_SELECT = "SELECT id, username, email, role FROM users"


def _row_to_dict(row: tuple[Any, ...]) -> dict:
    return dict(zip(_COLUMNS, row))


def _require_text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _require_role(role: object) -> str:
    if role not in VALID_ROLES:
        raise ValueError(f"invalid role: {role!r}")
    return str(role)


def add_user(conn: sqlite3.Connection, username: str, email: str, role: str = "user") -> int:
    """Insert a user and return its id; ``ValueError`` on invalid input or duplicate username."""
    _require_text("username", username)
    _require_text("email", email)
    _require_role(role)
    try:
        cursor = conn.execute(
            "INSERT INTO users (username, email, role) VALUES (?, ?, ?)",
            (username, email, role),
        )
    except sqlite3.IntegrityError as exc:
        raise ValueError(f"username already exists: {username!r}") from exc
    conn.commit()
    if cursor.lastrowid is None:  # pragma: no cover - INSERT always sets lastrowid
        raise RuntimeError("insert did not return a row id")
    return cursor.lastrowid


def find_user(conn: sqlite3.Connection, username: str) -> dict | None:
    """Return the user with exactly this username, or ``None``."""
    row = conn.execute(_SELECT + " WHERE username = ?", (username,)).fetchone()
    return None if row is None else _row_to_dict(row)


def search_users(conn: sqlite3.Connection, prefix: str, limit: int = 10) -> list[dict]:
    """Return up to ``limit`` users whose username starts with ``prefix`` (literal, case-sensitive)."""
    if not isinstance(prefix, str):
        raise ValueError("prefix must be a string")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer between 1 and {MAX_LIMIT}")
    # substr() compares literally and case-sensitively, so % and _ need no escaping.
    rows = conn.execute(
        _SELECT + " WHERE substr(username, 1, ?) = ? ORDER BY username LIMIT ?",
        (len(prefix), prefix, limit),
    ).fetchall()
    return [_row_to_dict(row) for row in rows]


def set_role(conn: sqlite3.Connection, username: str, role: str) -> bool:
    """Change a user's role; return whether a user was updated."""
    _require_role(role)
    cursor = conn.execute("UPDATE users SET role = ? WHERE username = ?", (role, username))
    conn.commit()
    return cursor.rowcount > 0
