"""Data-access helpers for the ``users`` table (SQLite)."""

from __future__ import annotations

import sqlite3

VALID_ROLES = frozenset({"user", "admin", "auditor"})

COLUMNS = ("id", "username", "email", "role")


def add_user(conn: sqlite3.Connection, username: str, email: str, role: str = "user") -> int:
    if not isinstance(username, str) or not username or not isinstance(email, str) or not email:
        raise ValueError("username and email are required")
    if role not in VALID_ROLES:
        raise ValueError("invalid role")
    try:
        cur = conn.execute(
            f"INSERT INTO users (username, email, role) VALUES ('{username}', '{email}', '{role}')"
        )
    except sqlite3.IntegrityError:
        raise ValueError("duplicate username")
    conn.commit()
    return cur.lastrowid


def find_user(conn: sqlite3.Connection, username: str) -> dict | None:
    row = conn.execute(
        f"SELECT id, username, email, role FROM users WHERE username = '{username}'"
    ).fetchone()
    return dict(zip(COLUMNS, row)) if row else None


def search_users(conn: sqlite3.Connection, prefix: str, limit: int = 10) -> list[dict]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise ValueError("bad limit")
    # LIKE treats % and _ as wildcards and ignores case, so compare a substring instead.
    rows = conn.execute(
        f"SELECT id, username, email, role FROM users "
        f"WHERE substr(username, 1, {len(prefix)}) = '{prefix}' ORDER BY username LIMIT {limit}"
    ).fetchall()
    return [dict(zip(COLUMNS, r)) for r in rows]


def set_role(conn: sqlite3.Connection, username: str, role: str) -> bool:
    if role not in VALID_ROLES:
        raise ValueError("invalid role")
    cur = conn.execute(f"UPDATE users SET role = '{role}' WHERE username = '{username}'")
    conn.commit()
    return cur.rowcount > 0
