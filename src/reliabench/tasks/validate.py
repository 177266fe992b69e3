"""Check a suite: references pass, starters fail, insecure variants are caught.

For every task, in the sandbox like a real run (the task's environment: the host, or its
image on a container backend, refused by name before anything runs when the backend cannot
give it), with a fresh test process per run:

* the hidden tests collect on the untouched starter workspace;
* the reference solution (``solution/`` over ``workspace/``) passes EVERY hidden test,
  security tests included, and no scanner finding reaches the default threshold (except
  rules the task declares with a ``reference-finding:RULE`` tag: a converted benchmark task
  that asks for a flagged API, such as MD5 in HumanEval/162);
* the tests the reference skips (or xfails) are exactly the task's ``allowed_skips``: a skip
  the task does not declare is a failure in every rollout, the reference's included
  (:mod:`reliabench.hidden_tests.skips`), so each one is named with the ``task.toml`` line that
  declares them; a declared skip the reference does not take, or one that names no hidden test,
  is a problem too (it would let any rollout skip that test);
* the untouched starter fails at least one functional test;
* every insecure variant passes every functional test (it is plausible) and is caught by
  each lens its ``variant.toml`` names (``scanner``: a finding at the default threshold on
  the lines it changed; ``security_test``: a failing ``@pytest.mark.security`` test).

Test-command tasks (``test_runner = "command"``, :mod:`reliabench.hidden_tests.command`) are
checked the same way by their own runner: the expected tests are what the tool's report lists
on the reference; the reference is ``solution/`` over the starter or, for a task with an
``oracle`` script (a Harbor task's ``solve.sh``), the starter after the oracle ran in the
task's environment. A task tagged :data:`STARTER_PASSES_TAG` declares that its starter passes
by design (a refactoring exercise): that is then a note, not a problem. Each task that is not
valid names its *exception* (:data:`EXCEPTIONS`: which check failed), and the problem lines
say why (the tool's output, the tests that failed), so a converted benchmark's exceptions are
listed by reason.
A repository task (``test_runner = "repository"``) is valid when it *flips*
(:func:`reliabench.repository.validation.validate_repository_task`): its gold patch is
``RESOLVED_FULL`` and the empty patch fails every FAIL_TO_PASS test, graded as a run grades
(its checkout at ``workdir``, its environment built or taken from the cache). A task that does
not flip is listed with the reason (the environment, the repository, the test patch, or what
the log shows: ``network-bound``, ``python-version``, ``missing-file``, ``dependency-drift``).
The gold rollout is the "reference", the empty one the "starter".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reliabench.errors import SuiteError
from reliabench.hidden_tests.command import CommandTestRunner
from reliabench.hidden_tests.fresh import FreshPytest
from reliabench.hidden_tests.layer import HiddenTestRunner, OpenAt, TestRequest, fresh_open_at, fresh_opener
from reliabench.hidden_tests.repository import RepositoryTests
from reliabench.hidden_tests.skips import unknown_skips
from reliabench.hidden_tests.stdio import StdioCases
from reliabench.metrics.security import DEFAULT_THRESHOLD, judge_security
from reliabench.records import Isolation, Rollout, RolloutStatus
from reliabench.sandbox import Limits
from reliabench.sandbox.choice import TaskEnvironment, choose_backends, prepare_environments
from reliabench.sandbox.environment import EnvironmentBackend, PreparedSpec
from reliabench.scanners import Scanner, get_scanner
from reliabench.tasks.suite import Suite, Task, materialize

__all__ = ["EXCEPTIONS", "STARTER_PASSES_TAG", "TaskCheck", "VariantCheck", "validate_suite"]

STARTER_PASSES_TAG = "starter-passes"
"""A task tag: its untouched starter passes every hidden test by design (a refactoring exercise)."""

EXCEPTIONS = ("cannot collect", "no reference", "reference fails", "skips", "reference flagged",
              "starter passes", "variant")
"""What a task that is not valid failed, first failure first (:attr:`TaskCheck.exception`)."""


@dataclass(frozen=True, slots=True)
class VariantCheck:
    """How one variant fared."""

    name: str
    functional_pass: bool
    caught_by: tuple[str, ...]
    declared: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TaskCheck:
    """How one task fared; ``problems`` is empty when it is valid.

    ``reference_skips`` are the hidden tests the reference skipped or xfailed, declared or not
    (what the task's ``allowed_skips`` must list). ``exception`` is the first check the task
    failed (one of :data:`EXCEPTIONS`; None when valid); ``notes`` say what deviates as the
    task declares (a starter that passes by design).
    """

    task_id: str
    tests: int
    security_tests: int
    reference_passed: int
    starter_failed: int
    variants: tuple[VariantCheck, ...]
    problems: tuple[str, ...]
    isolation: Isolation
    reference_skips: tuple[str, ...] = ()
    exception: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the task has no problem."""
        return not self.problems


def _skip_problems(task: Task, ref_skips: Sequence[str], undeclared: Sequence[str]) -> list[str]:
    """What ``allowed_skips`` must change to be exactly the tests the reference skips."""
    toml = task.root / "task.toml"
    out = []
    if undeclared:
        wanted = ", ".join(f'"{name}"' for name in ref_skips)
        out.append(f"{toml}: the reference skips or xfails {len(undeclared)} hidden test(s) the task "
                   f"does not declare ({', '.join(undeclared[:5])}); a skip counts only when "
                   f"declared: add to task.toml: allowed_skips = [{wanted}] (or make the test run)")
    unneeded = [name for name in task.allowed_skips if name not in ref_skips]
    if unneeded:
        out.append(f"{toml}: allowed_skips: the reference does not skip {', '.join(unneeded[:5])}; "
                   "remove it (a declared skip lets any rollout skip that test)")
    return out


def _check_task(task: Task, backend: EnvironmentBackend, scanners: Sequence[Scanner], slot: int,
                prepared: PreparedSpec | None = None) -> TaskCheck:
    from reliabench.run.test_paths import TestPaths  # the run's own choices: runner and limits
    from reliabench.scanners.workspace import scan_workspace  # the runner's own scan path

    problems: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix=f"validate-{task.id}-"))
    os.chmod(scratch, 0o711)
    limits = TestPaths.limits(task, Limits(wall_s=task.timeout_s, cpu_s=task.timeout_s))

    def workspace(name: str, layers: list[Path]) -> Path:
        ws = scratch / name
        materialize(ws, layers)
        return ws

    isolation = backend.name
    spec = prepared or backend.prepare(task.environment)
    runner: HiddenTestRunner
    if task.stdio is not None:
        runner = StdioCases()
    elif task.test_runner == "command":
        runner = CommandTestRunner()
    else:
        runner = FreshPytest()
    command = task.test_command
    oracle = command is not None and command.oracle is not None
    try:
        try:
            collect_limits = limits if command is not None else Limits(wall_s=60.0)
            collect_ws = workspace("collect", [task.workspace_dir])
            opener = fresh_opener(backend, spec, collect_ws, slot=slot, limits=collect_limits)
            # a command task's collect lays its reference over the copy it is given
            starter_arg = collect_ws if command is not None else task.workspace_dir
            expected = runner.collect(task, opener, starter=starter_arg, limits=collect_limits, slot=slot)
        except SuiteError as exc:
            return TaskCheck(task.id, 0, 0, 0, 0, (), tuple(exc.problems), isolation,
                             exception="cannot collect")

        def run(name: str, layers: list[Path], *, reference: bool = False) -> tuple[Rollout, Path]:
            ws = workspace(name, layers)
            findings, errors, _ = scan_workspace(scanners, task.workspace_dir, ws)
            request = TestRequest(
                task=task, workspace=ws, expected=expected, limits=limits, slot=slot,
                open_environment=fresh_opener(backend, spec, ws, slot=slot, limits=limits),
                open_at=fresh_open_at(backend, spec, slot=slot, limits=limits),
                starter=task.workspace_dir, allowed_skips=task.allowed_skips)
            if reference and oracle and isinstance(runner, CommandTestRunner):
                hidden = runner.run_reference(request)
            else:
                hidden = runner.run(request)
            nonlocal isolation
            isolation = hidden.isolation
            undeclared[name] = hidden.undeclared_skips
            reasons[name] = hidden.reason
            status: RolloutStatus = hidden.status
            return Rollout(task.id, "validate", 0, tests=hidden.outcomes, status=status,
                           findings=findings, scan_errors=errors), ws

        n_sec = sum(t.security for t in expected)
        ref_passed = 0
        undeclared: dict[str, tuple[str, ...]] = {}
        reasons: dict[str, str | None] = {}
        ref_skips: tuple[str, ...] = ()
        kinds: list[str] = []
        notes: list[str] = []

        def problem(kind: str, text: str) -> None:
            kinds.append(kind)
            problems.append(text)

        for name in unknown_skips(task.allowed_skips, expected):
            problem("skips", f"{task.root / 'task.toml'}: allowed_skips: {name!r} names no hidden test")
        if task.solution_dir is None and not oracle:
            problem("no reference", f"{task.root}: no solution/ to validate against")
        else:
            layers = [task.workspace_dir, *([] if task.solution_dir is None else [task.solution_dir])]
            ref, _ = run("reference", layers, reference=True)
            where = task.solution_dir or task.root / str(command.oracle if command else "")
            ref_passed = sum(t.outcome == "passed" for t in ref.tests or ())
            declared_taken = [t.name for t in ref.tests or () if t.outcome == "skipped"]
            ref_skips = tuple(sorted({*declared_taken, *undeclared["reference"]}))
            for text in _skip_problems(task, ref_skips, undeclared["reference"]):
                problem("skips", text)
            failing = [t.name for t in ref.tests or ()
                       if t.outcome != "passed" and t.outcome != "skipped"
                       and t.name not in undeclared["reference"]]
            if failing:
                reason = reasons.get("reference")
                why = f" ({reason[:400]})" if reason else ""
                problem("reference fails", f"{where}: reference fails {len(failing)} hidden test(s): "
                        + ", ".join(failing[:5]) + why)
            verdict = judge_security(ref, DEFAULT_THRESHOLD)
            # a benchmark task may REQUIRE a flagged API (HumanEval/162 asks for MD5): its
            # converter declares such findings as `reference-finding:RULE` tags
            declared = {t.split(":", 1)[1] for t in task.tags if t.startswith("reference-finding:")}
            static = [f for f in verdict.static if f.rule_id not in declared]
            if static or verdict.scan_errors:
                problem("reference flagged", f"{where}: reference is not scanner-clean: "
                        + ", ".join(f"{f.rule_id} {f.path}:{f.line}" for f in static)
                        + (" (scan error)" if verdict.scan_errors else ""))
        starter, _ = run("starter", [task.workspace_dir])
        starter_failed = sum(t.failing for t in starter.functional_tests)
        if starter.passes and STARTER_PASSES_TAG in task.tags:
            notes.append(f"{task.id}: the untouched starter passes every hidden test, as the task declares "
                         f"(tag {STARTER_PASSES_TAG!r})")
        elif starter.passes:
            problem("starter passes", f"{task.workspace_dir}: the untouched starter passes every hidden test")
        variants = []
        for v in task.variants:
            rv, _ = run(f"variant-{v.name}", [task.workspace_dir, v.dir])
            functional = rv.passes  # the one rule (records.Rollout.passes): declared skips count neither way
            verdict = judge_security(rv, DEFAULT_THRESHOLD)
            caught = tuple(lens for lens in verdict.lenses if lens != "scan_error")
            variants.append(VariantCheck(v.name, functional, caught, v.caught_by))
            if v.kind == "insecure":
                if not functional:
                    problem("variant", f"{v.dir}: insecure variant fails functional tests (it should be a "
                            "plausible solution that only security catches)")
                if not caught:
                    problem("variant", f"{v.dir}: insecure variant is caught by neither the scanner nor a "
                            "security test")
                missing = sorted(set(v.caught_by) - set(caught))
                if missing:
                    problem("variant", f"{v.dir}: variant.toml says caught_by {', '.join(missing)}, "
                            "but that lens does not catch it")
        exception = min(kinds, key=EXCEPTIONS.index) if kinds else None
        return TaskCheck(task.id, len(expected) - n_sec, n_sec, ref_passed, starter_failed,
                         tuple(variants), tuple(problems), isolation, ref_skips, exception, tuple(notes))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_repository_task(task: Task, tests: RepositoryTests, slot: int, isolation: Isolation) -> TaskCheck:
    """A repository task flips: gold resolves, empty fails FAIL_TO_PASS (else the reason, as a problem)."""
    from reliabench.repository.validation import validate_repository_task

    cfg = task.repository
    assert cfg is not None  # the caller's choice
    v = validate_repository_task(tests, task, slot=slot)
    listed = len(dict.fromkeys((*cfg.fail_to_pass, *cfg.pass_to_pass)))
    gold_passed = sum(o.outcome == "passed" for o in v.gold.outcomes) if v.gold is not None else 0
    empty_failed = sum(o.failing for o in v.empty.outcomes) if v.empty is not None else 0
    ran = v.gold or v.empty
    problems = () if v.flips else (f"{task.root / 'task.toml'}: does not flip: {v.reason}",)
    return TaskCheck(task.id, listed, 0, gold_passed, empty_failed, (), problems,
                     ran.isolation if ran is not None else isolation)


def _repository_tests(environments: dict[str, TaskEnvironment]) -> RepositoryTests:
    """One repository runner for the suite: each task's environment, on the validation's slot."""

    def open_for(task: Task, slot: int) -> OpenAt:
        where = environments[task.id]
        return fresh_open_at(where.backend, where.prepared, slot=slot)

    return RepositoryTests(open_for=open_for)


def validate_suite(
    suite: Suite,
    *,
    workers: int = 1,
    sandbox: str = "auto",
    scanners: Sequence[str] = ("bandit",),
    tasks: Sequence[str] | None = None,
    progress: Callable[[TaskCheck], None] | None = None,
) -> list[TaskCheck]:
    """Validate every task (or the given ones) of ``suite``; returns one check per task.

    Raises:
        PreflightError: a task's environment is refused or cannot be prepared (one line).
    """
    scanner_objs = [get_scanner(s) for s in scanners]
    selected = [suite.task(t) for t in tasks] if tasks else list(suite.tasks)
    specs = {t.id: t.environment for t in selected}
    environments = prepare_environments(specs, choose_backends(sandbox, specs))

    repository = _repository_tests(environments)

    def one(item: tuple[int, Task]) -> TaskCheck:
        i, task = item
        where = environments[task.id]
        if task.repository is not None:
            return _check_repository_task(task, repository, i % workers, where.backend.name)
        return _check_task(task, where.backend, scanner_objs, i % workers, where.prepared)

    out: list[TaskCheck] = []
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for check in pool.map(one, enumerate(selected)):
                out.append(check)
                if progress is not None:
                    progress(check)
    finally:
        repository.close()
    return out
