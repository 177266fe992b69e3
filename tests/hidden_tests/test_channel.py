"""The outcome channel parser: whatever the tested code writes, nothing escapes.

``parse_channel`` reads bytes written by a process that ran the agent's code, so it must never
raise, and junk mixed into a genuine stream must never ADD a passing test. Property tests with
Hypothesis, plus the cases a hostile-input review found (non-ASCII MAC, deep nesting, huge
integers) and their neighbours.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliabench.hidden_tests.channel import parse_channel

KEY = b"k" * 64
NAMES = ["t.py::a", "t.py::b", "t.py::c"]


def signed(seq: int, key: bytes = KEY, **payload: Any) -> bytes:
    """A line exactly as the plugin writes it."""
    body = dict(payload, seq=seq)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return (text[:-1] + f',"mac":"{mac}"' + "}\n").encode()


def genuine(outcomes: dict[str, str]) -> list[bytes]:
    lines = [signed(1, event="start", pid=1)]
    seq = 2
    for name, outcome in outcomes.items():
        lines.append(signed(seq, event="test", name=name, outcome=outcome, security=False))
        seq += 1
    lines.append(signed(seq, event="end", exitstatus=0, tests=[[n, o] for n, o in outcomes.items()]))
    return lines


def trusted_passes(data: bytes) -> set[str]:
    ch = parse_channel(data, KEY, set(NAMES))
    return {n for n, (o, _s) in ch.tests.items() if o == "passed" and n not in ch.poisoned}


# ------------------------------------------------------------------------------------------
# the cases of the review, and their neighbours
# ------------------------------------------------------------------------------------------

HOSTILE_LINES = [
    pytest.param(b'{"seq":2,"event":"test","name":"t.py::a","outcome":"passed","mac":"\xc3\xa9"}\n',
                 id="non-ascii-mac"),
    pytest.param(b'{"seq":2,"mac":"\xff\xfe"}\n', id="non-utf8-mac"),
    pytest.param(('{"seq":2,"event":"test","mac":"' + "\u00e9" * 64 + '"}\n').encode(), id="mac-64-non-ascii"),
    pytest.param(b'{"mac":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", id="deep-array"),
    pytest.param(b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"\n", id="deep-object"),
    pytest.param(b'{"seq":' + b"9" * 5000 + b',"mac":"x"}\n', id="huge-int"),
    pytest.param(b'{"seq":1e999,"mac":"x"}\n', id="inf-float"),
    pytest.param(b'{"seq":NaN,"mac":null}\n', id="nan"),
    pytest.param(b'{"mac":{"a":1}}\n', id="mac-object"),
    pytest.param(b'["mac"]\n', id="array-line"),
    pytest.param(b'"just a string"\n', id="string-line"),
    pytest.param(b"\x00\x01\x02\xff\n", id="binary"),
    pytest.param(b'{"event":"test","name":"\\ud800","mac":"00"}\n', id="lone-surrogate"),
    pytest.param(b"{" * 10 + b"\n", id="unterminated"),
]


@pytest.mark.parametrize("line", HOSTILE_LINES)
def test_a_hostile_line_is_flagged_never_raised(line: bytes) -> None:
    clean = genuine({"t.py::a": "failed", "t.py::b": "passed"})
    data = b"".join([clean[0], line, *clean[1:]])
    ch = parse_channel(data, KEY, set(NAMES))
    assert ch.problems  # flagged
    assert trusted_passes(data) <= {"t.py::b"}  # never a new pass


def test_signed_but_malformed_lists_do_not_raise() -> None:
    # lines signed with the real key (a compromised plugin) but with odd shapes
    data = b"".join([
        signed(1, event="start", pid=1),
        signed(2, event="collected", tests=[1, [2], "x", [None, None, None]]),
        signed(3, event="test", name="t.py::a", outcome="passed", security=[1]),
        signed(4, event="end", exitstatus=0, tests=[[1, 2], "zz"]),
    ])
    ch = parse_channel(data, KEY, set(NAMES))
    assert ch.started and ch.ended
    assert any("malformed collection" in p for p in ch.problems)


def test_sequence_numbers_that_are_not_integers() -> None:
    data = b"".join([signed(1, event="start", pid=1),
                     signed(True, event="test", name="t.py::a", outcome="passed", security=False)])  # type: ignore[arg-type]
    ch = parse_channel(data, KEY, set(NAMES))
    assert "t.py::a" in ch.poisoned


# ------------------------------------------------------------------------------------------
# properties
# ------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    ch = parse_channel(data, KEY, set(NAMES))
    assert not ch.tests  # nothing unsigned is ever trusted


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["seq", "event", "name", "outcome", "mac", "tests"]),
                                json_values, max_size=6), max_size=8))
def test_arbitrary_json_objects_never_raise(objs: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(o).encode() + b"\n" for o in objs)
    ch = parse_channel(data, KEY, set(NAMES))
    assert not ch.tests


outcome_maps = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(["passed", "failed", "error"]),
                               min_size=1)


@settings(max_examples=200, deadline=None)
@given(outcome_maps, st.lists(st.tuples(st.integers(min_value=0, max_value=20),
                                        st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode())),
                              max_size=6))
def test_junk_never_adds_a_passing_test(outcomes: dict[str, str], junk: list[tuple[int, bytes]]) -> None:
    lines = genuine(outcomes)
    honest = {n for n, o in outcomes.items() if o == "passed"}
    assert trusted_passes(b"".join(lines)) == honest
    for pos, blob in junk:
        lines.insert(pos % (len(lines) + 1), blob.replace(b"\n", b" ") + b"\n")
    assert trusted_passes(b"".join(lines)) <= honest


@settings(max_examples=200, deadline=None)
@given(outcome_maps, st.data())
def test_dropping_or_replaying_genuine_lines_never_adds_a_pass(outcomes: dict[str, str],
                                                               data: st.DataObject) -> None:
    lines = genuine(outcomes)
    honest = {n for n, o in outcomes.items() if o == "passed"}
    edited = data.draw(st.lists(st.sampled_from(lines), max_size=len(lines) + 3))
    assert trusted_passes(b"".join(edited)) <= honest


@settings(max_examples=100, deadline=None)
@given(outcome_maps, st.integers(min_value=0, max_value=400))
def test_a_cut_stream_never_adds_a_pass(outcomes: dict[str, str], cut: int) -> None:
    data = b"".join(genuine(outcomes))
    honest = {n for n, o in outcomes.items() if o == "passed"}
    assert trusted_passes(data[:cut]) <= honest
