"""JUnit XML: one ``<testcase>`` per test, with ``<failure>``, ``<error>`` or ``<skipped>`` inside.

Written by JUnit 5's console launcher (``--reports-dir``: ``TEST-junit-jupiter.xml``),
Catch2 (``-r junit``), pytest (``--junit-xml``), Maven Surefire, and most CI tools::

    <testsuites>
      <testsuite name="bank-account" tests="2" failures="1">
        <testcase classname="bank-account.global" name="Single deposit" time="0.01"/>
        <testcase classname="bank-account.global" name="Withdraw once">
          <failure message="REQUIRE( 1 == 2 )">...</failure>
        </testcase>
      </testsuite>
    </testsuites>

A test is named ``CLASSNAME::NAME`` (``LedgerTest::oneEntry()``); without a classname the
enclosing suite's name stands in. The outcome is the worst element inside the testcase
(``error`` > ``failure`` > ``skipped``), ``passed`` when there is none.

Reading it safely: the report is written by the process under test, so it is hostile input.
It is read with expat in a streaming pass that keeps only the attributes it needs: a
document type declaration (where entity bombs and external entities live) refuses the
whole report, so no entity is ever expanded; elements nested deeper than
:data:`MAX_DEPTH` stop the reading; character data is kept only inside a failure, up to a
message's length. A document cut short (the tool was killed while writing) keeps the test
cases closed before the cut and says where it stopped.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput, worst
from reliabench.hidden_tests.reports._common import MESSAGE_CHARS, cut, finish, missing
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["MAX_DEPTH", "JunitXmlReport"]

MAX_DEPTH: Final = 64
"""Deepest element nesting read (real reports nest four or five levels)."""

_DECLARED: Final = re.compile(rb"^\s*<\?xml[^>]*encoding=[\"'](?!utf-8|UTF-8)[^\"']+[\"']")
"""An XML declaration naming an encoding other than UTF-8 (then expat decodes it)."""
_INSIDE: Final[dict[str, ReportedOutcome]] = {"failure": "failed", "error": "error", "skipped": "skipped"}


class _Refused(Exception):
    """The document holds something a report never needs (a DTD, absurd nesting)."""


class _Reader:
    def __init__(self) -> None:
        self.cases: list[ReportedCase] = []
        self.problems: list[str] = []
        self.depth = 0
        self.suites: list[str] = []
        self.case: dict[str, str] | None = None
        self.case_depth = 0
        self.outcome: ReportedOutcome = "passed"
        self.message: list[str] = []
        self.in_failure = 0

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f"elements nested deeper than {MAX_DEPTH} levels")
        if tag == "testsuite":
            self.suites.append(attrs.get("name", ""))
        elif tag == "testcase":
            if self.case is not None:
                self.problems.append(f"a testcase inside testcase {self.case.get('name', '')!r} (ignored)")
                return
            self.case = attrs
            self.case_depth = self.depth
            self.outcome = "passed"
            self.message = []
        elif self.case is not None and tag in _INSIDE:
            kind = _INSIDE[tag]
            if kind == "skipped" and attrs.get("type") == "pytest.xfail":
                kind = "xfailed"  # pytest writes an expected failure as a skip of this type
            self.outcome = worst(self.outcome, kind)
            if self.outcome == kind:
                self.message = [attrs.get("message", "")]
            self.in_failure += 1

    def end(self, tag: str) -> None:
        if tag == "testsuite" and self.suites:
            self.suites.pop()
        elif self.case is not None and tag in _INSIDE:
            self.in_failure -= 1
        elif tag == "testcase" and self.case is not None and self.depth == self.case_depth:
            self.close_case()
        self.depth -= 1

    def text(self, data: str) -> None:
        if self.in_failure and sum(map(len, self.message)) < MESSAGE_CHARS:
            self.message.append(data)

    def close_case(self) -> None:
        attrs, self.case = self.case, None
        if attrs is None:  # pragma: no cover - end() calls it only inside a testcase
            return
        name = attrs.get("name")
        if not name:
            self.problems.append("a testcase without a name (ignored)")
            return
        group = attrs.get("classname") or (self.suites[-1] if self.suites else "")
        full = f"{group}::{name}" if group else name
        self.cases.append(ReportedCase(full, self.outcome, cut("".join(self.message))))


class JunitXmlReport:
    """The ``junit-xml`` report format."""

    name = "junit-xml"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The test cases of a JUnit XML document (see the module docstring)."""
        if report.data is None:
            return missing()
        reader = _Reader()
        data = report.data
        encoding: str | None = None
        if _DECLARED.match(data[:200]) is None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                # a name or captured output of the code under test in another encoding must
                # not cost every other test its outcome: read it as UTF-8 with replacements
                reader.problems.append(f"not UTF-8 at byte {exc.start} (invalid bytes replaced)")
                data = data.decode("utf-8", errors="replace").encode("utf-8")
                encoding = "UTF-8"
        parser = xml.parsers.expat.ParserCreate(encoding)
        parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)

        def refuse_doctype(*_args: object) -> None:
            raise _Refused("a document type declaration (a report needs none; entities are never expanded)")

        def refuse_entity(*_args: object) -> int:
            raise _Refused("an external entity reference")

        parser.StartDoctypeDeclHandler = refuse_doctype
        parser.EntityDeclHandler = refuse_doctype
        parser.ExternalEntityRefHandler = refuse_entity
        parser.StartElementHandler = reader.start
        parser.EndElementHandler = reader.end
        parser.CharacterDataHandler = reader.text
        try:
            parser.Parse(data, True)
        except _Refused as exc:
            return ParsedReport((), (f"report refused: {exc}",))
        except xml.parsers.expat.ExpatError as exc:
            reader.problems.append(
                f"not well-formed XML at line {exc.lineno}, column {exc.offset}: "
                f"{xml.parsers.expat.errors.messages.get(exc.code, str(exc))} "
                f"({len(reader.cases)} test case(s) read before)")
        except RecursionError:  # pragma: no cover - MAX_DEPTH stops this first
            return ParsedReport((), ("report refused: nested too deep",))
        return finish(reader.cases, reader.problems)
