"""Rollout records: validation, success rule, JSONL round trip, error messages."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from reliabench.errors import RecordError
from reliabench.records import (
    BUILTIN_ISOLATIONS,
    FAILING_OUTCOMES,
    OUTCOMES,
    ROLLOUT_STATUSES,
    STATUSES,
    TEST_OUTCOMES,
    Cost,
    Finding,
    Rollout,
    ScanError,
    TestOutcome,
    parse_status,
    read_jsonl,
    rollout_from_dict,
    rollout_to_dict,
    write_jsonl,
)

GOLDEN_V1 = Path(__file__).parent / "golden" / "records_v1.jsonl"
GOLDEN_V2 = Path(__file__).parent / "golden" / "records_v2.jsonl"


def write_lines(tmp_path: Path, *objs: object, raw: str | None = None) -> Path:
    p = tmp_path / "r.jsonl"
    text = raw if raw is not None else "".join(json.dumps(o) + "\n" for o in objs)
    p.write_text(text)
    return p


def base(**kw: object) -> dict[str, object]:
    d: dict[str, object] = {"task_id": "t1", "agent": "a", "rollout": 0, "passed": True}
    d.update(kw)
    return d


# ------------------------------------------------------------------ success rule


def test_passes_requires_every_functional_test_and_at_least_one() -> None:
    ok = Rollout("t", "a", 0, tests=(TestOutcome("x", "passed"), TestOutcome("y", "skipped")))
    assert ok.passes
    one_fail = Rollout("t", "a", 0, tests=(TestOutcome("x", "passed"), TestOutcome("y", "failed")))
    assert not one_fail.passes
    error = Rollout("t", "a", 0, tests=(TestOutcome("x", "error"),))
    assert not error.passes
    only_skipped = Rollout("t", "a", 0, tests=(TestOutcome("x", "skipped"),))
    assert not only_skipped.passes
    empty = Rollout("t", "a", 0, tests=())
    assert not empty.passes


def test_security_tests_do_not_decide_functional_success() -> None:
    r = Rollout("t", "a", 0, tests=(TestOutcome("f", "passed"), TestOutcome("s", "failed", security=True)))
    assert r.passes
    assert not r.security_tests_pass
    assert r.n_tests == 1


def test_status_other_than_completed_never_passes() -> None:
    for status in ("timeout", "agent_error", "infra_error"):
        assert not Rollout("t", "a", 0, verdict=True, status=status).passes


def test_counts_and_verdict() -> None:
    assert Rollout("t", "a", 0, tests_total=10, tests_passed=10).passes
    assert not Rollout("t", "a", 0, tests_total=10, tests_passed=9).passes
    assert not Rollout("t", "a", 0, tests_total=0, tests_passed=0).passes
    # a harness verdict wins over counts (e.g. SWE-bench's "resolved")
    assert not Rollout("t", "a", 0, tests_total=3, tests_passed=3, verdict=False).passes


# ---------------------------------------------------------------- round trip


def full_record() -> Rollout:
    return Rollout(
        task_id="t1", agent="agent-x", rollout=3,
        tests=(TestOutcome("test_a", "passed"), TestOutcome("test_b", "failed"),
               TestOutcome("test_sec", "passed", security=True)),
        verdict=None, status="completed",
        findings=(Finding("bandit", "B602", "high", "high", 78, "m.py", 4, "shell=True"),),
        scan_errors=(ScanError("bandit", "bad.py", "syntax error"),),
        cost=Cost(tokens=1200, usd=0.01, seconds=3.5), isolation="bubblewrap",
        tamper_suspected=True, simulated=True, meta={"seed": 7},
    )


def test_round_trip_dict_and_file(tmp_path: Path) -> None:
    r = full_record()
    assert rollout_from_dict(rollout_to_dict(r)) == r
    p = tmp_path / "out.jsonl"
    assert write_jsonl([r, Rollout("t2", "a", 0, verdict=False)], p) == 2
    back = read_jsonl(p)
    assert back[0] == r
    assert back[1].verdict is False


def test_golden_v1_file_still_reads() -> None:
    records = read_jsonl(GOLDEN_V1)
    assert [r.key for r in records] == [("t1", "a", 0), ("t1", "a", 1), ("t2", "a", 0)]
    assert records[0].passes and not records[1].passes
    assert records[2].findings[0].cwe == 78
    # re-encoding the golden records gives the same objects
    assert [rollout_from_dict(rollout_to_dict(r)) for r in records] == records


def test_golden_v2_file_reads_and_round_trips() -> None:
    records = read_jsonl(GOLDEN_V2)
    c = records[0].cost
    assert c == Cost(tokens=46, usd=0.0012, seconds=3.25, tokens_in=40, tokens_out=6,
                     agent_s=2.5, test_s=0.75)
    assert records[1].cost == Cost(seconds=0.01, agent_s=0.01)  # tests never ran
    assert records[1].meta["infra_reason"] == "missing_api_key"
    assert records[2].cost == Cost(tokens=10, seconds=1.5)  # a version-1 line in the same file
    for r in records:
        d = rollout_to_dict(r)
        assert d["schema_version"] == 2  # written as the current version
        assert rollout_from_dict(d) == r


def test_v1_record_upgrades_on_write() -> None:
    (r,) = read_jsonl(GOLDEN_V1)[1:2]
    d = rollout_to_dict(r)
    assert d["schema_version"] == 2
    assert d["cost"] == {"tokens": 10, "seconds": 1.5}  # no invented per-phase figures


@pytest.mark.parametrize("key", ["tokens_in", "tokens_out", "agent_s", "test_s", "usd"])
def test_negative_cost_rejected(key: str) -> None:
    with pytest.raises(RecordError, match=rf"cost\.{key}: expected a number >= 0, got -1"):
        rollout_from_dict({"task_id": "t", "agent": "a", "rollout": 0, "passed": True,
                           "cost": {key: -1}})


def test_write_is_atomic_on_error(tmp_path: Path) -> None:
    p = tmp_path / "out.jsonl"
    p.write_text("old\n")

    def boom() -> object:
        yield Rollout("t", "a", 0, verdict=True)
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_jsonl(boom(), p)  # type: ignore[arg-type]
    assert p.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [p]


def test_stream_read_and_write() -> None:
    buf = io.StringIO()
    write_jsonl([Rollout("t", "a", 0, verdict=True)], buf)
    buf.seek(0)
    assert read_jsonl(buf)[0].passes


# ---------------------------------------------------------------- error messages


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"r.jsonl:1: malformed JSON"),
        (json.dumps({"agent": "a", "rollout": 0, "passed": True}), r"r.jsonl:1: task_id: missing required key"),
        (json.dumps({"task_id": "t", "rollout": 0, "passed": True}), r"r.jsonl:1: agent: missing required key"),
        (json.dumps({"task_id": "t", "agent": "a", "passed": True}), r"r.jsonl:1: rollout: missing required key"),
        (json.dumps(base(rollout=-1)), r"rollout: expected an integer >= 0, got -1"),
        (json.dumps(base(rollout="0")), r"rollout: expected an integer >= 0, got '0'"),
        (json.dumps(base(passed=None)), r"tests: no outcome"),
        (json.dumps(base(passed="yes")), r"passed: expected true, false or null, got 'yes'"),
        (json.dumps(base(passed=None, tests_total=3, tests_passed=4)),
         r"tests_passed: tests_passed=4 exceeds tests_total=3 \(c > n\)"),
        (json.dumps(base(passed=None, tests_total=3)), r"tests_passed: tests_total and tests_passed go together"),
        (json.dumps(base(tests=[{"name": "x", "outcome": "ok"}])), r"tests\[0\]\.outcome: expected one of"),
        (json.dumps(base(tests=[{"name": "x", "outcome": "passed"}, {"name": "x", "outcome": "passed"}])),
         r"tests\[1\]\.name: duplicate test name 'x'"),
        (json.dumps(base(findings=[{"tool": "b", "rule_id": "r", "severity": "severe"}])),
         r"findings\[0\]\.severity: expected one of info, low"),
        (json.dumps(base(schema_version=9)), r"schema_version: unsupported version 9"),
        ("[1, 2]", r"record: expected a JSON object, got list"),
        (json.dumps(base(task_id="")), r"task_id: expected a non-empty string"),
        (json.dumps(base(status="complete")),
         r"r.jsonl:1: status: expected one of completed, agent_error, timeout, infra_error, test_error, "
         r"no_change, got 'complete'"),
        (json.dumps(base(status=["completed"])), r"status: expected one of .*, got \['completed'\]"),
        (json.dumps(base(status="")), r"status: expected one of .*, got ''"),
        (json.dumps(base(tests=[{"name": "x", "outcome": ["passed"]}])), r"tests\[0\]\.outcome: expected one of"),
    ],
)
def test_one_error_per_message(tmp_path: Path, line: str, message: str) -> None:
    p = write_lines(tmp_path, raw=line + "\n")
    with pytest.raises(RecordError, match=message) as info:
        read_jsonl(p)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    p = write_lines(tmp_path, base(), base(rollout=1), base())
    with pytest.raises(RecordError, match=r"r.jsonl:3: rollout: duplicate \(task_id, agent, rollout\)"
                                          r" = \('t1', 'a', 0\), first seen on line 1"):
        read_jsonl(p)


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    p = write_lines(tmp_path, raw=json.dumps(base()) + "\n\n" + "{bad\n")
    with pytest.raises(RecordError, match=r"r.jsonl:3: malformed JSON"):
        read_jsonl(p)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"no such file"):
        read_jsonl(tmp_path / "nope.jsonl")
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(RecordError, match=r"not UTF-8"):
        read_jsonl(bad)
    with pytest.raises(RecordError, match=r"is a directory"):
        read_jsonl(tmp_path)


# ---------------------------------------------------------------- the closed vocabularies


def test_vocabularies_come_from_the_literal_types() -> None:
    # the tuples keep the documented order; the frozensets hold the same values
    assert STATUSES == ("completed", "agent_error", "timeout", "infra_error", "test_error", "no_change")
    assert frozenset(STATUSES) == ROLLOUT_STATUSES
    assert OUTCOMES == ("passed", "failed", "error", "skipped")
    assert frozenset(OUTCOMES) == TEST_OUTCOMES
    assert {"failed", "error"} == FAILING_OUTCOMES and FAILING_OUTCOMES <= TEST_OUTCOMES
    assert {"bubblewrap", "namespaces", "warm", "none"} == BUILTIN_ISOLATIONS


def test_schema_lists_the_same_statuses_and_outcomes() -> None:
    schema = json.loads((Path(__file__).parents[1] / "docs" / "rollout.schema.json").read_text())
    assert tuple(schema["properties"]["status"]["enum"]) == STATUSES
    assert tuple(schema["properties"]["tests"]["items"]["properties"]["outcome"]["enum"]) == OUTCOMES


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_round_trips(status: str) -> None:
    r = rollout_from_dict(base(status=status))
    assert r.status == status
    assert rollout_from_dict(rollout_to_dict(r)) == r
    assert parse_status(status) == status


def test_failing_means_failed_or_error() -> None:
    assert [TestOutcome("t", o).failing for o in OUTCOMES] == [False, True, True, False]
    # a skipped security test does not make the rollout insecure, a failed one does
    ok = Rollout("t", "a", 0, tests=(TestOutcome("f", "passed"), TestOutcome("s", "skipped", True)))
    bad = Rollout("t", "a", 0, tests=(TestOutcome("f", "passed"), TestOutcome("s", "error", True)))
    assert ok.security_tests_pass and not bad.security_tests_pass


def test_plugin_isolation_levels_stay_readable() -> None:
    # a third-party sandbox backend records its own name: isolation is an open string
    r = rollout_from_dict(base(isolation="podman"))
    assert r.isolation == "podman" and rollout_to_dict(r)["isolation"] == "podman"
