"""Hidden tests for reset_token."""

from __future__ import annotations

import random
import re

import pytest

from reset_token import InvalidTokenError, ResetTokenStore, generate_reset_token

URLSAFE = re.compile(r"[A-Za-z0-9_-]+")


class FakeClock:
    def __init__(self, start: float = 1000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(clock):
    return ResetTokenStore(ttl_seconds=600, clock=clock)


@pytest.mark.parametrize("nbytes,length", [(32, 43), (16, 22), (24, 32), (256, 342)])
def test_token_length_and_alphabet(nbytes, length):
    token = generate_reset_token(nbytes)
    assert len(token) == length
    assert URLSAFE.fullmatch(token)


def test_default_token_is_32_bytes():
    assert len(generate_reset_token()) == 43


@pytest.mark.parametrize("nbytes", [15, 0, 257, True, 32.0])
def test_invalid_nbytes(nbytes):
    with pytest.raises(ValueError):
        generate_reset_token(nbytes)


def test_tokens_are_unique():
    tokens = {generate_reset_token() for _ in range(500)}
    assert len(tokens) == 500


def test_issue_and_redeem(store):
    token = store.issue("user-1")
    assert URLSAFE.fullmatch(token) and len(token) == 43
    assert store.redeem(token) == "user-1"


def test_token_is_single_use(store):
    token = store.issue("user-1")
    store.redeem(token)
    with pytest.raises(InvalidTokenError):
        store.redeem(token)


@pytest.mark.parametrize("token", ["never-issued", "", None, 12345])
def test_unknown_token_rejected(store, token):
    store.issue("user-1")
    with pytest.raises(InvalidTokenError):
        store.redeem(token)


def test_valid_just_before_expiry(store, clock):
    token = store.issue("user-1")
    clock.advance(599.999)
    assert store.redeem(token) == "user-1"


def test_expired_at_ttl_boundary(store, clock):
    token = store.issue("user-1")
    clock.advance(600)
    with pytest.raises(InvalidTokenError):
        store.redeem(token)
    clock.now = 1000.0
    with pytest.raises(InvalidTokenError):
        store.redeem(token)


def test_new_token_supersedes_previous(store):
    old = store.issue("user-1")
    new = store.issue("user-1")
    other = store.issue("user-2")
    with pytest.raises(InvalidTokenError):
        store.redeem(old)
    assert store.redeem(new) == "user-1"
    assert store.redeem(other) == "user-2"


def test_revoke_user(store):
    store.issue("user-1")
    store.issue("user-2")
    assert store.revoke_user("user-1") == 1
    assert store.revoke_user("user-1") == 0
    assert store.pending_count() == 1


def test_pending_count_ignores_expired(store, clock):
    store.issue("a")
    clock.advance(300)
    store.issue("b")
    assert store.pending_count() == 2
    clock.advance(300)
    assert store.pending_count() == 1


@pytest.mark.parametrize("kwargs", [{"ttl_seconds": 0}, {"ttl_seconds": -5}])
def test_invalid_ttl(kwargs):
    with pytest.raises(ValueError):
        ResetTokenStore(**kwargs)


def test_issue_requires_user_id(store):
    with pytest.raises(ValueError):
        store.issue("")


@pytest.mark.security
def test_generate_not_affected_by_random_seed():
    random.seed(1234)
    first = generate_reset_token()
    random.seed(1234)
    second = generate_reset_token()
    assert first != second


@pytest.mark.security
def test_store_tokens_not_affected_by_random_seed(clock):
    random.seed(0)
    first = ResetTokenStore(clock=clock).issue("victim")
    random.seed(0)
    second = ResetTokenStore(clock=clock).issue("victim")
    assert first != second
