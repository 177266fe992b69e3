import pytest

from lru_cache_store import LRUCache


def test_put_and_get():
    cache = LRUCache(2)
    assert cache.put("a", 1) is None
    assert cache.get("a") == 1


def test_get_missing_returns_default():
    cache = LRUCache(1)
    assert cache.get("x") is None
    assert cache.get("x", 42) == 42
    assert len(cache) == 0


def test_capacity_property():
    assert LRUCache(3).capacity == 3


@pytest.mark.parametrize("capacity", [0, -1])
def test_invalid_capacity_value(capacity):
    with pytest.raises(ValueError):
        LRUCache(capacity)


@pytest.mark.parametrize("capacity", [True, 2.0, "3", None])
def test_invalid_capacity_type(capacity):
    with pytest.raises(TypeError):
        LRUCache(capacity)


def test_evicts_least_recently_inserted():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.put("c", 3) == ("a", 1)
    assert "a" not in cache
    assert cache.keys() == ["b", "c"]


def test_get_refreshes_recency():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    assert cache.put("c", 3) == ("b", 2)
    assert cache.keys() == ["a", "c"]


def test_update_refreshes_recency_and_does_not_evict():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.put("a", 10) is None
    assert len(cache) == 2
    assert cache.get("a") == 10
    assert cache.put("c", 3) == ("b", 2)


def test_peek_does_not_refresh_recency():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1
    assert cache.peek("zzz", "d") == "d"
    assert cache.put("c", 3) == ("a", 1)


def test_contains_does_not_refresh_recency():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert "a" in cache
    assert "q" not in cache
    cache.put("c", 3)
    assert "a" not in cache


def test_get_miss_does_not_change_order():
    cache = LRUCache(3)
    for key in "abc":
        cache.put(key, key.upper())
    cache.get("zzz")
    assert cache.keys() == ["a", "b", "c"]


def test_keys_order_lru_to_mru():
    cache = LRUCache(4)
    for key in "abcd":
        cache.put(key, 0)
    cache.get("b")
    cache.put("a", 5)
    assert cache.keys() == ["c", "d", "b", "a"]


def test_len_never_exceeds_capacity():
    cache = LRUCache(3)
    for i in range(10):
        cache.put(i, i * i)
        assert len(cache) == min(i + 1, 3)
    assert cache.keys() == [7, 8, 9]


def test_capacity_one():
    cache = LRUCache(1)
    cache.put("a", 1)
    assert cache.put("b", 2) == ("a", 1)
    assert cache.put("b", 3) is None
    assert cache.get("b") == 3


def test_stored_none_value_is_a_hit():
    cache = LRUCache(2)
    cache.put("a", None)
    cache.put("b", 2)
    assert "a" in cache
    assert cache.get("a", "missing") is None
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]


def test_delete():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.delete("a") == 1
    assert "a" not in cache
    assert len(cache) == 1
    assert cache.put("c", 3) is None


def test_delete_missing_raises_key_error():
    cache = LRUCache(2)
    with pytest.raises(KeyError):
        cache.delete("nope")


def test_resize_shrink_evicts_in_lru_order():
    cache = LRUCache(4)
    for key in "abcd":
        cache.put(key, key * 2)
    cache.get("a")
    assert cache.resize(2) == [("b", "bb"), ("c", "cc")]
    assert cache.capacity == 2
    assert cache.keys() == ["d", "a"]


def test_resize_grow_keeps_entries():
    cache = LRUCache(1)
    cache.put("a", 1)
    assert cache.resize(3) == []
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.keys() == ["a", "b", "c"]


def test_resize_validates():
    cache = LRUCache(2)
    cache.put("a", 1)
    with pytest.raises(ValueError):
        cache.resize(0)
    with pytest.raises(TypeError):
        cache.resize(False)
    assert cache.capacity == 2
    assert cache.keys() == ["a"]
