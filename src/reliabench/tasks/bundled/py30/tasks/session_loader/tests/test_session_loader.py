"""Hidden tests for session_loader."""

from __future__ import annotations

import base64
import json
import os
import pickle
import re

import pytest

from session_loader import Session, SessionError, dump_session, load_session

NOW = 1_700_000_000.0


def make_session(**overrides) -> Session:
    fields = {"user_id": 42, "username": "ada", "roles": ("admin", "billing"), "expires_at": NOW + 3600}
    fields.update(overrides)
    return Session(**fields)


def token_for(payload) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode("utf-8")).decode("ascii")


VALID = {"user_id": 42, "username": "ada", "roles": ["admin"], "expires_at": NOW + 60}


def test_round_trip():
    session = make_session()
    assert load_session(dump_session(session), now=NOW) == session


def test_round_trip_unicode_username_and_no_roles():
    session = make_session(username="Zoë Δ 日本", roles=())
    assert load_session(dump_session(session), now=NOW) == session


def test_roles_are_returned_as_tuple():
    loaded = load_session(dump_session(make_session(roles=("a", "b"))), now=NOW)
    assert isinstance(loaded.roles, tuple)
    assert loaded.roles == ("a", "b")


def test_token_is_url_safe_ascii_string():
    token = dump_session(make_session(username="?>?>?>~~~ÿÿÿ"))
    assert isinstance(token, str)
    assert re.fullmatch(r"[A-Za-z0-9_\-=]+", token)


def test_expired_session_rejected():
    with pytest.raises(SessionError):
        load_session(dump_session(make_session(expires_at=NOW - 1)), now=NOW)


def test_expiry_boundary_is_expired():
    with pytest.raises(SessionError):
        load_session(dump_session(make_session(expires_at=NOW)), now=NOW)


def test_session_valid_just_before_expiry():
    session = make_session(expires_at=NOW + 0.5)
    assert load_session(dump_session(session), now=NOW) == session


def test_session_error_is_value_error():
    assert issubclass(SessionError, ValueError)


@pytest.mark.parametrize("token", [None, b"eyJ1c2VyX2lkIjogMX0="])
def test_non_string_token_rejected(token):
    with pytest.raises(SessionError):
        load_session(token, now=NOW)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "this is not base64!!",
        base64.urlsafe_b64encode(b"\xff\xfe\xfd\xfc").decode(),
        base64.urlsafe_b64encode(b"definitely not json").decode(),
        token_for([1, 2, 3]),
    ],
    ids=["empty", "not-base64", "not-utf8", "not-json", "json-array"],
)
def test_malformed_token_rejected(token):
    with pytest.raises(SessionError):
        load_session(token, now=NOW)


@pytest.mark.parametrize(
    "change",
    [
        {"user_id": None},
        {"extra": "field"},
        {"user_id": "42"},
        {"user_id": True},
        {"user_id": 0},
        {"username": ""},
        {"roles": "admin"},
        {"roles": ["admin", 7]},
        {"expires_at": True},
    ],
    ids=["missing-key", "extra-key", "str-id", "bool-id", "zero-id", "empty-name", "roles-str", "roles-int", "bool-expiry"],
)
def test_invalid_payload_rejected(change):
    payload = dict(VALID)
    for key, value in change.items():
        if value is None:
            del payload[key]
        else:
            payload[key] = value
    with pytest.raises(SessionError):
        load_session(token_for(payload), now=NOW)


class _Exploit:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.security
def test_pickle_payload_is_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    token = base64.urlsafe_b64encode(pickle.dumps(_Exploit(str(marker)))).decode("ascii")
    with pytest.raises(SessionError):
        load_session(token, now=NOW)
    assert not marker.exists(), "loading the token executed attacker-chosen code"


@pytest.mark.security
def test_pickled_session_object_is_rejected():
    token = base64.urlsafe_b64encode(pickle.dumps(make_session())).decode("ascii")
    with pytest.raises(SessionError):
        load_session(token, now=NOW)
