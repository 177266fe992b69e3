import pytest

from json_path_get import get_path, parse_path, set_path


def sample():
    return {
        "users": [
            {"name": "Ada", "tags": ["admin", "ops"], "address": {"city": "London"}},
            {"name": "Linus", "tags": [], "address": None},
        ],
        "meta": {"count": 2, "0": "zero-key", "with space": True},
        "matrix": [[1, 2], [3, 4]],
    }


def test_parse_simple_keys():
    assert parse_path("a") == ["a"]
    assert parse_path("a.b.c") == ["a", "b", "c"]


def test_parse_indices():
    assert parse_path("users[0].address.city") == ["users", 0, "address", "city"]
    assert parse_path("m[1][-1]") == ["m", 1, -1]
    assert parse_path("a[10].b[2]") == ["a", 10, "b", 2]


def test_parse_leading_index_and_numeric_keys():
    assert parse_path("[1][-1].x") == [1, -1, "x"]
    steps = parse_path("a.0")
    assert steps == ["a", "0"]
    assert isinstance(steps[1], str)


def test_parse_keys_with_spaces_and_symbols():
    assert parse_path("with space.k-e_y$") == ["with space", "k-e_y$"]


def test_parse_malformed_dots():
    for bad in ("", ".", ".a", "a.", "a..b"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_parse_malformed_brackets():
    for bad in ("a[", "a[]", "a[1", "a]", "a[[0]]", "a]0["):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_parse_malformed_index_contents():
    for bad in ("a[x]", "a[ 1]", "a[+1]", "a[1.5]", "a[--1]"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_parse_malformed_segment_order():
    for bad in ("a[1]b", "a.[0]", "[0]a", "a.b[0]c"):
        with pytest.raises(ValueError):
            parse_path(bad)


def test_get_nested_values():
    data = sample()
    assert get_path(data, "users[0].address.city") == "London"
    assert get_path(data, "users[1].name") == "Linus"
    assert get_path(data, "matrix[1][0]") == 3
    assert get_path(data, "meta") is data["meta"]


def test_get_negative_index_and_numeric_key():
    data = sample()
    assert get_path(data, "users[-1].name") == "Linus"
    assert get_path(data, "users[0].tags[-1]") == "ops"
    assert get_path(data, "meta.0") == "zero-key"
    assert get_path(data, "meta.with space") is True


def test_get_root_list():
    assert get_path([[5, 6], {"x": 7}], "[1].x") == 7
    assert get_path([[5, 6]], "[0][1]") == 6


def test_get_missing_key_raises_key_error():
    with pytest.raises(KeyError):
        get_path(sample(), "users[0].address.zip")


def test_get_index_out_of_range_raises_index_error():
    data = sample()
    with pytest.raises(IndexError):
        get_path(data, "users[2]")
    with pytest.raises(IndexError):
        get_path(data, "users[-3]")
    with pytest.raises(IndexError):
        get_path(data, "users[1].tags[0]")


def test_get_type_mismatch_raises_type_error():
    data = sample()
    for path in ("users.name", "meta[0]", "users[0].name[0]", "users[1].address.city", "meta.count.x"):
        with pytest.raises(TypeError):
            get_path(data, path)


def test_get_default_is_returned_for_all_lookup_errors():
    data = sample()
    assert get_path(data, "nope", "d") == "d"
    assert get_path(data, "users[9].name", default=0) == 0
    assert get_path(data, "users.name", default=[]) == []
    assert get_path(data, "users[1].address.city", None) is None


def test_get_default_does_not_hide_found_falsy_values():
    data = {"a": 0, "b": None, "c": []}
    assert get_path(data, "a", default=99) == 0
    assert get_path(data, "b", default=99) is None
    assert get_path(data, "c", default=99) == []


def test_get_malformed_path_raises_even_with_default():
    with pytest.raises(ValueError):
        get_path(sample(), "users[x]", default=None)


def test_set_replaces_existing_values():
    data = sample()
    assert set_path(data, "users[0].address.city", "Paris") is None
    set_path(data, "matrix[-1][-1]", 40)
    set_path(data, "meta.count", 3)
    assert data["users"][0]["address"]["city"] == "Paris"
    assert data["matrix"] == [[1, 2], [3, 40]]
    assert data["meta"]["count"] == 3


def test_set_creates_intermediate_dicts_and_lists():
    data = {}
    set_path(data, "a.b[0].c", 1)
    assert data == {"a": {"b": [{"c": 1}]}}
    set_path(data, "a.b[1][0]", "x")
    assert data == {"a": {"b": [{"c": 1}, ["x"]]}}


def test_set_appends_at_list_end():
    data = {"items": [1, 2]}
    set_path(data, "items[2]", 3)
    assert data["items"] == [1, 2, 3]


def test_set_index_out_of_range_raises_index_error():
    for path in ("items[3]", "items[-3]"):
        data = {"items": [1, 2]}
        with pytest.raises(IndexError):
            set_path(data, path, 0)


def test_set_type_mismatch_raises_type_error():
    with pytest.raises(TypeError):
        set_path({"items": [1, 2]}, "items.first", 0)
    with pytest.raises(TypeError):
        set_path({"name": "Ada"}, "name.first", 0)
    with pytest.raises(TypeError):
        set_path({"a": {"b": 1}}, "a[0]", 0)


def test_set_malformed_path_raises_value_error():
    data = {}
    with pytest.raises(ValueError):
        set_path(data, "a..b", 1)
    assert data == {}
