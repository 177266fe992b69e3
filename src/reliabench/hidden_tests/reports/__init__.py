"""Test reports that a language's own test tool writes, read into one outcome per test.

A task whose hidden tests are run by their language's tool (``test_runner = "command"``,
:mod:`reliabench.tasks.test_command`) names the report that tool writes; a
:class:`ReportFormat` of that name reads it. One module per format:

========================  ==============================================================
``junit-xml``             JUnit XML (JUnit 5's console launcher, Catch2 ``-r junit``,
                          pytest ``--junit-xml``, most CI tools): :mod:`.junit_xml`
``go-test-json``          ``go test -json`` events, tests and subtests: :mod:`.go_test_json`
``jest-json``             ``jest --json``: :mod:`.jest_json`
``tap``                   Test Anything Protocol 13/14, subtests included: :mod:`.tap`
``ctrf``                  Common Test Report Format JSON: :mod:`.ctrf`
``cargo-libtest``         stable ``cargo test``'s ``test NAME ... ok|FAILED|ignored`` text:
                          :mod:`.cargo_libtest`
``exit-code``             no report: one coarse outcome from the exit status: :mod:`.exit_code`
``harbor-reward``         a Harbor verifier's reward number: one coarse outcome: :mod:`.harbor_reward`
========================  ==============================================================

Rules every format keeps (the hostile-input tests check them for each):

* ``parse`` never raises and never trusts more than it read: whatever it cannot read (not
  UTF-8, truncated, nested too deep, a DTD, a line that is not an event) is a *problem*
  (:attr:`ParsedReport.problems`), and the cases it did read before are kept;
* a test is named ``GROUP::NAME`` (file, class, package or target, then the test), so that a
  task's ``allowed_skips`` can name it the way they name pytest tests;
* a name reported more than once gets its worst outcome (:func:`merge_cases`): a line forged
  into a text report can make a test fail, never pass;
* the caller matches the cases against the task's expected tests: an expected test the
  report does not list did not run, and counts as ``failed``
  (:mod:`reliabench.hidden_tests.command`).

Formats are a plugin kind (:data:`REPORT_FORMAT_REGISTRY`, entry-point group
``reliabench.report_formats``): a package adds one with a class whose instances satisfy
:class:`ReportFormat`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Final, Protocol, runtime_checkable

from reliabench.errors import PluginError
from reliabench.hidden_tests.skips import ReportedOutcome
from reliabench.plugins import Registry

__all__ = [
    "EXIT_CODE",
    "MAX_CASES",
    "MAX_REPORT_BYTES",
    "REPORT_FORMAT_REGISTRY",
    "ParsedReport",
    "ReportFormat",
    "ReportInput",
    "ReportedCase",
    "get_report_format",
    "merge_cases",
    "parse_report",
    "worst",
]

MAX_REPORT_BYTES: Final = 64 * 1024 * 1024
"""The largest report read (the command runner copies at most this much out)."""
MAX_CASES: Final = 200_000
"""Cases read from one report at most; the rest is a problem, not an outcome."""
EXIT_CODE: Final = "exit-code"
"""The format name of tasks without a structured report (one coarse outcome)."""

_RANK: Final[dict[ReportedOutcome, int]] = {"passed": 0, "skipped": 1, "xfailed": 2, "failed": 3, "error": 4}


def worst(a: ReportedOutcome, b: ReportedOutcome) -> ReportedOutcome:
    """The worse of two outcomes (``error`` > ``failed`` > ``xfailed`` > ``skipped`` > ``passed``).

    Example:
        >>> worst("passed", "failed"), worst("skipped", "passed")
        ('failed', 'skipped')
    """
    return a if _RANK[a] >= _RANK[b] else b


@dataclass(frozen=True, slots=True)
class ReportedCase:
    """One test as the report lists it.

    Attributes:
        name: ``GROUP::NAME`` (see the module docstring).
        outcome: What the report says.
        message: The failure message, cut to a few hundred characters (None when none).
        has_children: The report lists tests below this one (a Go test with subtests, a TAP
            test with a subtest block); :meth:`HiddenTestRunner.collect
            <reliabench.hidden_tests.layer.HiddenTestRunner.collect>` keeps leaves only.
    """

    name: str
    outcome: ReportedOutcome
    message: str | None = None
    has_children: bool = False


@dataclass(frozen=True, slots=True)
class ParsedReport:
    """What one report says.

    Attributes:
        cases: One case per test name, in the report's order (:func:`merge_cases`).
        problems: What could not be read or did not add up, one line each (empty: clean).
        coarse: The report has one outcome for the whole run, not one per test
            (``exit-code``).
        found: The report existed (False: the tool wrote none; every expected test failed).
        inconsistent: The report contradicts itself (a name listed twice, counts that do not
            match its lines): a sign of lines forged into it (``HiddenTestRun.forged``).
    """

    cases: tuple[ReportedCase, ...]
    problems: tuple[str, ...] = ()
    coarse: bool = False
    found: bool = True
    inconsistent: bool = False


@dataclass(frozen=True, slots=True)
class ReportInput:
    """What a format reads.

    Attributes:
        data: The report's bytes, at most :data:`MAX_REPORT_BYTES` (None: no report was
            written).
        returncode: The test command's exit status (None: it never started or was killed).
        workdir: Where the command ran, as it saw it (paths in reports are made relative
            to it).
        truncated: ``data`` was cut (the report was larger than the read allowed).
    """

    data: bytes | None
    returncode: int | None = None
    workdir: str = ""
    truncated: bool = False


@runtime_checkable
class ReportFormat(Protocol):
    """Reads one kind of test report."""

    name: str
    """The format's registry name (``junit-xml``)."""
    coarse: bool
    """True when the format gives one outcome per run (``exit-code``), not per test."""

    def parse(self, report: ReportInput) -> ParsedReport:
        """The cases of ``report``; never raises (unreadable parts are problems)."""
        ...


def _is_format_factory(obj: object) -> bool:
    return callable(obj)


REPORT_FORMAT_REGISTRY: Registry[Callable[[], ReportFormat]] = Registry(
    "report_formats",
    builtins={
        "junit-xml": "reliabench.hidden_tests.reports.junit_xml:JunitXmlReport",
        "go-test-json": "reliabench.hidden_tests.reports.go_test_json:GoTestJsonReport",
        "jest-json": "reliabench.hidden_tests.reports.jest_json:JestJsonReport",
        "tap": "reliabench.hidden_tests.reports.tap:TapReport",
        "ctrf": "reliabench.hidden_tests.reports.ctrf:CtrfReport",
        "cargo-libtest": "reliabench.hidden_tests.reports.cargo_libtest:CargoLibtestReport",
        EXIT_CODE: "reliabench.hidden_tests.reports.exit_code:ExitCodeReport",
        "harbor-reward": "reliabench.hidden_tests.reports.harbor_reward:HarborRewardReport",
    },
    what="report format",
    check=_is_format_factory,
    expected="a report format factory (a class whose instances have name, coarse and parse)",
)
"""The report format registry (entry-point group ``reliabench.report_formats``: name -> factory)."""

def get_report_format(name: str) -> ReportFormat:
    """The report format ``name``.

    Raises:
        UnknownNameError: Unknown (the message lists the known ones).
        PluginError: A plugin that fails to load, or a factory that does not make a
            ``ReportFormat``.
    """
    fmt = REPORT_FORMAT_REGISTRY.get(name)()
    if not isinstance(fmt, ReportFormat):
        raise PluginError(f"report format {name!r}: its factory did not return a ReportFormat (needs "
                         f"name, coarse and parse), got {type(fmt).__name__}")
    return fmt


def merge_cases(cases: Iterable[ReportedCase], problems: list[str]) -> tuple[ReportedCase, ...]:
    """One case per name, in first-seen order; a name seen again keeps its worst outcome.

    A duplicate is a problem line (a forged line in a text report, or two tests the tool
    cannot tell apart); either way the name cannot pass on the strength of one line.

    Example:
        >>> probs: list[str] = []
        >>> merged = merge_cases([ReportedCase("a::t", "passed"), ReportedCase("a::t", "failed")], probs)
        >>> [(c.name, c.outcome) for c in merged], probs
        ([('a::t', 'failed')], ['a::t: reported 2 times (its worst outcome counts)'])
    """
    by_name: dict[str, ReportedCase] = {}
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.name] = seen.get(case.name, 0) + 1
        old = by_name.get(case.name)
        if old is None:
            by_name[case.name] = case
            continue
        outcome = worst(old.outcome, case.outcome)
        message = old.message if old.outcome == outcome else case.message
        by_name[case.name] = ReportedCase(case.name, outcome, message,
                                          old.has_children or case.has_children)
    for name, count in seen.items():
        if count > 1:
            problems.append(f"{name}: reported {count} times (its worst outcome counts)")
    return tuple(by_name.values())


def parse_report(fmt: ReportFormat, report: ReportInput) -> ParsedReport:
    """``fmt.parse(report)``, with a format's bug turned into a problem, never an exception."""
    try:
        parsed = fmt.parse(report)
    except Exception as exc:  # a plugin's bug must not lose the rollout
        return ParsedReport((), (f"the {fmt.name} reader failed: {type(exc).__name__}: {exc}"[:300],),
                            coarse=fmt.coarse, found=report.data is not None)
    if report.truncated:
        parsed = replace(parsed, problems=(*parsed.problems, "the report was cut (tests in the cut part "
                                           "count as not run)"))
    return parsed
