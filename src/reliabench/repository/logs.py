r"""Per-test statuses from a repository's test log, one parser per test runner (as SWE-bench has).

A repository task's test command prints its own report (pytest with ``-rA``, Django's
``runtests.py --verbosity 2``, SymPy's ``bin/test``); a parser turns that text into a
*status map*, test name -> one of :data:`LOG_STATUSES`. The parsers read the same lines the
SWE-bench harness reads (``swebench`` 4.1.0, ``harness/log_parsers/python.py``), so a
FAIL_TO_PASS / PASS_TO_PASS name of the dataset finds its line; the cross-check test
(``tests/repository/test_logs.py``) grades real logs with the package and with these.

======================  ============================================================
parser                  reads
======================  ============================================================
``pytest``              ``STATUS name`` lines of pytest's ``-rA`` summary
``pytest-options``      the same; a parameter that is a path keeps only its last part
``pytest-v2``           the same with colour codes removed, and ``name STATUS`` lines
``django``              ``name ... ok|FAIL|ERROR|skipped`` and ``FAIL:``/``ERROR:`` lines
``sympy``               ``name ok|F|E`` lines and ``___ file.py:name ___`` headings
======================  ============================================================

Examples:
    >>> parse_log("pytest", "PASSED t.py::a\nFAILED t.py::b - assert 0\n")
    {'t.py::a': 'PASSED', 't.py::b': 'FAILED'}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final, Literal, TypeAlias

from reliabench.errors import InvalidArgumentError

__all__ = [
    "END_MARKER",
    "LOG_PARSERS",
    "LOG_STATUSES",
    "LogParser",
    "LogStatus",
    "START_MARKER",
    "parse_log",
    "swebench_log_text",
]

LogStatus: TypeAlias = Literal["PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"]
"""A test's status in a log, in SWE-bench's words."""
LOG_STATUSES: Final[tuple[LogStatus, ...]] = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")

START_MARKER: Final = ">>>>> Start Test Output"
END_MARKER: Final = ">>>>> End Test Output"

LogParser: TypeAlias = Callable[[str], dict[str, str]]


def _status_first(line: str) -> list[str] | None:
    """``STATUS name ...`` split into words (a FAILED line's `` - `` reason joined), or None."""
    if not line.startswith(LOG_STATUSES):
        return None
    if line.startswith("FAILED"):
        line = line.replace(" - ", " ")
    words = line.split()
    return words if len(words) > 1 else None


def _pytest(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log.split("\n"):
        words = _status_first(line)
        if words is not None:
            out[words[1]] = words[0]
    return out


_OPTION = re.compile(r"(.*?)\[(.*)\]")


def _option_name(name: str) -> str:
    found = _OPTION.search(name)
    if found:
        main, option = found.groups()
        if option.startswith("/") and not option.startswith("//") and "*" not in option:
            option = "/" + option.split("/")[-1]
        name = f"{main}[{option}]"
    return name


def _pytest_options(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log.split("\n"):
        words = _status_first(line)
        if words is not None:
            out[_option_name(words[1])] = words[0]
    return out


def normalise_name(parser: str, name: str) -> str:
    """A pytest node id as the parser ``parser`` names it in a status map.

    The log parsers split lines at white space, so a name ends at its first blank (SWE-bench's
    FAIL_TO_PASS / PASS_TO_PASS names are cut there too); ``pytest-options`` then keeps only
    the last part of a parameter that is a path.

    Example:
        >>> normalise_name("pytest-options", "t.py::f[/tmp/x/a.dcm]")
        't.py::f[/a.dcm]'
        >>> normalise_name("pytest", "t.py::f[/a/b]"), normalise_name("pytest", "t.py::g[a b]")
        ('t.py::f[/a/b]', 't.py::g[a')
    """
    words = name.split()
    cut = words[0] if words else name
    return _option_name(cut) if parser == "pytest-options" else cut


_COLOUR = re.compile(r"\[(\d+)m")
_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def _pytest_v2(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in log.split("\n"):
        line = _COLOUR.sub("", raw).translate(_CONTROL)
        if line.startswith(LOG_STATUSES):
            if line.startswith("FAILED"):
                line = line.replace(" - ", " ")
            words = line.split()
            if len(words) >= 2:
                out[words[1]] = words[0]
        elif line.endswith(LOG_STATUSES):
            words = line.split()
            if len(words) >= 2:
                out[words[0]] = words[1]
    return out


_DJANGO_SPLIT = (
    re.compile(
        r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$", re.M
    ),
    re.compile(r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$", re.M),
    re.compile(r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$", re.M),
)


def _django(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    previous: str | None = None
    for raw in log.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            out["--version is equivalent to version"] = "PASSED"
        if " ... " in line:
            previous = line.split(" ... ")[0]
        for suffix in (" ... ok", " ... OK", " ...  OK"):
            if line.endswith(suffix):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()
                out[line.rsplit(suffix, 1)[0]] = "PASSED"
                break
        if " ... skipped" in line:
            out[line.split(" ... skipped")[0]] = "SKIPPED"
        if line.endswith(" ... FAIL"):
            out[line.split(" ... FAIL")[0]] = "FAILED"
        if line.startswith("FAIL:"):
            out[line.split()[1].strip()] = "FAILED"
        if line.endswith(" ... ERROR"):
            out[line.split(" ... ERROR")[0]] = "ERROR"
        if line.startswith("ERROR:"):
            out[line.split()[1].strip()] = "ERROR"
        if line.lstrip().startswith("ok") and previous is not None:
            out[previous] = "PASSED"  # the test printed between "..." and "ok"
    for pattern in _DJANGO_SPLIT:
        for found in pattern.finditer(log):
            out[found.group(1)] = "PASSED"
    return out


_SYMPY_HEADING = re.compile(r"(_*) (.*)\.py:(.*) (_*)")


def _sympy(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for found in _SYMPY_HEADING.findall(log):
        out[f"{found[1]}.py:{found[2]}"] = "FAILED"
    for raw in log.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        if line.endswith(" E"):
            out[line.split()[0]] = "ERROR"
        if line.endswith(" F"):
            out[line.split()[0]] = "FAILED"
        if line.endswith(" ok"):
            out[line.split()[0]] = "PASSED"
    return out


LOG_PARSERS: Final[Mapping[str, LogParser]] = {
    "pytest": _pytest,
    "pytest-options": _pytest_options,
    "pytest-v2": _pytest_v2,
    "django": _django,
    "sympy": _sympy,
}
"""Parser name -> parser (a repository task names one in ``log_parser``)."""


def parse_log(parser: str, log: str) -> dict[str, str]:
    """The status map of ``log`` by the parser named ``parser`` (see the module docstring).

    Raises:
        InvalidArgumentError: Unknown parser (the message lists the known ones).
    """
    try:
        fn = LOG_PARSERS[parser]
    except KeyError:
        raise InvalidArgumentError(
            f"log_parser: expected one of {', '.join(LOG_PARSERS)}, got {parser!r}"
        ) from None
    return fn(log)


def swebench_log_text(output: str) -> str:
    """A test log in the SWE-bench harness's shape: the output between its start and end markers.

    The file ``swebench``'s ``get_logs_eval`` reads (our grader reads the output itself).
    """
    return f"{START_MARKER}\n{output}\n{END_MARKER}\n"
