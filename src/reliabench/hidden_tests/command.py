"""Hidden tests run by a language's own test tool, one outcome per test from the tool's report.

:class:`CommandTestRunner` is the :class:`~reliabench.hidden_tests.layer.HiddenTestRunner` of
``test_runner = "command"`` tasks (:mod:`reliabench.tasks.test_command`). One run:

1. **The test tree.** The agent's workspace is copied aside (regular files and folders only,
   no link followed, bounded, modes and mtimes kept) and laid over IN PLACE: the task's
   ``ignore`` paths (build outputs) are dropped; every entry named in its ``tamper`` list (a
   ``.cargo`` config, a ``jest.config.js``, a ``node_modules``), anything named
   ``.reliabench*``, and every link, FIFO or socket is removed and FLAGGED. The hidden tests
   (the task's ``tests/`` folder) are laid over at their relative paths: an agent file at a
   test path that differs from the starter's is replaced and flagged (``tamper_files``).
   Every file then gets the current mtime (no cached build can look newer than a source),
   and the toolchain's links (the shared ``node_modules``) are laid last. When the run is
   over -- whatever happened -- the workspace is emptied and the copy put back: the caller
   finds the agent's files as they were, and the tests ran on a copy of them. (In place,
   because the environment a request opens shows that workspace: its ``workdir`` is where
   the tests run and what ``copy_out`` may read.)
2. **The folders of the run**, made by the harness inside the tree after the copy, where the
   agent phase never could write: ``{report_dir}`` (``.reliabench-report``) and
   ``{scratch}`` (``.reliabench-scratch``: build outputs, the tool's caches, ``HOME``), seeded
   from the task's trusted compile cache (:mod:`reliabench.hidden_tests.toolchains`).
3. **The command** runs in the environment the request opens on the workspace (the toolchain's
   folders shown read-only), in its ``workdir``, with the toolchain's variables, the task's
   ``env``, the limits of the request (the command's ``timeout_s`` caps the wall time;
   :data:`COMMAND_LIMITS` are what the converted polyglot suite needs: a C++ exercise starts
   1000 threads, a JVM reserves more address space than 2 GiB).
4. **The report** is read from the environment with ``copy_out`` (bounded to
   :data:`~reliabench.hidden_tests.reports.MAX_REPORT_BYTES`, no link followed), or from the
   command's standard output, and parsed by the task's report format; a format that raises
   is a problem, never an exception.
5. **Grading.** Each expected test gets exactly one outcome: the report's, or ``failed`` when
   the report does not list it (it did not run: a crash, a build failure, a report that was
   never written, cut or forged away). A skip the task does not declare is ``failed``
   (:mod:`reliabench.hidden_tests.skips`). Tests the report lists that are not expected are
   ignored (the reason says how many). An ``exit-code`` task has one test, ``exit-code``;
   its run is *coarse* (:attr:`CommandRun.coarse`).

**Tasks in a container image** (``[environment] image`` or ``dockerfile``) run their command
in the image: the toolchain is the image's (no host folder is mounted, no link laid, the
image's own variables -- ``ENV`` lines, its ``PATH`` -- come first). **A verifier's place**
(``tests_at``, Harbor / Terminal-Bench): the workspace is not laid over, copied aside or
restored -- the tests inspect the machine the agent left -- the task's ``tests/`` are copied
into the environment at ``tests_at`` (what was there removed first), ``report_dir`` is
emptied and made, and the report is read from there (:func:`verifier_run`). A task's
``oracle`` script (its folder at ``/solution``) runs in the environment before the tests of
the reference's runs.

Expected tests (:meth:`CommandTestRunner.collect`) are learnt by running the command on the
REFERENCE solution (``solution/`` over the starter, the task's trusted files) and taking the
names its report lists, leaves only (a Go test with subtests counts through its subtests).
Why the reference and not the starter, as for pytest: the tools here enumerate tests only by
building them, and a starter often does not build (Rust starters that do not compile,
C++ stubs without the functions the tests call), so it lists nothing; the reference is the one
workspace the task promises to pass, so its report lists every test the task has. A task
without a reference is collected on its starter. When that run lists no test (the reference
does not build here, the exercise has no tests), the task is refused (``SuiteError``) before
any rollout: grading rollouts against a partial list would be wrong. The same run fills the
task's trusted cache.

What the tested process can forge is documented in ``docs/threat-model.md`` ("Test commands"):
the tool runs the agent's code in its own process, so that code can write the report
itself; the report folder and file are fresh per run and outside the agent phase's reach, a
name reported twice keeps its worst outcome, and counts that disagree set ``forged``.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from reliabench.errors import SandboxError, SuiteError
from reliabench.files.untrusted import open_regular, read_bounded, remove_tree, walk_tree
from reliabench.hidden_tests.fresh import HiddenTestRun, HiddenTestStatus
from reliabench.hidden_tests.layer import EnvironmentOpener, TestRequest
from reliabench.hidden_tests.reports import (
    MAX_REPORT_BYTES,
    ParsedReport,
    ReportInput,
    get_report_format,
    parse_report,
)
from reliabench.hidden_tests.skips import ReportedOutcome, judge_skips
from reliabench.hidden_tests.toolchains import (
    Toolchain,
    TrustedCache,
    missing_toolchain,
    toolchain_for,
    toolchains_root,
)
from reliabench.meta_keys import TestPath
from reliabench.records import TestOutcome
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult, minimal_env
from reliabench.sandbox.environment import Environment, Mount
from reliabench.tasks.suite import materialize, suite_files
from reliabench.tasks.test_command import TestCommand

if TYPE_CHECKING:
    from reliabench.tasks.suite import Task

__all__ = [
    "COMMAND_LIMITS",
    "ORACLE_AT",
    "HARNESS_PREFIX",
    "REPORT_DIR",
    "SCRATCH_DIR",
    "CommandRun",
    "CommandTestRunner",
    "TestTree",
    "WorkspaceTooLargeError",
    "command_limits",
    "copy_files",
    "grade",
    "lay_test_tree",
    "report_disagreements",
]

COMMAND_LIMITS: Final = Limits(wall_s=180.0, cpu_s=600.0, memory_bytes=32 << 30, max_procs=4096,
                               file_size_bytes=1 << 30, output_bytes=1 << 20, tmp_bytes=512 << 20)
"""Limits the test commands of the polyglot suite need. ``RLIMIT_AS`` counts address space, not
memory: the C++ bank-account's 1000 threads reserve 8 GiB of stacks, a Node worker thread
reserves a V8 code range (parallel-letter-frequency's workers need more than 24 GiB);
``RLIMIT_NPROC`` counts threads."""
ORACLE_AT: Final = "/solution"
"""Where a task's ``oracle`` folder is copied in the environment (Harbor's place for ``solution/``)."""
HARNESS_PREFIX: Final = ".reliabench"
"""Entries of a test tree with this prefix are the harness's: an agent's is removed and flagged."""
REPORT_DIR: Final = ".reliabench-report"
SCRATCH_DIR: Final = ".reliabench-scratch"
_COPY_BYTES: Final = 1 << 30
"""The largest agent workspace copied aside for a test run (larger: its tests fail)."""
_LOG_BYTES: Final = 64 * 1024
_NOT_FOUND: Final = 127


def command_limits(limits: Limits) -> Limits:
    """``limits`` raised to at least :data:`COMMAND_LIMITS`, its wall time kept (a run's ``--test-timeout``).

    Example:
        >>> command_limits(Limits(wall_s=30.0)).memory_bytes == COMMAND_LIMITS.memory_bytes
        True
        >>> command_limits(Limits(wall_s=30.0)).wall_s
        30.0
    """
    c = COMMAND_LIMITS
    return replace(limits, cpu_s=max(limits.cpu_s, c.cpu_s),
                   memory_bytes=max(limits.memory_bytes, c.memory_bytes),
                   max_procs=max(limits.max_procs, c.max_procs),
                   file_size_bytes=max(limits.file_size_bytes, c.file_size_bytes),
                   output_bytes=max(limits.output_bytes, c.output_bytes),
                   tmp_bytes=max(limits.tmp_bytes, c.tmp_bytes))


class WorkspaceTooLargeError(SandboxError):
    """The agent's workspace is larger than a test tree may be (its tests count as failed)."""


@dataclass(frozen=True, slots=True)
class TestTree:
    """A workspace made ready for a test command (steps 1 and 2 of the module docstring).

    Attributes:
        root: The workspace (host path) the tests were laid over.
        report_dir: The fresh report folder inside it.
        scratch: The fresh scratch folder inside it.
        tamper_files: Entries of the agent's workspace that were removed or replaced, sorted.
    """

    __test__ = False  # not a pytest test class

    root: Path
    report_dir: Path
    scratch: Path
    tamper_files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """One run of a task's test command, before grading.

    Attributes:
        report: What the report said.
        result: The command's result.
        tamper_files: Entries of the agent's workspace that were removed or replaced.
        coarse: One outcome per run (``exit-code``), not per test.
    """

    report: ParsedReport
    result: SandboxResult
    tamper_files: tuple[str, ...]
    coarse: bool


def _same_file(a: Path, b: Path) -> bool:
    da = read_bounded(a, 64 << 20)
    return da is not None and da == read_bounded(b, 64 << 20)


def _drop(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        remove_tree(path)
    elif os.path.lexists(path):
        path.unlink()


def copy_files(source: Path, target: Path, *, max_bytes: int) -> None:
    """Copy the regular files and folders of ``source`` into ``target`` with their modes and mtimes.

    No link is followed or copied (nor FIFO, socket, device); at most ``max_bytes`` in all.

    Raises:
        SandboxError: More than ``max_bytes``.
    """
    total = 0
    target.mkdir(parents=True, exist_ok=True)
    for entry in walk_tree(source):
        src, dst = source / entry.rel, target / entry.rel
        if entry.kind == "dir":
            dst.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "file":
            dst.parent.mkdir(parents=True, exist_ok=True)
            with open_regular(src, under=source) as fh, open(dst, "wb") as out:
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
                    if total > max_bytes:
                        raise SandboxError(f"copying {source}: more than {max_bytes} bytes")
                    out.write(chunk)
                st = os.fstat(fh.fileno())
            os.chmod(dst, stat.S_IMODE(st.st_mode) & 0o755)
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def _clear(folder: Path) -> None:
    for entry in list(os.scandir(folder)):
        _drop(Path(entry.path))


def lay_test_tree(workspace: Path, task: Task, command: TestCommand, toolchain: Toolchain, *,
                  starter: Path | None) -> TestTree:
    """Make ``workspace`` the test tree IN PLACE (the caller restores it): drop, flag, lay over.

    Args:
        workspace: The folder to prepare (a copy of the agent's workspace, or the workspace
            itself when the caller keeps a copy to restore).
        task: The task (its ``tests/`` folder is laid over).
        command: The task's test command (its ``ignore`` and ``tamper`` lists).
        toolchain: The language's toolchain (its links are laid last).
        starter: The starter workspace: a test path the agent left as the starter has it
            is not flagged.

    Returns:
        The tree, its fresh report and scratch folders, and the flagged entries.
    """
    flagged: set[str] = set()
    for rel in command.ignore:
        _drop(workspace / rel)
    tamper_names = set(command.tamper) | set(toolchain.links)
    for entry in list(walk_tree(workspace)):
        name = entry.rel.rsplit("/", 1)[-1]
        hit = name in tamper_names or name.startswith(HARNESS_PREFIX) or entry.kind not in ("file", "dir")
        if hit and os.path.lexists(workspace / entry.rel):
            flagged.add(entry.rel)  # a link or FIFO of the agent's is never left for the tools either
            _drop(workspace / entry.rel)
    for test in suite_files(task.tests_dir):
        rel_path = test.relative_to(task.tests_dir)
        target = workspace / rel_path
        for parent in reversed(rel_path.parents[:-1]):  # an agent FILE where the tests need a folder
            if os.path.lexists(workspace / parent) and not (workspace / parent).is_dir():
                flagged.add(parent.as_posix())
                _drop(workspace / parent)
        if os.path.lexists(target):
            original = starter / rel_path if starter is not None else None
            if original is None or not target.is_file() or not _same_file(original, target):
                flagged.add(rel_path.as_posix())
            _drop(target)
    materialize(workspace, [task.tests_dir])
    now = time.time_ns()
    for entry in walk_tree(workspace):  # every source newer than any cached build (cargo's mtimes)
        if entry.kind == "file":
            os.utime(workspace / entry.rel, ns=(now, now), follow_symlinks=False)
    for name, source in toolchain.links.items():
        _drop(workspace / name)
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(source, workspace / name)
    report_dir, scratch = workspace / REPORT_DIR, workspace / SCRATCH_DIR
    report_dir.mkdir()
    scratch.mkdir()
    (scratch / "home").mkdir()
    for rel, source in toolchain.files.items():
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, scratch / rel)
    return TestTree(workspace, report_dir, scratch, tuple(sorted(flagged)))


def _report_dir(command: TestCommand, workdir: str) -> str:
    """Where the command writes its report, as the environment sees it."""
    return command.report_dir or f"{workdir}/{REPORT_DIR}"


def _substitute(value: str, workdir: str, toolchains: Path, report_dir: str | None = None) -> str:
    report_dir = report_dir or f"{workdir}/{REPORT_DIR}"
    return (value.replace("{workdir}", workdir).replace("{report_dir}", report_dir)
            .replace("{scratch}", f"{workdir}/{SCRATCH_DIR}").replace("{toolchains}", str(toolchains)))


_FRESH_DIRS: Final = (
    'for d in "$@"; do '
    'if [ -d "$d" ] && [ ! -L "$d" ]; then rm -rf -- "$d"/* "$d"/.[!.]* "$d"/..?* || exit 1; '
    'else rm -f -- "$d" && mkdir -p -- "$d" || exit 1; fi; done')
"""``sh -c`` script: every folder named is emptied in place (made, when it is missing or not a folder).

In place, because a container without capabilities may own a folder it could not make again
(``/tests`` in a root folder that is not writable)."""


class CommandTestRunner:
    """Runs ``test_runner = "command"`` tasks (see the module docstring).

    Args:
        toolchains: The toolchains folder (default:
            :func:`~reliabench.hidden_tests.toolchains.toolchains_root`).
        cache_root: Where trusted compile caches live (default:
            :func:`~reliabench.hidden_tests.toolchains.cache_root`).
        use_cache: Seed runs from the trusted caches and fill them from collect runs.
    """

    path: TestPath = "command"

    def __init__(self, *, toolchains: Path | None = None, cache_root: Path | None = None,
                 use_cache: bool = True) -> None:
        self._toolchains = toolchains or toolchains_root()
        self._cache_root = cache_root
        self._use_cache = use_cache

    # ------------------------------------------------------------------ the protocol

    def collect(self, task: Task, open_environment: EnvironmentOpener, *, starter: Path,
                limits: Limits, slot: int) -> tuple[TestOutcome, ...]:
        """The task's expected tests: the leaves the report of a run on the reference lists.

        ``open_environment`` opens an environment on ``starter``, whose content is replaced
        for the run (the reference over the starter) and restored after it.

        Raises:
            SuiteError: The task is no command task, or no run lists any test.
            SandboxError: The toolchain is missing, or the environment did not start.
        """
        command = self._command(task)
        if (command.tests_at or command.report_dir or command.oracle) and task.environment.kind == "host":
            raise SuiteError([f"{task.root / 'task.toml'}: test_command: tests_at, report_dir and oracle "
                              "work in a container: the task needs an [environment] image or dockerfile"])
        why = missing_toolchain(self.toolchain(task))
        if why is not None:
            raise SandboxError(why)
        if os.path.realpath(starter) == os.path.realpath(task.workspace_dir) or _under(starter, task.root):
            raise SandboxError(f"collect lays the reference over the folder it is given: {starter} is the "
                               "task's own starter (give a copy)")
        fmt = get_report_format(command.report)
        if fmt.coarse:  # one test, named by the format, whatever runs
            return tuple(TestOutcome(c.name, "skipped") for c in fmt.parse(ReportInput(None)).cases)
        with tempfile.TemporaryDirectory(prefix="rb-collect-") as tmp:
            pristine = Path(tmp) / "starter"
            copy_files(starter, pristine, max_bytes=_COPY_BYTES)
            has_reference = task.solution_dir is not None or command.oracle is not None
            label = "reference" if has_reference else "starter"
            _clear(starter)
            materialize(starter, [pristine] if task.solution_dir is None else [pristine, task.solution_dir])
            try:
                run = self.execute(task, starter, open_environment, starter=pristine, limits=limits,
                                   slot=slot, trusted=True, oracle=command.oracle is not None)
            finally:
                _clear(starter)
                copy_files(pristine, starter, max_bytes=_COPY_BYTES)
        leaves = [c.name for c in run.report.cases if not c.has_children]
        if not leaves:
            raise SuiteError([f"{task.tests_dir}: the test command lists no test on the {label} (exit status "
                              f"{run.result.returncode}): {'; '.join(run.report.problems)[:300]} "
                              f"{_tail(run.result, 300)}"])
        return tuple(TestOutcome(name, "skipped") for name in leaves)

    def run(self, request: TestRequest) -> HiddenTestRun:
        """Run the hidden tests of one rollout; the agent's failures are outcomes.

        The request's workspace is laid over in place and restored when the run is over.

        Raises:
            SandboxError: The environment could not be started.
        """
        try:
            run = self.execute(request.task, request.workspace, request.open_environment,
                               starter=request.starter, limits=request.limits, slot=request.slot)
        except WorkspaceTooLargeError as exc:  # the agent's doing: its tests fail, the run goes on
            outcomes = tuple(TestOutcome(t.name, "failed", t.security) for t in request.expected)
            return HiddenTestRun(outcomes, "completed", str(exc), False, (), False, "none", 0.0, "")
        return grade(run, request.expected, request.allowed_skips)

    def run_reference(self, request: TestRequest) -> HiddenTestRun:
        """:meth:`run` with the task's ``oracle`` run in the environment first (``validate``'s reference).

        Raises:
            SandboxError: The environment could not be started.
        """
        command = self._command(request.task)
        run = self.execute(request.task, request.workspace, request.open_environment,
                           starter=request.starter, limits=request.limits, slot=request.slot,
                           oracle=command.oracle is not None)
        return grade(run, request.expected, request.allowed_skips)

    def close(self) -> None:
        """Nothing is held between runs."""

    # ------------------------------------------------------------------ the work

    def toolchain(self, task: Task) -> Toolchain:
        """The host toolchain of the task's language; an empty one for a task in an image (the image's)."""
        if task.environment.kind != "host":
            return Toolchain(task.language)
        return toolchain_for(task.language, self._toolchains)

    def _command(self, task: Task) -> TestCommand:
        if task.test_command is None:
            raise SuiteError([f"{task.root}: not a test_runner = 'command' task"])
        return task.test_command

    def execute(self, task: Task, workspace: Path, open_environment: EnvironmentOpener, *,
                starter: Path | None, limits: Limits, slot: int, trusted: bool = False,
                oracle: bool = False) -> CommandRun:
        """Lay the tests over ``workspace``, run the command there, read the report, restore it.

        The agent's files are copied aside first and put back (modes and mtimes kept) when
        the run is over, whatever happened: the caller finds ``workspace`` as it was. A task
        with ``tests_at`` is run by :func:`verifier_run` instead (the workspace untouched).

        Args:
            task: A command task.
            workspace: The workspace to test; ``open_environment`` opens an environment on it.
            open_environment: Opens the environment (given the toolchain's mounts).
            starter: The starter workspace (for the tamper check), if known.
            limits: Limits of the command (its ``timeout_s`` caps the wall time).
            slot: The worker slot.
            trusted: ``workspace`` holds the task's own files (collect): its build fills the
                task's trusted cache.
            oracle: Run the task's ``oracle`` in the environment before the tests.

        Raises:
            SandboxError: The environment could not be started.
        """
        command = self._command(task)
        if command.tests_at is not None:
            return verifier_run(task, command, open_environment, limits=limits, oracle=oracle)
        toolchain = self.toolchain(task)
        cache = TrustedCache.of(task.root, toolchain, self._cache_root) if self._use_cache else None
        base = Path(tempfile.mkdtemp(prefix="rb-cmdtests-"))
        saved = base / "agent"
        try:
            try:
                copy_files(workspace, saved, max_bytes=_COPY_BYTES)
            except SandboxError as exc:
                raise WorkspaceTooLargeError(f"the workspace was not tested: {exc}") from None
            try:
                tree = lay_test_tree(workspace, task, command, toolchain, starter=starter)
                if cache is not None:
                    cache.seed(tree.scratch)
                wall = limits.wall_s if command.timeout_s is None else min(limits.wall_s, command.timeout_s)
                run_limits = replace(limits, wall_s=wall)
                env = open_environment([Mount(m) for m in toolchain.mounts if m.exists()])
                try:
                    variables = self._env(command, toolchain, env)
                    problems: list[str] = []
                    if oracle:
                        problems = _run_oracle(env, task, command, base, variables, run_limits)
                    result = _fresh_places(env, command, variables)
                    if result is None:
                        argv = self._argv(command, env.workdir)
                        result = env.exec(argv, env=variables, limits=run_limits)
                        data, truncated, problem = _read_report(env, command, result, base, run_limits)
                    else:
                        data, truncated = None, False
                        problem = f"the report folder could not be made: {_tail(result, 200)}"
                finally:
                    env.close()
                parsed = _parsed(command, data, result, env.workdir, truncated, [*problems, problem])
                if trusted and cache is not None and result.returncode is not None:
                    cache.harvest(tree.scratch)
                return CommandRun(parsed, result, tree.tamper_files, command.coarse)
            finally:
                _clear(workspace)
                copy_files(saved, workspace, max_bytes=_COPY_BYTES)
        finally:
            remove_tree(base)

    def _argv(self, command: TestCommand, workdir: str) -> list[str]:
        return _command_argv(command, workdir, self._toolchains)

    def _env(self, command: TestCommand, toolchain: Toolchain, env: Environment) -> dict[str, str]:
        workdir = env.workdir
        variables = {"PATH": DEFAULT_PATH, **_image_env(env), "HOME": f"{workdir}/{SCRATCH_DIR}/home",
                     "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "CI": "1", "TMPDIR": "/tmp"}
        report_dir = _report_dir(command, workdir)
        for extra in (toolchain.env, command.env):
            variables.update({k: _substitute(v, workdir, self._toolchains, report_dir)
                              for k, v in extra.items()})
        return variables


def _under(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")


def _image_env(env: Environment) -> dict[str, str]:
    """The variables the environment's image sets (its ``ENV`` lines); none on the host."""
    if env.image is None:
        return {}
    found = getattr(env, "image_env", None)  # a container environment's (reliabench.sandbox.containers)
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _command_argv(command: TestCommand, workdir: str, toolchains: Path) -> list[str]:
    report_dir = _report_dir(command, workdir)
    argv = [_substitute(a, workdir, toolchains, report_dir) for a in command.argv]
    if command.cwd != ".":
        # the environment runs in its workdir; the command's own directory is entered by a shell
        argv = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", f"{workdir}/{command.cwd}", *argv]
    return argv


def _fresh_places(env: Environment, command: TestCommand, variables: dict[str, str]) -> SandboxResult | None:
    """Empty the absolute places of a command (``report_dir``, ``tests_at``), made where missing.

    Returns:
        None when done (or nothing to do), else the failed command's result.
    """
    places = [p for p in (command.report_dir, command.tests_at) if p]
    if not places:
        return None
    result = env.exec(["sh", "-c", _FRESH_DIRS, "sh", *places], cwd="/", env=variables,
                      limits=Limits(wall_s=60.0))
    return None if result.returncode == 0 else result


def _run_oracle(env: Environment, task: Task, command: TestCommand, base: Path, variables: dict[str, str],
                limits: Limits) -> list[str]:
    """Run the task's ``oracle`` in ``env`` (its folder at :data:`ORACLE_AT`); its problems, if any."""
    assert command.oracle is not None
    script = task.root / command.oracle
    staged = base / "oracle"
    copy_files(script.parent, staged, max_bytes=_COPY_BYTES)
    _readable(staged)
    env.copy_in(staged, ORACLE_AT)
    result = env.exec(["bash", f"{ORACLE_AT}/{script.name}"], env=variables, limits=limits)
    if result.returncode == 0 and not result.timed_out:
        return []
    return [f"the oracle {command.oracle} failed (exit status {result.returncode}"
            f"{', out of time' if result.timed_out else ''}): {_tail(result, 200)}"]


def _readable(folder: Path) -> None:
    """Make a staged folder readable by any uid (an environment's user copies or reads it)."""
    os.chmod(folder, 0o755)
    for entry in walk_tree(folder):
        os.chmod(folder / entry.rel, 0o755 if entry.kind == "dir" else 0o644)


def _read_report(env: Environment, command: TestCommand, result: SandboxResult, base: Path,
                 limits: Limits) -> tuple[bytes | None, bool, str | None]:
    """The report's bytes (None: none was written), whether they were cut, and a problem."""
    if command.report_file == "stdout":
        # the backend cut a stream longer than the output limit in the middle (head and tail kept)
        return result.stdout.encode("utf-8"), len(result.stdout) >= limits.output_bytes, None
    target = base / "report"
    try:
        env.copy_out(f"{_report_dir(command, env.workdir)}/{command.report_file}", target,
                     max_bytes=MAX_REPORT_BYTES)
    except FileNotFoundError:
        return None, False, None
    except SandboxError as exc:
        return None, False, f"the report could not be read: {exc}"
    data = read_bounded(target, MAX_REPORT_BYTES)
    if data is None:
        return None, False, "the report is not a regular file (never followed)"
    return data, False, None


def verifier_run(task: Task, command: TestCommand, open_environment: EnvironmentOpener, *, limits: Limits,
                 oracle: bool = False) -> CommandRun:
    """Run a task whose tests go to ``tests_at`` (a verifier's place, see the module docstring).

    The environment is opened with no mount; the workspace is neither copied nor changed by
    the harness. In it: the task's ``oracle`` (``oracle=True``), then ``report_dir`` emptied and
    made and ``tests_at`` emptied, the tests copied to ``tests_at``, the command, the report
    read. A place the harness cannot empty in the agent's machine fails the rollout (the
    machine is the agent's); a copy that fails is the harness's (``SandboxError``).

    Raises:
        SandboxError: The environment could not be started, is not a container, or the tests
            could not be copied in.
    """
    assert command.tests_at is not None
    base = Path(tempfile.mkdtemp(prefix="rb-verifier-"))
    os.chmod(base, 0o711)
    try:
        staged = base / "tests"
        copy_files(task.tests_dir, staged, max_bytes=_COPY_BYTES)
        _readable(staged)
        wall = limits.wall_s if command.timeout_s is None else min(limits.wall_s, command.timeout_s)
        run_limits = replace(limits, wall_s=wall)
        env = open_environment([])
        try:
            if env.image is None:
                raise SandboxError(f"task {task.id}: tests_at = {command.tests_at!r} needs a container "
                                   f"environment, got {env.backend}")
            report_dir = _report_dir(command, env.workdir)
            variables = {**minimal_env(), **_image_env(env), "CI": "1"}
            variables.update({k: _substitute(v, env.workdir, toolchains_root(), report_dir)
                              for k, v in command.env.items()})
            problems: list[str] = []
            if oracle:
                problems = _run_oracle(env, task, command, base, variables, run_limits)
            result = _fresh_places(env, command, variables)
            data: bytes | None = None
            truncated, problem = False, None
            if result is not None:
                problem = f"the verifier's folders could not be made afresh: {_tail(result, 200)}"
            else:
                env.copy_in(staged, command.tests_at)
                result = env.exec(_command_argv(command, env.workdir, toolchains_root()), env=variables,
                                  limits=run_limits)
                data, truncated, problem = _read_report(env, command, result, base, run_limits)
        finally:
            env.close()
        parsed = _parsed(command, data, result, env.workdir, truncated, [*problems, problem])
        return CommandRun(parsed, result, (), command.coarse)
    finally:
        remove_tree(base)


def _tail(result: SandboxResult, chars: int) -> str:
    text = (result.stdout[-chars:] + "\n" + result.stderr[-chars:]).strip()
    return text[-chars:]


def grade(run: CommandRun, expected: Sequence[TestOutcome],
          allowed_skips: Collection[str] = ()) -> HiddenTestRun:
    """One outcome per expected test from a run's report (see the module docstring, step 5).

    Args:
        run: The run.
        expected: The task's expected tests (:meth:`CommandTestRunner.collect`).
        allowed_skips: The tests whose skip the task declares.

    Returns:
        The graded run, in the order of ``expected``.
    """
    by_name = {c.name: c for c in run.report.cases}
    reported: list[tuple[str, ReportedOutcome, bool]] = []
    missing: list[str] = []
    for test in expected:
        case = by_name.get(test.name)
        if case is None:
            missing.append(test.name)
            reported.append((test.name, "failed", test.security))
        else:
            reported.append((test.name, case.outcome, test.security))
    judged = judge_skips(reported, frozenset(allowed_skips))
    result = run.result
    reasons: list[str] = []
    status: HiddenTestStatus = "completed"
    if result.timed_out:
        status = "timeout"
        reasons.append(f"the test command ran out of time ({result.wall_s:.0f} s)")
    elif result.returncode == _NOT_FOUND and not run.report.cases:
        status = "test_error"
        reasons.append(f"the test command did not start (exit status 127: a program is missing): "
                       f"{_tail(result, 200)}")
    elif result.returncode is None:
        status = "test_error"
        reasons.append(f"the test command did not run: {result.killed_reason or _tail(result, 200)}")
    if missing:
        reasons.append(f"{len(missing)} of {len(expected)} expected test(s) not in the report (not run): "
                       + ", ".join(missing[:3]))
    extra = len({c.name for c in run.report.cases if not c.has_children} - {t.name for t in expected})
    if extra:
        reasons.append(f"{extra} test(s) in the report that the task does not expect (ignored)")
    reasons += list(run.report.problems[:5])
    if judged.reason:
        reasons.append(judged.reason)
    log = (result.stdout[-_LOG_BYTES // 2:] + "\n" + result.stderr[-_LOG_BYTES // 2:]).strip()
    return HiddenTestRun(
        outcomes=judged.outcomes,
        status=status,
        reason="; ".join(reasons) or None,
        tamper_suspected=bool(run.tamper_files),
        tamper_files=run.tamper_files,
        forged=run.report.inconsistent,
        isolation=result.isolation,
        seconds=result.wall_s,
        log=log,
        undeclared_skips=judged.undeclared,
    )


def _parsed(command: TestCommand, data: bytes | None, result: SandboxResult, workdir: str, truncated: bool,
            problems: Sequence[str | None]) -> ParsedReport:
    """The report of ``command`` read from ``data`` (with its exit status unless it timed out).

    The ``problems`` that are not None come first among the report's problems.
    """
    found = [p for p in problems if p]
    parsed = parse_report(get_report_format(command.report),
                          ReportInput(data, None if result.timed_out else result.returncode,
                                      workdir=workdir, truncated=truncated))
    return replace(parsed, problems=(*found, *parsed.problems)) if found else parsed


def report_disagreements(report: ParsedReport, outcomes: Sequence[TestOutcome]) -> tuple[str, ...]:
    """Where graded outcomes disagree with what a tool's report says (an empty tuple: they agree).

    A test agrees when the report lists it ``passed`` and its outcome is ``passed``; lists it
    ``skipped`` or ``xfailed`` and it is ``skipped`` or ``failed`` (an undeclared skip fails);
    lists it ``failed`` or ``error`` and it is ``failed`` or ``error``; or does not list it
    and it is ``failed`` (it did not run). Reported tests the outcomes do not have are not
    counted (the task does not expect them).

    Example:
        >>> from reliabench.hidden_tests.reports import ReportedCase
        >>> rep = ParsedReport((ReportedCase("t::a", "passed"), ReportedCase("t::b", "failed")))
        >>> report_disagreements(rep, [TestOutcome("t::a", "passed"), TestOutcome("t::b", "passed"),
        ...                              TestOutcome("t::c", "failed")])
        ('t::b: the report says failed, the outcome is passed',)
    """
    allowed: dict[ReportedOutcome | None, tuple[str, ...]] = {
        "passed": ("passed",), "skipped": ("skipped", "failed"), "xfailed": ("skipped", "failed"),
        "failed": ("failed", "error"), "error": ("failed", "error"), None: ("failed",)}
    by_name = {c.name: c.outcome for c in report.cases if not c.has_children}
    out = []
    for test in outcomes:
        said = by_name.get(test.name)
        if test.outcome not in allowed[said]:
            out.append(f"{test.name}: the report says {said or 'nothing'}, the outcome is {test.outcome}")
    return tuple(out)
