"""Tokens and cost a command agent reports (reliabench.agents.usage): the usage file and aider's lines.

That a sandboxed agent can write the file through ``RELIABENCH_USAGE_FILE`` is checked end to
end in tests/test_agents_command.py.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys

import pytest

from reliabench.agents.usage import (
    USAGE_PARSERS,
    UsageReport,
    open_usage_channel,
    parse_aider_usage,
    parse_usage_json,
)


def test_usage_file_fields() -> None:
    assert parse_usage_json('{"tokens_in": 12000, "tokens_out": 800, "usd": 0.0123}') == UsageReport(
        12000, 800, 12800, 0.0123, "usage_file")
    assert parse_usage_json('{"tokens": 5}') == UsageReport(None, None, 5, None)
    assert parse_usage_json('{"tokens_in": 3}') == UsageReport(3, None, None, None)  # no total from half
    assert parse_usage_json('{"tokens_in": 3, "tokens_out": 4, "tokens": 100}').tokens == 100  # stated wins
    assert parse_usage_json("{}") == UsageReport()
    assert parse_usage_json('{"tokens_in": 2.9}').tokens_in == 2  # counts are whole


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"usd": -1}', "usd: expected a finite number >= 0, got -1"),
        ('{"tokens_in": "10"}', "tokens_in: expected a token count from 0 to 2**63-1, got '10'"),
        ('{"tokens_out": true}', "tokens_out: expected a token count from 0 to 2**63-1, got True"),
        ('{"usd": NaN}', "usd: expected a finite number >= 0, got nan"),
        ('{"tokens": Infinity}', "tokens: expected a token count from 0 to 2**63-1, got inf"),
        # issue 20, finding 7: finite, yet no record can hold them
        ('{"tokens_in": 1e300}', "tokens_in: expected a token count from 0 to 2**63-1, got 1e+300"),
        ('{"tokens_out": 1180591620717411303424}',
         "tokens_out: expected a token count from 0 to 2**63-1, got 1180591620717411303424"),
        ('{"tokens_in": 9223372036854775807, "tokens_out": 1}',
         "tokens: tokens_in + tokens_out: expected a token count from 0 to 2**63-1, got "
         "9223372036854775808"),
        ('{"usd": 1' + "0" * 400 + '}', "usd: expected a finite number >= 0, got an integer of"),
        ('{"tokens": 1' + "0" * 5000 + '}', "not JSON"),
    ],
)
def test_usage_file_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        parse_usage_json(text)


def test_aider_lines_are_summed_and_the_last_session_cost_kept() -> None:
    out = ("Tokens: 2.1k sent, 245 received. Cost: $0.0012 message, $0.0012 session.\n"
           "noise\n"
           "Tokens: 900 sent, 1.2k cache write, 3k cache hit, 50 received. Cost: $0.0003 message, "
           "$0.0015 session.\n")
    r = parse_aider_usage(out)
    assert r == UsageReport(3000, 295, 3295, 0.0015, "aider", approx=True)
    exact = parse_aider_usage("Tokens: 900 sent, 50 received.\n")
    assert exact == UsageReport(900, 50, 950, None, "aider", approx=False)
    cost_only = parse_aider_usage("Cost: $0.5 message, $1.25 session.\n")
    assert cost_only == UsageReport(None, None, None, 1.25, "aider")
    assert parse_aider_usage("no usage here") is None
    assert USAGE_PARSERS["aider"] is parse_aider_usage


def test_channel_reads_what_a_child_wrote_through_dev_fd() -> None:
    with open_usage_channel() as ch:
        assert ch.env_value == f"/dev/fd/{ch.fd}"
        assert os.get_inheritable(ch.fd)
        assert stat.S_IMODE(ch.path.stat().st_mode) == 0o666
        assert stat.S_IMODE(ch.path.parent.stat().st_mode) == 0o700  # no other uid reaches it by path
        assert ch.read() == (None, None)  # nothing written
        code = "import json, sys; json.dump({'tokens_in': 7, 'usd': 0.5}, open(sys.argv[1], 'w'))"
        subprocess.run([sys.executable, "-c", code, ch.env_value], pass_fds=(ch.fd,), check=True)
        assert ch.read() == (UsageReport(7, None, None, 0.5), None)
        path = ch.path
    assert not path.exists() and not path.parent.exists()  # removed afterwards
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(ch.fd)


def test_channel_ignores_bad_or_huge_files_and_says_why() -> None:
    with open_usage_channel() as ch:
        ch.path.write_text("[]", encoding="utf-8")
        assert ch.read() == (None, "usage file ignored: expected a JSON object, got list")
        ch.path.write_text('{"usd": 1}' + " " * (1 << 16), encoding="utf-8")
        assert ch.read() == (None, "usage file ignored: larger than 65536 bytes")
        ch.path.write_text("  \n", encoding="utf-8")
        assert ch.read() == (None, None)
        ch.path.unlink()
        report, problem = ch.read()
        assert report is None and problem is not None and problem.startswith("usage file unreadable:")


def test_report_defaults() -> None:
    r = UsageReport()
    assert (r.tokens_in, r.tokens_out, r.tokens, r.usd, r.source, r.approx) == (
        None, None, None, None, "usage_file", False)
    assert parse_usage_json('{"usd": 0}').usd == 0.0  # zero is a cost, not a missing one


@pytest.mark.parametrize("line", [
    "Tokens: 1.2.3 sent, 5 received.",  # used to raise ValueError (float('1.2.3'))
    "Tokens: " + "9" * 400 + " sent, 5 received.",  # used to raise OverflowError (int(inf))
    "Cost: $1.2.3 message, $4..5 session.",
])
def test_aider_parser_never_raises_on_the_agents_output(line: str) -> None:
    """Issue 20 (own attack class): the agent's output cannot crash its own usage parser."""
    r = parse_aider_usage(line + "\n")
    assert r is None or r.tokens is None or r.tokens < 2**63


def test_aider_sums_past_64_bits_are_dropped() -> None:
    big = "Tokens: " + "9" * 19 + " sent, 1 received.\n"
    r = parse_aider_usage(big * 2)
    assert r is not None and (r.tokens_in, r.tokens_out, r.tokens) == (None, 2, None)
    assert sorted(r.dropped) == ["tokens", "tokens_in"]
