"""``go test -json``: one JSON event per line, for every test and subtest.

::

    {"Action":"run","Package":"bowling","Test":"TestRoll"}
    {"Action":"output","Package":"bowling","Test":"TestRoll","Output":"=== RUN   TestRoll"}
    {"Action":"pass","Package":"bowling","Test":"TestRoll/a_roll_cannot_score_more_than_10_points","Elapsed":0}
    {"Action":"fail","Package":"bowling","Test":"TestRoll","Elapsed":0.01}
    {"Action":"fail","Package":"bowling","Elapsed":0.02}

A test is named ``PACKAGE::TEST`` (``bowling::TestRoll/a_roll_cannot_score_more_than_10_points``);
its outcome is its last ``pass``, ``fail`` or ``skip`` event. A test with subtests is
marked ``has_children``: expected tests are the leaves. A test that started (``run``) and
never ended (the binary crashed or was killed) is ``failed``. Lines that are not JSON events
(Go before 1.24 prints a build failure as text, ``FAIL pkg [build failed]``) are counted as
a problem and skipped; so is output the test binary printed that ``test2json`` could not
frame (its own ``output`` events are ignored).

What the tested process can forge: before Go 1.20, ``test2json`` reads the test binary's
text output, so a test that prints ``--- PASS: TestX`` to standard output makes an event
for it (docs/threat-model.md); Go 1.20+ marks the framing lines so it cannot.
"""

from __future__ import annotations

import json
from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput
from reliabench.hidden_tests.reports._common import cut, decode_text, finish, missing
from reliabench.hidden_tests.skips import ReportedOutcome

__all__ = ["GoTestJsonReport"]

_END: Final[dict[str, ReportedOutcome]] = {"pass": "passed", "fail": "failed", "skip": "skipped"}
_MAX_LINE: Final = 1 << 20


class GoTestJsonReport:
    """The ``go-test-json`` report format."""

    name = "go-test-json"
    coarse = False

    def parse(self, report: ReportInput) -> ParsedReport:
        """The tests of a ``go test -json`` stream (see the module docstring)."""
        if report.data is None:
            return missing()
        problems: list[str] = []
        text = decode_text(report.data, problems)
        order: list[str] = []
        ended: dict[str, ReportedOutcome] = {}
        started: set[str] = set()
        last_output: dict[str, str] = {}
        not_events = 0
        failed_packages: list[str] = []
        packages_ended: set[str] = set()
        packages_tested: set[str] = set()
        for line in text.splitlines():
            if not line.strip():
                continue
            event = _event(line)
            if event is None:
                not_events += 1
                continue
            action, package, test = event.get("Action"), event.get("Package"), event.get("Test")
            if not isinstance(action, str) or not isinstance(package, str):
                not_events += 1
                continue
            if test is None:
                if action in _END:
                    packages_ended.add(package)
                if action == "fail" and package not in failed_packages:
                    failed_packages.append(package)
                continue
            packages_tested.add(package)
            if not isinstance(test, str) or not test:
                not_events += 1
                continue
            name = f"{package}::{test}"
            if name not in started and name not in ended:
                order.append(name)
            if action == "run":
                started.add(name)
            elif action == "output":
                out = event.get("Output")
                if isinstance(out, str) and out.strip() and not out.lstrip().startswith(("=== ", "--- ")):
                    last_output[name] = (last_output.get(name, "") + out)[-400:]
            elif action in _END:
                ended[name] = _END[action]
        if not_events:
            problems.append(f"{not_events} line(s) that are not go test events (build errors print so)")
        if failed_packages and not ended:
            problems.append(f"package(s) failed before any test ended: {', '.join(failed_packages[:5])}")
        unended = sorted(packages_tested - packages_ended)
        if unended:
            problems.append(f"no result line for package(s) {', '.join(unended[:5])}: the stream was cut")
        parents = {name.rsplit("/", 1)[0] for name in order if "/" in name.split("::", 1)[1]}
        cases: list[ReportedCase] = []
        for name in order:
            outcome = ended.get(name)
            message = cut(last_output.get(name)) if outcome != "passed" else None
            if outcome is None:
                outcome = "failed"
                message = "started and never ended (the test binary crashed or was killed)"
            cases.append(ReportedCase(name, outcome, message, has_children=name in parents))
        return finish(cases, problems)


def _event(line: str) -> dict[str, object] | None:
    if len(line) > _MAX_LINE or not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None
