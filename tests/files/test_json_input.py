"""JSON from users and agents (reliabench.files.json_input): one exception type, bounded nesting."""

from __future__ import annotations

import json

import pytest

from reliabench.files.json_input import MAX_DEPTH, check_depth, loads


def test_valid_json_is_json_loads() -> None:
    text = '{"a": [1, 2.5, null, true], "b": "é"}'
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-8")) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 200_000 + "]" * 200_000, "nested too deeply to read"),
        ('{"a": ' * 200_000 + "1" + "}" * 200_000, "nested too deeply to read"),
        ("1" * 5000, "a value that cannot be read"),  # past CPython's int conversion limit
        (b'{"a": "\xff"}', "not UTF-8"),
    ],
    ids=["deep-array", "deep-object", "huge-int", "not-utf8"],
)
def test_every_failure_is_a_json_decode_error(text: str | bytes, message: str) -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        loads(text)
    assert info.value.msg.startswith(message)


def test_ordinary_syntax_errors_keep_their_position() -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        loads('{"a": 1,\n "b": }')
    assert (info.value.lineno, info.value.colno) == (2, 7)


def test_check_depth_counts_levels_of_lists_and_dicts() -> None:
    assert check_depth(1, 0) and check_depth("x" * 10, 0)
    assert check_depth([], 1) and not check_depth([], 0)
    assert check_depth({"a": [[1]]}, 3) and not check_depth({"a": [[1]]}, 2)
    assert check_depth((1, (2,)), 2) and not check_depth((1, (2,)), 1)
    nested: object = 0
    for _ in range(MAX_DEPTH):
        nested = [nested]
    assert check_depth(nested)
    assert not check_depth([nested])


def test_check_depth_is_iterative() -> None:
    deep: object = None
    for _ in range(100_000):  # deeper than the recursion limit
        deep = {"k": deep}
    assert not check_depth(deep)
    assert check_depth(deep, 100_000)
