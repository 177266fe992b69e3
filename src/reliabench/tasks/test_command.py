"""A task's test command: how a language's own test tool runs the hidden tests, and its report.

::

    # task.toml of a task whose tests are run by their language's tool
    language = "go"
    test_runner = "command"
    [test_command]
    argv = ["go", "test", "-json", "./..."]   # run in the task's environment
    cwd = "."                                 # relative to the workspace
    report = "go-test-json"                   # a report format of the registry, or "exit-code"
    report_file = "stdout"                    # "stdout", or a path under {report_dir}
    timeout_s = 120                           # optional: the task's timeout_s otherwise
    env = { GOFLAGS = "-count=1" }            # optional: added to the command's environment
    ignore = ["build"]                        # optional: build outputs removed from the copy, not flagged
    tamper = [".cargo"]                       # optional: names that change how the tool runs: flagged
    adjustments = ["..."]                     # optional: what was changed from the benchmark's files

    # a task in a container image whose verifier expects its tests and writes its report at
    # fixed places (Harbor / Terminal-Bench: tests at /tests, reward in /logs/verifier):
    tests_at = "/tests"                       # optional: tests/ copied there, the workspace untouched
    report_dir = "/logs/verifier"             # optional: {report_dir} is this folder, made fresh
    oracle = "oracle/solve.sh"                # optional: a script that solves the task (the reference)

The hidden tests (the task's ``tests/`` folder) are laid over a copy of the workspace at
their relative paths after the agent is done; ``{report_dir}`` in ``argv`` and ``env`` values
is a folder the harness makes fresh for the run, where the agent phase could never write;
``{workdir}`` is where the copy is seen; ``{scratch}`` is a fresh folder for build outputs and
caches of this one run (:mod:`reliabench.hidden_tests.command`).

With ``tests_at`` the tests are not laid over the workspace: the task's ``tests/`` folder is
copied into the environment at that absolute path (an older entry there removed first), and
the workspace is tested exactly as the agent left it; with ``report_dir`` the report is read
from that absolute folder, which the harness empties and makes before the command runs. Both
need a container (``[environment] image`` or ``dockerfile``). ``oracle`` names a script in
the task's folder that solves the task where a ``solution/`` of files cannot (it changes the
machine, not only the workspace): its folder is copied to ``/solution`` in the environment and
``bash /solution/<name>`` runs in the workdir before the tests, for the reference's runs
(collecting the expected tests, ``reliabench validate``).

:func:`parse_test_command` reads the table when a suite is loaded; every problem is one
``FILE:LINE: test_command.KEY: what was expected`` line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final

__all__ = ["PLACEHOLDERS", "TestCommand", "parse_test_command", "table_line", "valid_language"]

PLACEHOLDERS: Final = ("{workdir}", "{report_dir}", "{scratch}")
"""What ``argv`` and ``env`` values may name; each is replaced by the folder as the command sees it."""
_KEYS: Final = frozenset({"argv", "report", "report_file", "cwd", "timeout_s", "env", "adjustments",
                          "ignore", "tamper", "tests_at", "report_dir", "oracle"})
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LANGUAGE: Final = re.compile(r"^[a-z][a-z0-9+#._-]{0,31}$")
_MAX_ARGV: Final = 256
_MAX_SECONDS: Final = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class TestCommand:
    """The ``[test_command]`` table of a task.

    Attributes:
        argv: The command (placeholders: :data:`PLACEHOLDERS`).
        report: The report format (a name in the report-format registry) or ``exit-code``
            (one coarse outcome from the exit status).
        report_file: ``stdout`` or a file name under ``{report_dir}``.
        cwd: The working directory, relative to the workspace.
        timeout_s: Wall-clock seconds (None: the task's ``timeout_s``).
        env: Variables added to the command's environment.
        adjustments: What was changed from the benchmark's own files, one line each (the
            Aider harness's adjustments), listed for the reader.
        ignore: Workspace-relative paths removed from the copy before the tests and not
            flagged: build outputs an agent may leave (``target``, ``build``).
        tamper: File or folder names that change how the tool runs (a ``.cargo`` config, a
            ``jest.config.js``, a ``node_modules``): wherever one is in the agent's workspace it
            is removed from the copy and the rollout is flagged.
        tests_at: Where the hidden tests are copied in the environment (an absolute path);
            None: laid over the workspace.
        report_dir: The absolute folder in the environment the report is written to (made
            fresh by the harness); None: ``{report_dir}`` inside the test tree.
        oracle: A script in the task's folder (relative path) that solves the task in the
            environment; the reference of tasks without ``solution/``.
    """

    __test__ = False  # not a pytest test class

    argv: tuple[str, ...]
    report: str
    report_file: str = "stdout"
    cwd: str = "."
    timeout_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    adjustments: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    tamper: tuple[str, ...] = ()
    tests_at: str | None = None
    report_dir: str | None = None
    oracle: str | None = None

    @property
    def coarse(self) -> bool:
        """True when the task has one outcome per run (``exit-code``, a reward), not one per test."""
        from reliabench.hidden_tests.reports import get_report_format

        return self.report == "exit-code" or get_report_format(self.report).coarse


def valid_language(value: object) -> bool:
    """Whether ``value`` is a language name (lower case, e.g. ``go``, ``cpp``, ``javascript``)."""
    return isinstance(value, str) and _LANGUAGE.match(value) is not None


def _lines_of(path: Path) -> dict[str, int]:
    """``KEY -> line`` for the keys of the ``[test_command]`` table of ``path`` (and the table itself)."""
    from reliabench.files.untrusted import read_file

    try:
        text = read_file(path, 1 << 20).decode("utf-8", errors="replace")  # never through a link
    except OSError:
        return {}
    found: dict[str, int] = {}
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.split("#", 1)[0].strip() == "[test_command]"
            if inside:
                found.setdefault("", number)
            continue
        key = stripped.split("=", 1)[0].strip().strip('"')
        if inside and "=" in stripped:
            found.setdefault(key, number)
        elif key == "test_command" and "=" in stripped:
            found.setdefault("", number)
    return found


def table_line(path: Path) -> int:
    """The line of the ``[test_command]`` table in the task file ``path`` (1 when not found)."""
    return _lines_of(path).get("", 1)


def _relative(value: object) -> str | None:
    """A normalised relative POSIX path that stays inside its root, or None."""
    if not isinstance(value, str) or not value or "\0" in value or "\\" in value:
        return None
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts:
        return None
    return str(path) if str(path) else "."


def _absolute(value: object) -> str | None:
    """A normalised absolute POSIX path other than ``/``, or None."""
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value or "\\" in value:
        return None
    norm = str(PurePosixPath(value))
    if norm == "/" or ".." in PurePosixPath(norm).parts or any(c.isspace() for c in norm):
        return None
    return norm


def parse_test_command(meta: Mapping[str, Any], path: Path, problems: list[str],
                       known_reports: list[str] | None = None) -> TestCommand | None:
    """The ``[test_command]`` table of the task file ``path``, checked.

    Args:
        meta: The parsed ``task.toml``.
        path: Its path (for messages).
        problems: Where each problem is appended, as ``FILE:LINE: test_command.KEY: ...``.
        known_reports: The report formats a task may name (default: the registry's names).

    Returns:
        The command, or None when the table is missing or has problems.
    """
    lines = _lines_of(path)
    before = len(problems)

    def problem(key: str, what: str) -> None:
        where = f"test_command.{key}" if key else "test_command"
        problems.append(f"{path}:{lines.get(key, lines.get('', 1))}: {where}: {what}")

    table = meta.get("test_command")
    if not isinstance(table, dict):
        problem("", "expected a [test_command] table (argv, report) for test_runner = 'command'"
                if table is None else f"expected a table, got {table!r:.80}")
        return None
    for key in sorted(set(table) - _KEYS):
        problem(key, f"unknown key (known: {', '.join(sorted(_KEYS))})")
    argv = table.get("argv")
    if (not isinstance(argv, list) or not argv or len(argv) > _MAX_ARGV
            or not all(isinstance(a, str) and a and "\0" not in a for a in argv)):
        problem("argv", f"expected a list of 1 to {_MAX_ARGV} non-empty strings, got {argv!r:.80}")
    report = table.get("report")
    if known_reports is None:
        from reliabench.hidden_tests.reports import REPORT_FORMAT_REGISTRY

        known_reports = REPORT_FORMAT_REGISTRY.names()
    if not isinstance(report, str) or report not in known_reports:
        problem("report", f"expected one of {', '.join(known_reports)}, got {report!r:.80}")
    report_file = table.get("report_file", "stdout")
    if report_file != "stdout" and _relative(report_file) in (None, "."):
        problem("report_file", "expected 'stdout' or a relative path under {report_dir}, "
                f"got {report_file!r:.80}")
    if report == "exit-code" and report_file != "stdout":
        problem("report_file", "an exit-code task reads no report file")
    cwd = _relative(table.get("cwd", "."))
    if cwd is None:
        problem("cwd", f"expected a relative path inside the workspace, got {table.get('cwd')!r:.80}")
    timeout = table.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or not 0 < timeout <= _MAX_SECONDS):
        problem("timeout_s", f"expected a number of seconds in (0, {_MAX_SECONDS:g}], got {timeout!r:.80}")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str)
                                            and "\0" not in v for k, v in env.items()):
        problem("env", f"expected a table of NAME = \"value\" strings, got {env!r:.80}")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("adjustments", "ignore", "tamper"):
        raw = table.get(key, [])
        if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
            problem(key, f"expected a list of non-empty strings, got {raw!r:.80}")
            continue
        if key != "adjustments" and any(_relative(x) in (None, ".") for x in raw):
            problem(key, f"expected relative paths inside the workspace, got {raw!r:.80}")
            continue
        lists[key] = tuple(raw)
    places: dict[str, str | None] = {}
    for key in ("tests_at", "report_dir"):
        raw_place = table.get(key)
        places[key] = None if raw_place is None else _absolute(raw_place)
        if raw_place is not None and places[key] is None:
            problem(key, f"expected an absolute path in the environment other than /, got {raw_place!r:.80}")
    oracle = table.get("oracle")
    if oracle is not None:
        rel = _relative(oracle)
        if rel in (None, "."):
            problem("oracle", f"expected a relative path inside the task's folder, got {oracle!r:.80}")
        else:
            from reliabench.files.untrusted import file_kind

            if file_kind(path.parent / rel) != "file":
                problem("oracle", f"{rel}: not a file in the task's folder")
            oracle = rel
    if len(problems) > before:
        return None
    return TestCommand(
        argv=tuple(argv),  # type: ignore[arg-type]  # checked above
        report=str(report),
        report_file=str(report_file) if report_file == "stdout" else str(_relative(report_file)),
        cwd=str(cwd),
        timeout_s=None if timeout is None else float(timeout),
        env=dict(env),
        adjustments=lists.get("adjustments", ()),
        ignore=lists.get("ignore", ()),
        tamper=lists.get("tamper", ()),
        tests_at=places["tests_at"],
        report_dir=places["report_dir"],
        oracle=None if oracle is None else str(oracle),
    )
