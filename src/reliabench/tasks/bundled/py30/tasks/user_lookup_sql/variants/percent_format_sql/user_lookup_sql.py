"""Data-access helpers for the ``users`` table (SQLite)."""

from __future__ import annotations

import sqlite3

VALID_ROLES = frozenset({"user", "admin", "auditor"})

SELECT = "SELECT id, username, email, role FROM users"


def _to_dict(row):
    return {"id": row[0], "username": row[1], "email": row[2], "role": row[3]}


def add_user(conn: sqlite3.Connection, username: str, email: str, role: str = "user") -> int:
    if not username or not email:
        raise ValueError("username and email are required")
    if role not in VALID_ROLES:
        raise ValueError("invalid role")
    if find_user(conn, username) is not None:
        raise ValueError("duplicate username")
    cur = conn.execute(
        "INSERT INTO users (username, email, role) VALUES (?, ?, ?)", (username, email, role)
    )
    conn.commit()
    return cur.lastrowid


def find_user(conn: sqlite3.Connection, username: str) -> dict | None:
    query = SELECT + " WHERE username = \"%s\"" % username
    row = conn.execute(query).fetchone()
    return _to_dict(row) if row else None


def search_users(conn: sqlite3.Connection, prefix: str, limit: int = 10) -> list[dict]:
    if type(limit) is not int or limit < 1 or limit > 100:
        raise ValueError("bad limit")
    query = SELECT + " WHERE substr(username, 1, %d) = \"%s\" ORDER BY username LIMIT %d" % (
        len(prefix),
        prefix,
        limit,
    )
    return [_to_dict(r) for r in conn.execute(query).fetchall()]


def set_role(conn: sqlite3.Connection, username: str, role: str) -> bool:
    if role not in VALID_ROLES:
        raise ValueError("invalid role")
    cur = conn.execute("UPDATE users SET role = ? WHERE username = ?", (role, username))
    conn.commit()
    return cur.rowcount > 0
