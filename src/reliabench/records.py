"""The rollout record: one independent attempt of one agent on one task.

Every path into the numbers (the runner, the simulator, every importer) produces ``Rollout``
records; the analysis layer reads nothing else. A JSONL file holds one record per line.

Schema version 2 (``docs/rollout.schema.json``); version 1 records (the same without the
``cost`` keys ``tokens_in``, ``tokens_out``, ``agent_s``, ``test_s``) are read as they are::

    {"schema_version": 2,                      # optional on input, written on output
     "task_id": "str", "agent": "str", "rollout": 0,           # required
     # the outcome, one of:
     "tests": [{"name": "str", "outcome": "passed|failed|error|skipped", "security": false}],
     "tests_total": 10, "tests_passed": 9,
     "passed": true,                           # a verdict alone, or a harness's verdict
     # optional:
     "status": "completed|agent_error|timeout|infra_error|test_error|no_change",
     "findings": [{"tool", "rule_id", "severity", "confidence", "cwe", "path", "line",
                   "message", "test_file"}],             # test_file: only when true
     "scan_errors": [{"tool", "path", "message"}],
     "cost": {"tokens": 0, "usd": 0.0, "seconds": 0.0,          # all optional, >= 0
              "tokens_in": 0, "tokens_out": 0, "agent_s": 0.0, "test_s": 0.0},
     "isolation": "bubblewrap|namespaces|warm|none|<plugin>", "tamper_suspected": false,
     "simulated": false, "meta": {}}

When a rollout passes: it completed (``status == "completed"``) and either its ``passed``
verdict is true, or -- without a verdict -- every functional hidden test passed and at least one
ran. Skipped tests did not run: they neither fail nor count as passed, so a rollout whose every
functional test is skipped does not pass. In reliabench's own runs a test is ``skipped`` only
when its task declares the skip (``allowed_skips``); any other skip or xfail is recorded
``failed`` (:mod:`reliabench.hidden_tests.skips`). In imported records ``skipped`` is what the
foreign harness reported. Tests marked ``security`` are dynamic security tests and are judged
apart, by the security lens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal, TypeAlias, TypeVar, cast, get_args

from reliabench.errors import RecordError
from reliabench.files import json_input
from reliabench.files.jsonl import read_jsonl_lines
from reliabench.files.output import open_output

__all__ = [
    "BUILTIN_ISOLATIONS",
    "CONFIDENCE_LEVELS",
    "FAILING_OUTCOMES",
    "OUTCOMES",
    "READABLE_SCHEMA_VERSIONS",
    "ROLLOUT_STATUSES",
    "SCHEMA_VERSION",
    "SEVERITY_LEVELS",
    "STATUSES",
    "TEST_OUTCOMES",
    "BuiltinIsolation",
    "Confidence",
    "Cost",
    "Finding",
    "Isolation",
    "Rollout",
    "RolloutStatus",
    "ScanError",
    "Severity",
    "TestOutcome",
    "TestOutcomeStatus",
    "checked_cost",
    "cost_amount",
    "cost_count",
    "parse_status",
    "read_jsonl",
    "rollout_from_dict",
    "rollout_to_dict",
    "write_jsonl",
]

SCHEMA_VERSION: Final = 2
READABLE_SCHEMA_VERSIONS: Final = (1, 2)
"""Versions ``rollout_from_dict`` reads: 1 (no per-phase times, no tokens in/out) and 2."""
TestOutcomeStatus: TypeAlias = Literal["passed", "failed", "error", "skipped"]
"""The outcome of one hidden test (``TestOutcome.outcome``)."""
RolloutStatus: TypeAlias = Literal[
    "completed",  # the agent finished; the tests judged the rollout
    "agent_error",  # the agent crashed or refused: a failed attempt
    "timeout",  # the agent or its tests ran out of time: a failed attempt
    "infra_error",  # the harness failed (only the harness sets it): excluded from n, counted
    "test_error",  # the hidden tests could not judge this rollout's files: a failed attempt
    "no_change",  # the agent changed nothing: a failed attempt
]
"""The status of a rollout (``Rollout.status``); see docs/metrics.md for what each counts as."""
BuiltinIsolation: TypeAlias = Literal["bubblewrap", "namespaces", "warm", "none"]
"""The isolation levels reliabench's own sandboxes record, strongest first."""
Isolation: TypeAlias = str
"""An isolation level: a :data:`BuiltinIsolation`, or the name of a sandbox backend plugin
(``reliabench.sandboxes`` entry points may add levels reliabench does not know, e.g.
``podman``); so it stays an open string. Compare it with :data:`BUILTIN_ISOLATIONS` members."""
Severity: TypeAlias = Literal["info", "low", "medium", "high", "critical"]
"""A finding's severity, in increasing order."""
Confidence: TypeAlias = Literal["low", "medium", "high"]
"""A finding's confidence, in increasing order."""

OUTCOMES: Final[tuple[TestOutcomeStatus, ...]] = get_args(TestOutcomeStatus)
"""The test outcomes in their documented order."""
TEST_OUTCOMES: Final[frozenset[TestOutcomeStatus]] = frozenset(OUTCOMES)
FAILING_OUTCOMES: Final[frozenset[TestOutcomeStatus]] = frozenset({"failed", "error"})
"""Outcomes of a test that ran and did not pass (:attr:`TestOutcome.failing`)."""
STATUSES: Final[tuple[RolloutStatus, ...]] = get_args(RolloutStatus)
"""The rollout statuses in their documented order."""
ROLLOUT_STATUSES: Final[frozenset[RolloutStatus]] = frozenset(STATUSES)
BUILTIN_ISOLATIONS: Final[frozenset[BuiltinIsolation]] = frozenset(get_args(BuiltinIsolation))
SEVERITY_LEVELS: Final[tuple[Severity, ...]] = get_args(Severity)
CONFIDENCE_LEVELS: Final[tuple[Confidence, ...]] = get_args(Confidence)
_INT64: Final = 2**63  # counts, token counts and line numbers must fit a signed 64-bit integer
_FLOAT_MAX: Final = 1.7976931348623157e308
_COST_KEYS: Final = ("tokens", "usd", "seconds", "tokens_in", "tokens_out", "agent_s", "test_s")
_COUNT_KEYS: Final = ("tokens", "tokens_in", "tokens_out")
_AMOUNT_KEYS: Final = ("usd", "seconds", "agent_s", "test_s")


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """The outcome of one hidden test in one rollout.

    Attributes:
        name: The test's id (for pytest: ``file::test[param]``).
        outcome: ``passed``, ``failed``, ``error`` or ``skipped``.
        security: True for a dynamic security test (``@pytest.mark.security``).
    """

    __test__ = False  # not a pytest test class

    name: str
    outcome: TestOutcomeStatus
    security: bool = False

    @property
    def failing(self) -> bool:
        """The test ran and did not pass (``failed`` or ``error``; ``skipped`` is not failing)."""
        return self.outcome in FAILING_OUTCOMES


@dataclass(frozen=True, slots=True)
class Finding:
    """One insecure pattern found by a scanner in code the agent wrote.

    ``severity`` is on the ordinal scale ``info < low < medium < high < critical`` and
    ``confidence`` on ``low < medium < high``; each scanner documents how its own levels map.
    ``test_file`` marks a finding in a file named like test code (``tests/``, ``test_*.py``,
    ``conftest.py``, see ``reliabench.scanners.changes.is_test_path``): the agent wrote it,
    so it counts like any other; reports may show it apart. Written to records only when
    true (records without it read as False).
    """

    tool: str
    rule_id: str
    severity: Severity
    confidence: Confidence = "medium"
    cwe: int | None = None
    path: str = ""
    line: int | None = None
    message: str = ""
    test_file: bool = False


@dataclass(frozen=True, slots=True)
class ScanError:
    """A file a scanner could not read: never treated as clean."""

    tool: str
    path: str
    message: str


@dataclass(frozen=True, slots=True)
class Cost:
    """What a rollout cost; every part is optional.

    Attributes:
        tokens: Tokens used in all (``tokens_in + tokens_out`` when both are known).
        usd: Cost in US dollars, as reported by the agent or computed from its prices.
        seconds: Wall time of the whole rollout (agent phase + test phase).
        tokens_in: Prompt (input) tokens (schema version 2).
        tokens_out: Completion (output) tokens (schema version 2).
        agent_s: Wall time of the agent phase (schema version 2).
        test_s: Wall time of the hidden tests (schema version 2; None when they did not run).
    """

    tokens: int | None = None
    usd: float | None = None
    seconds: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    agent_s: float | None = None
    test_s: float | None = None


def cost_count(value: object) -> int:
    """``value`` as a token count the record reader accepts: an integer from 0 to 2**63-1.

    A float is accepted when it is finite (and truncated, as the reader does); a bool, a
    string, NaN, an infinity, a negative number or one of 2**63 or more is not.

    Raises:
        ValueError: saying what ``value`` is and what was expected.

    Example:
        >>> cost_count(12), cost_count(3.0)
        (12, 3)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a token count from 0 to 2**63-1, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a token count from 0 to 2**63-1, got {_show(value)}")
    if not 0 <= value < _INT64:
        raise ValueError(f"expected a token count from 0 to 2**63-1, got {_show(value)}")
    return int(value)


def cost_amount(value: object) -> float:
    """``value`` as an amount (dollars, seconds) the reader accepts: a finite float >= 0.

    Raises:
        ValueError: saying what ``value`` is and what was expected.

    Example:
        >>> cost_amount(2)
        2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a finite number >= 0, got {_show(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer past the largest float
        raise ValueError(f"expected a finite number >= 0, got {_show(value)}") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"expected a finite number >= 0, got {_show(value)}")
    return number


def checked_cost(cost: Cost) -> tuple[Cost, dict[str, str]]:
    """``cost`` with every part the record reader would refuse dropped, and why each was.

    The rule for every number an agent reports (its tokens and dollars), applied where a
    rollout's record is made (:class:`reliabench.run.draft.RolloutDraft`): a part that is not
    in the range :func:`rollout_from_dict` reads (:func:`cost_count`, :func:`cost_amount`) is
    dropped (None), never clamped -- a clamped number would be a made-up one -- and the
    reason is returned so that the caller can keep it in ``meta``. What is kept is the
    reader's own type (``int`` counts, ``float`` amounts), so the record reads back equal.

    Example:
        >>> kept, dropped = checked_cost(Cost(tokens=10**300, usd=0.5, tokens_in=7))
        >>> kept
        Cost(tokens=None, usd=0.5, seconds=None, tokens_in=7, tokens_out=None, agent_s=None, test_s=None)
        >>> dropped
        {'tokens': 'expected a token count from 0 to 2**63-1, got an integer of 997 bits'}
    """
    parts: dict[str, int | float | None] = {}
    dropped: dict[str, str] = {}
    for key in _COST_KEYS:
        value = getattr(cost, key)
        if value is None:
            parts[key] = None
            continue
        try:
            parts[key] = cost_count(value) if key in _COUNT_KEYS else cost_amount(value)
        except ValueError as exc:
            parts[key] = None
            dropped[key] = str(exc)
    return Cost(**parts), dropped  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Rollout:
    """One independent attempt of one agent on one task, with what was observed.

    Construct it with keywords; ``rollout_from_dict`` validates untrusted input.
    """

    task_id: str
    agent: str
    rollout: int
    tests: tuple[TestOutcome, ...] | None = None
    tests_total: int | None = None
    tests_passed: int | None = None
    verdict: bool | None = None
    status: RolloutStatus = "completed"
    findings: tuple[Finding, ...] = ()
    scan_errors: tuple[ScanError, ...] = ()
    cost: Cost | None = None
    isolation: Isolation | None = None
    tamper_suspected: bool = False
    simulated: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int]:
        """``(task_id, agent, rollout)``: unique within a data set."""
        return (self.task_id, self.agent, self.rollout)

    @property
    def functional_tests(self) -> tuple[TestOutcome, ...]:
        """The hidden tests that are not security tests."""
        return tuple(t for t in self.tests or () if not t.security)

    @property
    def security_tests(self) -> tuple[TestOutcome, ...]:
        """The dynamic security tests (``@pytest.mark.security``)."""
        return tuple(t for t in self.tests or () if t.security)

    @property
    def n_tests(self) -> int | None:
        """Functional tests that ran (skipped ones excluded); None when unknown."""
        if self.tests is not None:
            return sum(t.outcome != "skipped" for t in self.functional_tests)
        return self.tests_total

    @property
    def n_tests_passed(self) -> int | None:
        """Functional tests that passed; None when unknown."""
        if self.tests is not None:
            return sum(t.outcome == "passed" for t in self.functional_tests)
        return self.tests_passed

    @property
    def passes(self) -> bool:
        """Whether this rollout counts as a success for reliability@k."""
        if self.status != "completed":
            return False
        if self.verdict is not None:
            return self.verdict
        total, passed = self.n_tests, self.n_tests_passed
        return total is not None and passed is not None and total > 0 and passed == total

    @property
    def security_tests_pass(self) -> bool:
        """True unless a dynamic security test failed or errored (skipped ones do not count)."""
        return not any(t.failing for t in self.security_tests)


# ---------------------------------------------------------------------------------- parsing


def _fail(path: str, line: int | None, fieldname: str, message: str) -> RecordError:
    return RecordError(path, message, line=line, field=fieldname)


def _get_str(d: Mapping[str, Any], key: str, where: tuple[str, int | None], *,
             required: bool = True, default: str = "") -> str:
    if key not in d:
        if required:
            raise _fail(*where, key, "missing required key (expected a string)")
        return default
    value = d[key]
    if not isinstance(value, str) or (required and value == ""):
        raise _fail(*where, key, f"expected a non-empty string, got {value!r}")
    return value


def _get_count(d: Mapping[str, Any], key: str, where: tuple[str, int | None]) -> int | None:
    if d.get(key) is None:
        return None
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(*where, key, f"expected an integer >= 0, got {_show(value)}")
    if value >= _INT64:
        raise _fail(*where, key, f"expected an integer >= 0 that fits 64 bits (< 2**63), got {_show(value)}")
    return value


def _get_opt_number(d: Mapping[str, Any], key: str, where: tuple[str, int | None],
                    prefix: str) -> float | None:
    value = d.get(key)
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not -_FLOAT_MAX <= value <= _FLOAT_MAX or not math.isfinite(value)):
        raise _fail(*where, prefix + key, f"expected a finite number, got {_show(value)}")
    return float(value)


def _show(value: Any) -> str:
    """``repr`` for an error message, cut short (a 4000-digit integer is not a message)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parse_tests(raw: Any, where: tuple[str, int | None]) -> tuple[TestOutcome, ...]:
    if not isinstance(raw, list):
        raise _fail(*where, "tests", f"expected a list of test outcomes, got {type(raw).__name__}")
    out = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        name_field = f"tests[{i}]"
        if not isinstance(item, dict):
            raise _fail(*where, name_field, "expected an object with 'name' and 'outcome'")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(*where, name_field + ".name", f"expected a non-empty string, got {name!r}")
        if name in seen:
            raise _fail(*where, name_field + ".name", f"duplicate test name {name!r}")
        seen.add(name)
        outcome = item.get("outcome")
        if not isinstance(outcome, str) or outcome not in TEST_OUTCOMES:
            raise _fail(*where, name_field + ".outcome",
                        f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
        security = item.get("security", False)
        if not isinstance(security, bool):
            raise _fail(*where, name_field + ".security", f"expected true or false, got {security!r}")
        out.append(TestOutcome(name, outcome, security))
    return tuple(out)


_Level = TypeVar("_Level", bound=str)


def _parse_level(value: Any, levels: tuple[_Level, ...], where: tuple[str, int | None],
                 fieldname: str) -> _Level:
    text = value.lower() if isinstance(value, str) else value
    if text not in levels:
        raise _fail(*where, fieldname, f"expected one of {', '.join(levels)}, got {value!r}")
    return cast(_Level, text)


def _parse_findings(raw: Any, where: tuple[str, int | None]) -> tuple[Finding, ...]:
    if not isinstance(raw, list):
        raise _fail(*where, "findings", "expected a list of findings")
    out = []
    for i, item in enumerate(raw):
        f = f"findings[{i}]"
        if not isinstance(item, dict):
            raise _fail(*where, f, "expected an object")
        cwe = item.get("cwe")
        if cwe is not None and (isinstance(cwe, bool) or not isinstance(cwe, int) or not 0 <= cwe < _INT64):
            raise _fail(*where, f + ".cwe", f"expected a CWE number or null, got {_show(cwe)}")
        line = item.get("line")
        if line is not None and (isinstance(line, bool) or not isinstance(line, int)
                                 or not -_INT64 <= line < _INT64):
            raise _fail(*where, f + ".line", f"expected an integer or null, got {_show(line)}")
        for key in ("tool", "rule_id"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise _fail(*where, f"{f}.{key}", f"expected a non-empty string, got {item.get(key)!r}")
        test_file = item.get("test_file", False)
        if not isinstance(test_file, bool):
            raise _fail(*where, f + ".test_file", f"expected true or false, got {_show(test_file)}")
        out.append(Finding(
            tool=item["tool"],
            rule_id=item["rule_id"],
            severity=_parse_level(item.get("severity"), SEVERITY_LEVELS, where, f + ".severity"),
            confidence=_parse_level(item.get("confidence", "medium"), CONFIDENCE_LEVELS, where,
                                    f + ".confidence"),
            cwe=cwe,
            path=str(item.get("path", "")),
            line=line,
            message=str(item.get("message", "")),
            test_file=test_file,
        ))
    return tuple(out)


def parse_status(value: Any, *, path: str = "<input>", line: int | None = None,
                 fieldname: str = "status") -> RolloutStatus:
    """Check that ``value`` is a rollout status and return it, typed.

    Raises:
        RecordError: naming file, line and field, with the statuses allowed.

    Example:
        >>> parse_status("no_change")
        'no_change'
    """
    if not isinstance(value, str) or value not in ROLLOUT_STATUSES:
        raise _fail(path, line, fieldname, f"expected one of {', '.join(STATUSES)}, got {_show(value)}")
    return value



def rollout_from_dict(d: Any, *, path: str = "<input>", line: int | None = None) -> Rollout:
    """Validate one decoded JSON object and build a ``Rollout``.

    Args:
        d: The decoded object.
        path: The file it came from, for error messages.
        line: Its 1-based line number, for error messages.

    Raises:
        RecordError: naming file, line and field, for any breach of the schema.
    """
    where = (path, line)
    if not isinstance(d, dict):
        raise _fail(path, line, "record", f"expected a JSON object, got {type(d).__name__}")
    version = d.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        readable = ", ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise _fail(*where, "schema_version",
                    f"unsupported version {version!r} (this reliabench reads {readable})")
    task_id = _get_str(d, "task_id", where)
    agent = _get_str(d, "agent", where)
    if "rollout" not in d:
        raise _fail(*where, "rollout", "missing required key (expected an integer >= 0)")
    rollout = _get_count(d, "rollout", where)
    assert rollout is not None
    tests = _parse_tests(d["tests"], where) if d.get("tests") is not None else None
    total = _get_count(d, "tests_total", where)
    passed_n = _get_count(d, "tests_passed", where)
    if (total is None) != (passed_n is None):
        missing = "tests_passed" if passed_n is None else "tests_total"
        raise _fail(*where, missing, "tests_total and tests_passed go together")
    if total is not None and passed_n is not None and passed_n > total:
        raise _fail(*where, "tests_passed",
                    f"tests_passed={passed_n} exceeds tests_total={total} (c > n)")
    if tests is not None and total is not None:
        raise _fail(*where, "tests", "give either 'tests' or 'tests_total'/'tests_passed', not both")
    verdict = d.get("passed")
    if verdict is not None and not isinstance(verdict, bool):
        raise _fail(*where, "passed", f"expected true, false or null, got {verdict!r}")
    if tests is None and total is None and verdict is None:
        raise _fail(*where, "tests",
                    "no outcome: expected 'tests', 'tests_total' + 'tests_passed', or 'passed'")
    status = parse_status(d.get("status", "completed"), path=path, line=line)
    findings = _parse_findings(d["findings"], where) if d.get("findings") else ()
    scan_errors_raw = d.get("scan_errors") or []
    if not isinstance(scan_errors_raw, list) or not all(isinstance(e, dict) for e in scan_errors_raw):
        raise _fail(*where, "scan_errors", "expected a list of {tool, path, message} objects")
    scan_errors = tuple(
        ScanError(str(e.get("tool", "")), str(e.get("path", "")), str(e.get("message", "")))
        for e in scan_errors_raw
    )
    cost = None
    if d.get("cost") is not None:
        raw_cost = d["cost"]
        if not isinstance(raw_cost, dict):
            raise _fail(*where, "cost", "expected an object with tokens, usd, seconds")
        nums = {k: _get_opt_number(raw_cost, k, where, "cost.") for k in _COST_KEYS}
        for k in _COST_KEYS:
            if (nums[k] or 0.0) < 0:
                raise _fail(*where, f"cost.{k}", f"expected a number >= 0, got {_show(raw_cost[k])}")

        def count(key: str) -> int | None:
            # the integer as written, not through a float: 2**60 + 1 stays itself
            if nums[key] is None:
                return None
            try:
                return cost_count(raw_cost[key])
            except ValueError as exc:  # a count that does not fit 64 bits
                raise _fail(*where, f"cost.{key}", str(exc)) from None

        cost = Cost(tokens=count("tokens"), usd=nums["usd"], seconds=nums["seconds"],
                    tokens_in=count("tokens_in"), tokens_out=count("tokens_out"),
                    agent_s=nums["agent_s"], test_s=nums["test_s"])
    meta = d.get("meta") or {}
    if not isinstance(meta, dict):
        raise _fail(*where, "meta", "expected an object")
    if not json_input.check_depth(meta):
        raise _fail(*where, "meta", f"nested more than {json_input.MAX_DEPTH} levels deep")
    isolation = d.get("isolation")
    if isolation is not None and not isinstance(isolation, str):
        raise _fail(*where, "isolation", f"expected a string, got {isolation!r}")
    for flag in ("tamper_suspected", "simulated"):
        if not isinstance(d.get(flag, False), bool):
            raise _fail(*where, flag, f"expected true or false, got {d[flag]!r}")
    return Rollout(
        task_id=task_id,
        agent=agent,
        rollout=rollout,
        tests=tests,
        tests_total=total,
        tests_passed=passed_n,
        verdict=verdict,
        status=status,
        findings=findings,
        scan_errors=scan_errors,
        cost=cost,
        isolation=isolation,
        tamper_suspected=bool(d.get("tamper_suspected", False)),
        simulated=bool(d.get("simulated", False)),
        meta=meta,
    )


def rollout_to_dict(r: Rollout) -> dict[str, Any]:
    """Encode a ``Rollout`` as a JSON-ready dict (the inverse of ``rollout_from_dict``)."""
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "task_id": r.task_id,
        "agent": r.agent,
        "rollout": r.rollout,
        "status": r.status,
    }
    if r.tests is not None:
        out["tests"] = [
            {"name": t.name, "outcome": t.outcome, **({"security": True} if t.security else {})}
            for t in r.tests
        ]
    if r.tests_total is not None:
        out["tests_total"] = r.tests_total
        out["tests_passed"] = r.tests_passed
    if r.verdict is not None:
        out["passed"] = r.verdict
    if r.findings:
        out["findings"] = [
            {"tool": f.tool, "rule_id": f.rule_id, "severity": f.severity,
             "confidence": f.confidence, "cwe": f.cwe, "path": f.path, "line": f.line,
             "message": f.message, **({"test_file": True} if f.test_file else {})}
            for f in r.findings
        ]
    if r.scan_errors:
        out["scan_errors"] = [
            {"tool": e.tool, "path": e.path, "message": e.message} for e in r.scan_errors
        ]
    if r.cost is not None:
        out["cost"] = {k: getattr(r.cost, k) for k in _COST_KEYS if getattr(r.cost, k) is not None}
    if r.isolation is not None:
        out["isolation"] = r.isolation
    if r.tamper_suspected:
        out["tamper_suspected"] = True
    if r.simulated:
        out["simulated"] = True
    if r.meta:
        out["meta"] = dict(r.meta)
    return out


def _iter_records(source: str | Path | IO[str]) -> Iterator[Rollout]:
    seen: dict[tuple[str, str, int], int] = {}
    for item in read_jsonl_lines(source, error=RecordError):
        lineno = item.line
        record = rollout_from_dict(item.value, path=item.path, line=lineno)
        first = seen.setdefault(record.key, lineno)
        if first != lineno:
            raise RecordError(
                item.path,
                f"duplicate (task_id, agent, rollout) = {record.key!r}, first seen on line {first}",
                line=lineno, field="rollout",
            )
        yield record


def read_jsonl(source: str | Path | IO[str]) -> list[Rollout]:
    r"""Read and validate a JSONL file of rollout records (``-`` reads standard input).

    Lines are read by :func:`reliabench.files.jsonl.read_jsonl_lines` (blank lines skipped,
    ``\r\n`` endings and a byte order mark accepted, a ``.gz`` file decompressed).

    Raises:
        RecordError: on the first bad line, naming file, line and field; also for a
            duplicate ``(task_id, agent, rollout)``.
    """
    return list(_iter_records(source))


def _json_line(obj: dict[str, Any]) -> str:
    """One JSON line: UTF-8 text when it can be, ASCII escapes for a lone surrogate.

    A lone surrogate (a non-UTF-8 file name) cannot be written as UTF-8; escaped, every record
    can be written and read back exactly.
    """
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj)
    return text + "\n"


def write_jsonl(records: Iterable[Rollout], dest: str | Path | IO[str]) -> int:
    """Write records as JSONL; a path is written atomically (no half-written file).

    Returns:
        The number of records written.
    """
    if not isinstance(dest, (str, Path)):
        n = 0
        for r in records:
            dest.write(_json_line(rollout_to_dict(r)))
            n += 1
        return n
    with open_output(dest) as fh:  # atomic; never replaces a device such as /dev/null
        return write_jsonl(records, fh)
