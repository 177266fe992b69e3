"""Hidden tests for kv_store_ttl."""

from __future__ import annotations

import pytest

from kv_store_ttl import TTLStore


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(clock):
    return TTLStore(clock=clock)


def test_set_and_get(store):
    store.set("a", {"x": 1})
    assert store.get("a") == {"x": 1}


def test_get_missing_returns_default(store):
    assert store.get("nope") is None
    assert store.get("nope", 42) == 42


def test_falsy_values_are_stored(store):
    store.set("zero", 0)
    store.set("none", None)
    assert store.get("zero", "default") == 0
    assert "none" in store and store.get("none", "default") is None


def test_entry_expires_at_exact_deadline(store, clock):
    store.set("a", 1, ttl=10)
    clock.now = 109.999
    assert store.get("a") == 1
    clock.now = 110.0
    assert store.get("a") is None
    assert "a" not in store


def test_no_ttl_never_expires(store, clock):
    store.set("a", 1)
    clock.now = 1e12
    assert store.get("a") == 1
    assert store.ttl("a") is None


def test_default_ttl_applies(clock):
    store = TTLStore(clock=clock, default_ttl=5)
    store.set("a", 1)
    store.set("b", 2, ttl=50)
    clock.now = 105
    assert store.keys() == ["b"]


def test_overwrite_resets_value_and_expiry(store, clock):
    store.set("a", 1, ttl=10)
    clock.now = 108
    store.set("a", 2)
    clock.now = 500
    assert store.get("a") == 2


def test_remaining_ttl(store, clock):
    store.set("a", 1, ttl=30)
    clock.now = 112.5
    assert store.ttl("a") == pytest.approx(17.5)


def test_ttl_of_missing_or_expired_key_raises(store, clock):
    store.set("a", 1, ttl=1)
    clock.now = 101
    with pytest.raises(KeyError):
        store.ttl("a")
    with pytest.raises(KeyError):
        store.ttl("never")


def test_delete(store, clock):
    store.set("a", 1)
    store.set("b", 2, ttl=1)
    clock.now = 200
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert store.delete("b") is False


def test_touch_extends_live_key(store, clock):
    store.set("a", 1, ttl=10)
    clock.now = 105
    assert store.touch("a", ttl=10) is True
    clock.now = 114
    assert store.get("a") == 1
    clock.now = 115
    assert store.get("a") is None


def test_touch_without_ttl_makes_permanent_and_ignores_expired(store, clock):
    store.set("a", 1, ttl=10)
    store.set("b", 1, ttl=1)
    clock.now = 101
    assert store.touch("a") is True
    assert store.touch("b") is False
    assert store.touch("missing") is False
    assert store.ttl("a") is None


def test_keys_sorted_and_live_only(store, clock):
    store.set("pear", 1)
    store.set("apple", 2, ttl=5)
    store.set("fig", 3, ttl=50)
    assert store.keys() == ["apple", "fig", "pear"]
    clock.now = 105
    assert store.keys() == ["fig", "pear"]
    assert len(store) == 2


def test_purge_expired(store, clock):
    store.set("a", 1, ttl=1)
    store.set("b", 2, ttl=2)
    store.set("c", 3, ttl=3)
    store.set("d", 4)
    clock.now = 102
    assert store.purge_expired() == 2
    assert store.purge_expired() == 0
    assert store.keys() == ["c", "d"]


@pytest.mark.parametrize("ttl", [0, -1, True, "10"])
def test_invalid_ttl(store, ttl):
    with pytest.raises(ValueError):
        store.set("a", 1, ttl=ttl)
    assert "a" not in store


def test_invalid_default_ttl(clock):
    with pytest.raises(ValueError):
        TTLStore(clock=clock, default_ttl=0)


def test_non_string_key_rejected(store):
    with pytest.raises(TypeError):
        store.set(1, "x")
