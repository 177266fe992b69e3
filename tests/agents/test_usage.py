"""Tokens and cost a command agent reports (reliabench.agents.usage): the usage file and aider's lines.

That a sandboxed agent can write the file through ``RELIABENCH_USAGE_FILE`` is checked end to
end in tests/agents/test_command.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reliabench.agents.usage import (
    USAGE_FILE,
    USAGE_PARSERS,
    UsageReport,
    parse_aider_usage,
    parse_usage_json,
    read_usage_file,
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


def test_the_usage_file_is_read_from_the_channel_folder(tmp_path: Path) -> None:
    assert read_usage_file(tmp_path) == (None, None)  # nothing written
    code = "import json, sys; json.dump({'tokens_in': 7, 'usd': 0.5}, open(sys.argv[1], 'w'))"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / USAGE_FILE)], check=True)
    assert read_usage_file(tmp_path) == (UsageReport(7, None, None, 0.5), None)


def test_bad_or_huge_usage_files_are_ignored_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / USAGE_FILE
    path.write_text("[]", encoding="utf-8")
    assert read_usage_file(tmp_path) == (None, "usage file ignored: expected a JSON object, got list")
    path.write_text('{"usd": 1}' + " " * (1 << 16), encoding="utf-8")
    assert read_usage_file(tmp_path) == (None, "usage file ignored: larger than 65536 bytes")
    path.write_text("  \n", encoding="utf-8")
    assert read_usage_file(tmp_path) == (None, None)


def test_what_an_agent_plants_as_its_usage_file_is_never_followed(tmp_path: Path) -> None:
    """The channel folder is the agent's: a link, a FIFO, a folder or a huge file there is ignored."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"tokens_in": 123}', encoding="utf-8")
    chan = tmp_path / "chan"
    chan.mkdir()
    os.symlink(secret, chan / USAGE_FILE)
    report, problem = read_usage_file(chan)
    assert report is None and problem is not None and "not a regular file (link" in problem
    os.unlink(chan / USAGE_FILE)
    os.mkfifo(chan / USAGE_FILE)  # a plain open would block the harness
    report, problem = read_usage_file(chan)
    assert report is None and problem is not None and "special" in problem
    os.unlink(chan / USAGE_FILE)
    (chan / USAGE_FILE).mkdir()
    assert read_usage_file(chan)[0] is None
    os.rmdir(chan / USAGE_FILE)
    with open(chan / USAGE_FILE, "wb") as fh:  # a sparse 8 GiB file: only 64 KiB + 1 are read
        fh.truncate(8 << 30)
    assert read_usage_file(chan) == (None, "usage file ignored: larger than 65536 bytes")


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
