"""Data-access helpers for the ``users`` table (SQLite)."""

from __future__ import annotations

import sqlite3

VALID_ROLES = frozenset({"user", "admin", "auditor"})


def add_user(conn: sqlite3.Connection, username: str, email: str, role: str = "user") -> int:
    """Insert a user and return its id; ``ValueError`` on invalid input or duplicate username."""
    raise NotImplementedError


def find_user(conn: sqlite3.Connection, username: str) -> dict | None:
    """Return the user with exactly this username, or ``None``."""
    raise NotImplementedError


def search_users(conn: sqlite3.Connection, prefix: str, limit: int = 10) -> list[dict]:
    """Return up to ``limit`` users whose username starts with ``prefix`` (literal, case-sensitive)."""
    raise NotImplementedError


def set_role(conn: sqlite3.Connection, username: str, role: str) -> bool:
    """Change a user's role; return whether a user was updated."""
    raise NotImplementedError
