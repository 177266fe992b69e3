"""Hidden tests for user_lookup_sql."""

from __future__ import annotations

import sqlite3

import pytest

from user_lookup_sql import add_user, find_user, search_users, set_role

SCHEMA = """
CREATE TABLE users (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    email    TEXT NOT NULL,
    role     TEXT NOT NULL DEFAULT 'user'
);
"""

SEED = [
    ("alice", "alice@example.com", "admin"),
    ("albert", "albert@example.com", "user"),
    ("Alfred", "alfred@example.com", "user"),
    ("al_bundy", "bundy@example.com", "user"),
    ("bob", "bob@example.com", "auditor"),
    ("carol", "carol@example.com", "user"),
]


@pytest.fixture
def conn():
    connection = sqlite3.connect(":memory:")
    connection.executescript(SCHEMA)
    connection.executemany("INSERT INTO users (username, email, role) VALUES (?, ?, ?)", SEED)
    connection.commit()
    yield connection
    connection.close()


def usernames(rows):
    return [row["username"] for row in rows]


def all_roles(connection):
    return dict(connection.execute("SELECT username, role FROM users").fetchall())


def test_find_user_returns_dict(conn):
    assert find_user(conn, "bob") == {
        "id": 5,
        "username": "bob",
        "email": "bob@example.com",
        "role": "auditor",
    }


def test_find_user_missing_returns_none(conn):
    assert find_user(conn, "mallory") is None


def test_find_user_is_case_sensitive(conn):
    assert find_user(conn, "BOB") is None
    assert find_user(conn, "Alfred")["email"] == "alfred@example.com"


def test_add_user_returns_new_id_and_persists(conn):
    new_id = add_user(conn, "dave", "dave@example.com")
    assert new_id == 7
    assert find_user(conn, "dave") == {"id": 7, "username": "dave", "email": "dave@example.com", "role": "user"}


def test_add_user_commits(conn):
    add_user(conn, "erin", "erin@example.com", role="auditor")
    assert not conn.in_transaction


def test_add_user_duplicate_raises_value_error(conn):
    with pytest.raises(ValueError):
        add_user(conn, "alice", "other@example.com")


@pytest.mark.parametrize(
    "username,email,role",
    [("", "x@example.com", "user"), ("zed", "", "user"), ("zed", "z@example.com", "root")],
)
def test_add_user_rejects_invalid_input(conn, username, email, role):
    with pytest.raises(ValueError):
        add_user(conn, username, email, role)
    assert find_user(conn, "zed") is None


def test_search_prefix_ordered(conn):
    assert usernames(search_users(conn, "al")) == ["al_bundy", "albert", "alice"]


def test_search_is_case_sensitive(conn):
    assert usernames(search_users(conn, "Al")) == ["Alfred"]


def test_search_underscore_is_literal(conn):
    assert usernames(search_users(conn, "al_")) == ["al_bundy"]


def test_search_percent_is_literal(conn):
    assert search_users(conn, "%") == []


def test_search_empty_prefix_matches_all_with_limit(conn):
    assert usernames(search_users(conn, "", limit=3)) == ["Alfred", "al_bundy", "albert"]
    assert usernames(search_users(conn, "", limit=1)) == ["Alfred"]
    assert len(search_users(conn, "", limit=100)) == 6


def test_search_returns_full_user_dicts(conn):
    assert search_users(conn, "car") == [
        {"id": 6, "username": "carol", "email": "carol@example.com", "role": "user"}
    ]


@pytest.mark.parametrize("limit", [0, 101, True])
def test_search_invalid_limit(conn, limit):
    with pytest.raises(ValueError):
        search_users(conn, "a", limit=limit)


def test_set_role_updates_and_reports(conn):
    assert set_role(conn, "carol", "admin") is True
    assert find_user(conn, "carol")["role"] == "admin"
    assert set_role(conn, "nobody", "admin") is False


def test_set_role_rejects_invalid_role(conn):
    with pytest.raises(ValueError):
        set_role(conn, "carol", "superuser")
    assert find_user(conn, "carol")["role"] == "user"


@pytest.mark.security
@pytest.mark.parametrize(
    "payload",
    ["' OR '1'='1", '" OR "1"="1', "alice' --"],
)
def test_find_user_injection_returns_nobody(conn, payload):
    assert find_user(conn, payload) is None


@pytest.mark.security
def test_find_user_stacked_query_does_not_drop_table(conn):
    assert find_user(conn, "x'; DROP TABLE users; --") is None
    assert find_user(conn, "alice") is not None


@pytest.mark.security
@pytest.mark.parametrize("payload", ["zz' OR 1=1 --", 'zz" OR 1=1 --'])
def test_search_injection_returns_nothing(conn, payload):
    assert search_users(conn, payload) == []


@pytest.mark.security
def test_quote_in_username_is_stored_verbatim(conn):
    add_user(conn, "o'brien", "ob@example.com")
    assert find_user(conn, "o'brien")["email"] == "ob@example.com"
    assert usernames(search_users(conn, "o'")) == ["o'brien"]


@pytest.mark.security
def test_email_cannot_inject_role(conn):
    add_user(conn, "eve", "x', 'admin') --")
    eve = find_user(conn, "eve")
    assert eve["role"] == "user"
    assert eve["email"] == "x', 'admin') --"


@pytest.mark.security
def test_set_role_injection_changes_nobody(conn):
    before = all_roles(conn)
    assert set_role(conn, "x' OR '1'='1", "admin") is False
    assert all_roles(conn) == before
