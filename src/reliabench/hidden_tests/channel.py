"""The outcome channel as the parent reads it: every line signed, in sequence, checked.

The rules a line must follow are in :mod:`reliabench.hidden_tests.fresh`'s docstring. Both test
paths use this parser: fresh sandboxed processes and warm test workers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field

from reliabench.hidden_tests.skips import REPORTED_OUTCOMES, ReportedOutcome

__all__ = ["Channel", "parse_channel"]


@dataclass
class Channel:
    """The parent's view of the outcome stream of one run."""

    started: bool = False
    ended: bool = False
    collected: list[tuple[str, bool]] | None = None
    collect_errors: list[str] = field(default_factory=list)
    tests: dict[str, tuple[ReportedOutcome, bool]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    poisoned: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    end_tests: list[tuple[str, str]] | None = None
    tamper: list[str] = field(default_factory=list)
    next_seq: int = 1

    def forge(self, problem: str, name: str | None = None) -> None:
        """Note a forged or unreadable line (and poison the test it names, if any)."""
        if len(self.problems) < 20:
            self.problems.append(problem)
        if name is not None:
            self.poisoned.add(name)


def parse_channel(data: bytes, key: bytes, expected: set[str] | None) -> Channel:
    """Check every line of the outcome stream (rules: :mod:`reliabench.hidden_tests.fresh`).

    Never raises: the stream comes from a process that ran the agent's code, so a line that
    cannot even be checked (deep nesting, huge numbers, odd types) is a forged line like any
    other, and the rollout goes on with it poisoned.
    """
    ch = Channel()
    try:
        lines = data.splitlines()
    except Exception:  # pragma: no cover - bytes.splitlines does not fail
        ch.forge("unreadable outcome stream")
        return ch
    for raw in lines:
        if not raw.strip():
            continue
        try:
            _take_line(ch, raw, key, expected)
        except Exception as exc:
            ch.forge(f"outcome line that could not be checked ({type(exc).__name__}): {raw[:80]!r}")
    try:
        _check_end(ch, expected)
    except Exception as exc:
        ch.forge(f"end-of-session line that could not be checked ({type(exc).__name__})")
        ch.poisoned.update(ch.tests)
    return ch


def _decode_line(raw: bytes) -> tuple[dict[str, object], object, str] | None:
    """``(object without mac, mac, canonical text)``, or None for a line that is not one."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError, TypeError):  # JSONDecodeError, int digits, depth
        return None
    if not isinstance(obj, dict) or "mac" not in obj:
        return None
    mac = obj.pop("mac")
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError, TypeError):
        return None
    return obj, mac, text


def _take_line(ch: Channel, raw: bytes, key: bytes, expected: set[str] | None) -> None:
    decoded = _decode_line(raw)
    if decoded is None:
        ch.forge(f"unreadable outcome line: {raw[:80]!r}")
        return
    obj, mac, text = decoded
    good = hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    # compare_digest raises TypeError on a non-ASCII str: check the type and alphabet first
    if not (isinstance(mac, str) and mac.isascii() and hmac.compare_digest(mac, good)):
        who = obj.get("name")
        label = who[:200] if isinstance(who, str) else "no test"
        ch.forge(f"outcome line with a bad signature (for {label})")
        return
    seq = obj.get("seq")
    event = obj.get("event")
    raw_name = obj.get("name")
    name = raw_name if isinstance(raw_name, str) else None
    if seq != ch.next_seq or isinstance(seq, bool):
        ch.forge(f"outcome line out of sequence (seq {seq!r:.40}, expected {ch.next_seq})", name)
    ch.next_seq = (seq + 1) if isinstance(seq, int) and not isinstance(seq, bool) else ch.next_seq + 1
    if ch.ended:
        ch.forge(f"outcome line after the end of the session ({event!r:.40})", name)
        return
    if event == "start":
        if ch.started:
            ch.forge("second start line")
        ch.started = True
    elif not ch.started:
        ch.forge(f"outcome line before the start line ({event!r:.40})", name)
    elif event == "collected":
        tests = _pairs(obj.get("tests"))
        if ch.collected is not None or tests is None:
            ch.forge("second or malformed collection line")
        else:
            ch.collected = [(a, bool(b)) for a, b in tests]
    elif event == "collect_error":
        ch.collect_errors.append(str(name))
    elif event == "tamper":
        what = obj.get("what")
        if len(ch.tamper) < 20:
            ch.tamper.append(what[:200] if isinstance(what, str) else repr(what)[:200])
    elif event == "test":
        outcome = obj.get("outcome")
        if name is None or not isinstance(outcome, str) or outcome not in REPORTED_OUTCOMES:
            ch.forge(f"malformed test line for {name!r:.200}", name)
        elif expected is not None and name not in expected:
            ch.forge(f"outcome for a test that is not expected: {name:.200}")
        elif name in ch.tests:
            ch.forge(f"two outcome lines for one test: {name:.200}", name)
        else:
            ch.tests[name] = (outcome, obj.get("security") is True)
            ch.order.append(name)
    elif event == "end":
        ch.ended = True
        tests = _pairs(obj.get("tests"))
        if tests is not None:
            ch.end_tests = [(a, str(b)) for a, b in tests]
    else:
        ch.forge(f"outcome line with an unknown event {event!r:.40}")


def _pairs(value: object) -> list[tuple[str, object]] | None:
    """A JSON list of ``[str, x]`` pairs, or None when it is anything else."""
    if not isinstance(value, list):
        return None
    out: list[tuple[str, object]] = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
            return None
        out.append((item[0], item[1]))
    return out


def _check_end(ch: Channel, expected: set[str] | None) -> None:
    if ch.ended and ch.end_tests is not None:
        # the plugin's own list of what it wrote must match what was read, line for line
        claimed = dict(ch.end_tests)
        for name, (outcome, _sec) in ch.tests.items():
            if claimed.get(name) != outcome:
                ch.forge(f"outcome line the plugin did not write: {name:.200}", name)
        for name in claimed:
            if name not in ch.tests and (expected is None or name in expected):
                ch.forge(f"the plugin wrote an outcome that was not read: {name:.200}", name)
