"""The task suite format, loaded and validated in one pass that reports every problem.

::

    SUITE/suite.toml                      name, version, description; optional [environment]
                                          (the default of every task: tasks/environment_spec.py)
    SUITE/tasks/<task_id>/task.toml       id, language = "python", timeout_s, optional tags,
                                          optional test_runner = "pytest" | "plain" | "stdio" |
                                          "command" | "repository" (command: any language, a
                                          [test_command] table, see reliabench.tasks.test_command),
                                          optional allowed_skips = ["test_x.py::test_y", ...],
                                          optional [environment] (image or dockerfile, tests,
                                          workdir, user, writable_root: where it runs)
    SUITE/tasks/<task_id>/prompt.md       what the agent is asked to do
    SUITE/tasks/<task_id>/workspace/      starter files the agent sees and edits
    SUITE/tasks/<task_id>/tests/          hidden pytest tests, copied in only after the agent is done
                                          (stdio tasks: NAME.in / NAME.out case pairs instead)
    SUITE/tasks/<task_id>/solution/       optional reference files, laid over workspace/
    SUITE/tasks/<task_id>/feedback/       optional visible tests an agent may run while working
    SUITE/tasks/<task_id>/variants/<v>/   optional alternative solutions (e.g. insecure ones),
                                          each with a variant.toml: kind, cwe, caught_by, description

A suite holds regular files and directories only: a symbolic link, FIFO, socket or device
anywhere in it is a problem that :func:`load_suite` reports. A suite may come from anywhere
(a download, a converter's output, the folder a hostile run directory names), and reliabench
reads it as root: a link to a root-only file would put that file into an agent's workspace
(:func:`materialize`), the hidden tests or an export. Every read of a suite file goes through
:func:`reliabench.files.untrusted.read_file` / ``open_regular`` (no link followed below the
suite's root, size bounded), so a file swapped for a link after loading is not read either.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from reliabench.errors import SuiteError, UsageError
from reliabench.files.toml import tomllib
from reliabench.files.untrusted import file_kind, open_regular, read_file, walk_tree
from reliabench.hidden_tests.stdio_config import StdioConfig, parse_stdio_config
from reliabench.meta_keys import TEST_RUNNERS, TestRunner
from reliabench.sandbox import MAX_SECONDS
from reliabench.sandbox.environment import HOST, EnvironmentSpec
from reliabench.tasks.environment_spec import parse_environment
from reliabench.tasks.test_command import TestCommand, parse_test_command, table_line, valid_language

if TYPE_CHECKING:
    from reliabench.tasks.repository import RepositoryConfig

__all__ = ["Suite", "Task", "Variant", "bundled_suites", "hash_suite_files", "load_suite", "materialize",
           "resolve_suite", "suite_files"]

_TEST_RUNNERS: Final = TEST_RUNNERS
"""Values of a task's ``test_runner``: ``pytest`` (default), ``plain`` (top-level ``test_*``
functions without fixtures, which a lean runner may run), ``stdio`` (stdin/stdout cases, see
:mod:`reliabench.hidden_tests.stdio`)."""

BUNDLED_ROOT = Path(__file__).parent / "bundled"
_IGNORED = {"__pycache__", ".pytest_cache", ".DS_Store"}
_TOML_BYTES: Final = 1024 * 1024
"""The largest ``suite.toml`` / ``task.toml`` / ``variant.toml`` read."""
_PROMPT_BYTES: Final = 16 * 1024 * 1024
"""The largest ``prompt.md`` read."""


@dataclass(frozen=True, slots=True)
class Variant:
    """An alternative solution shipped with a task (for example a plausible insecure one).

    Attributes:
        name: Folder name under ``variants/``.
        kind: ``insecure`` (or another label).
        cwe: CWE numbers the variant exhibits.
        caught_by: What is expected to catch it: ``scanner`` and/or ``security_test``.
        description: One line for humans.
        dir: Files laid over the workspace.
    """

    name: str
    kind: str
    cwe: tuple[int, ...]
    caught_by: tuple[str, ...]
    description: str
    dir: Path


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a suite.

    ``allowed_skips`` are the hidden tests (node ids relative to ``tests/``) whose skip or xfail
    counts as ``skipped``; any other skip or xfail is a failure
    (:mod:`reliabench.hidden_tests.skips`). ``environment`` is where the task runs (its
    ``[environment]`` table or its suite's; the host when neither has one);
    ``test_command`` is the ``[test_command]`` table of a ``test_runner = "command"`` task
    (:mod:`reliabench.tasks.test_command`); ``repository`` the ``[repository]`` table of a
    ``test_runner = "repository"`` task (:mod:`reliabench.tasks.repository`: no
    ``workspace/`` or ``tests/`` folder, the checkout and the test patch instead).
    """

    id: str
    language: str
    timeout_s: float
    tags: tuple[str, ...]
    prompt: str
    root: Path
    workspace_dir: Path
    tests_dir: Path
    solution_dir: Path | None
    feedback_dir: Path | None
    variants: tuple[Variant, ...]
    test_runner: TestRunner = "pytest"
    stdio: StdioConfig | None = None
    allowed_skips: tuple[str, ...] = ()
    environment: EnvironmentSpec = HOST
    test_command: TestCommand | None = None
    repository: RepositoryConfig | None = None


@dataclass(frozen=True, slots=True)
class Suite:
    """A loaded, validated task suite."""

    name: str
    version: str
    description: str
    root: Path
    tasks: tuple[Task, ...]
    content_hash: str

    def task(self, task_id: str) -> Task:
        """Return the task with this id."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise UsageError(f"suite {self.name!r} has no task {task_id!r}")


def _ignored(rel: str) -> bool:
    return any(part in _IGNORED for part in rel.split("/"))


def suite_files(root: Path) -> list[Path]:
    """The regular files of the suite folder ``root`` that its content hash covers, sorted.

    Links are neither listed nor followed (:func:`reliabench.files.untrusted.walk_tree`).
    """
    return sorted(
        root / e.rel for e in walk_tree(root, skip_dir=_ignored)
        if e.kind == "file" and not _ignored(e.rel) and not e.rel.endswith(".pyc")
    )


def _not_regular(root: Path) -> list[str]:
    """One problem per link, FIFO, socket, device or unreadable entry of the suite ``root``."""
    problems = []
    for e in walk_tree(root, skip_dir=_ignored):
        if e.kind in ("file", "dir") or _ignored(e.rel):
            continue
        what = {"link": "a symbolic link", "special": "a FIFO, socket or device"}.get(e.kind, e.error)
        problems.append(f"{root / e.rel}: {what} (a suite holds regular files and directories "
                        "only: reliabench never reads through a link)")
    return problems


def hash_suite_files(files: Iterable[tuple[str, bytes]]) -> str:
    """A suite's content hash from its ``(relative posix path, content)`` pairs, in order.

    sha256 over each file's path, a NUL byte, its content and a NUL byte (:func:`suite_files`
    gives the order).
    """
    h = hashlib.sha256()
    for rel, data in files:
        h.update(rel.encode())
        h.update(b"\0")
        h.update(data)
        h.update(b"\0")
    return h.hexdigest()


def _hash_tree(root: Path) -> str:
    h = hashlib.sha256()
    for p in suite_files(root):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        with open_regular(p, under=root) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()  # = hash_suite_files over the same pairs, without holding the files


def _read_text(path: Path, problems: list[str], root: Path | None, limit: int, missing: str) -> str | None:
    """A suite file as text (no link followed below ``root``), or None with the problem said."""
    try:
        return read_file(path, limit, under=root).decode("utf-8")
    except FileNotFoundError:
        problems.append(f"{path}: missing file{missing}")
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})")
    return None


def _read_toml(path: Path, problems: list[str], root: Path | None = None) -> dict[str, Any] | None:
    text = _read_text(path, problems, root, _TOML_BYTES, "")
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{path}: invalid TOML ({exc})")
    return None


def _load_variant(vdir: Path, problems: list[str], root: Path) -> Variant | None:
    meta = _read_toml(vdir / "variant.toml", problems, root)
    if meta is None:
        return None
    cwe = meta.get("cwe", [])
    caught = meta.get("caught_by", [])
    if not isinstance(cwe, list) or not all(isinstance(c, int) for c in cwe):
        problems.append(f"{vdir / 'variant.toml'}: cwe: expected a list of integers")
        return None
    if not isinstance(caught, list) or not set(caught) <= {"scanner", "security_test"}:
        problems.append(
            f"{vdir / 'variant.toml'}: caught_by: expected a list of 'scanner', 'security_test'"
        )
        return None
    return Variant(
        name=vdir.name,
        kind=str(meta.get("kind", "insecure")),
        cwe=tuple(cwe),
        caught_by=tuple(caught),
        description=str(meta.get("description", "")),
        dir=vdir,
    )


def _line_of(path: Path, key: str) -> int:
    """The 1-based line of ``key = ...`` in the TOML file ``path`` (1 when not found)."""
    try:
        lines = read_file(path, _TOML_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    for number, text in enumerate(lines, start=1):
        if text.lstrip().startswith(key) and text.lstrip()[len(key):].lstrip().startswith("="):
            return number
    return 1


def _parse_allowed_skips(meta: dict[str, Any], path: Path, runner: object,
                         problems: list[str]) -> tuple[str, ...]:
    """``allowed_skips``: distinct, non-empty test node ids (``FILE::NAME``), none for stdio."""
    raw = meta.get("allowed_skips", [])
    where = f"{path}:{_line_of(path, 'allowed_skips')}: allowed_skips"
    if not isinstance(raw, list):
        problems.append(f"{where}: expected a list of test ids (\"test_x.py::test_y\"), got {raw!r:.80}")
        return ()
    out: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, str) or "::" not in item or not item.split("::", 1)[1]:
            problems.append(f"{where}[{i}]: expected a test id \"FILE::NAME\" (as `reliabench "
                            f"validate` names it), got {item!r:.80}")
        elif item in seen:
            problems.append(f"{where}[{i}]: {item!r:.80} is listed twice")
        else:
            seen.add(item)
            out.append(item)
    if raw and runner == "stdio":
        problems.append(f"{where}: a stdio task has no skips (its cases pass or fail)")
    return tuple(out)


def _load_task(tdir: Path, problems: list[str], root: Path, default: EnvironmentSpec = HOST) -> Task | None:
    before = len(problems)
    meta = _read_toml(tdir / "task.toml", problems, root)
    prompt_path = tdir / "prompt.md"
    prompt = _read_text(prompt_path, problems, root, _PROMPT_BYTES, " (what the agent is asked to do)")
    for sub in ("workspace", "tests"):
        if file_kind(tdir / sub) != "dir" and (meta or {}).get("test_runner") != "repository":
            problems.append(f"{tdir / sub}: missing directory")
    runner = meta.get("test_runner", "pytest") if meta is not None else "pytest"
    if runner == "repository":
        return _load_repository_task(tdir, meta, prompt, problems, root, before)
    stdio: StdioConfig | None = None
    test_command: TestCommand | None = None
    if runner not in _TEST_RUNNERS:
        problems.append(f"{tdir / 'task.toml'}: test_runner: expected one of "
                        f"{', '.join(map(repr, _TEST_RUNNERS))}, got {runner!r}")
    elif runner == "stdio":
        stdio = parse_stdio_config(meta or {}, tdir, problems)
    elif runner == "command":
        test_command = parse_test_command(meta or {}, tdir / "task.toml", problems)
    elif file_kind(tdir / "tests") == "dir" and not any(
            e.kind == "file" and e.rel.endswith(".py")
            and (e.rel.rsplit("/", 1)[-1].startswith("test") or e.rel.endswith("_test.py"))
            for e in walk_tree(tdir / "tests")):
        problems.append(f"{tdir / 'tests'}: no test_*.py files (hidden tests)")  # or *_test.py, as pytest
    if meta is None or prompt is None or len(problems) > before:
        return None
    tid = meta.get("id")
    if tid != tdir.name:
        problems.append(f"{tdir / 'task.toml'}: id: expected {tdir.name!r} (the folder name), got {tid!r}")
    language = meta.get("language", "python")
    if runner == "command" and not valid_language(language):
        where = f"{tdir / 'task.toml'}:{_line_of(tdir / 'task.toml', 'language')}"
        problems.append(f"{where}: language: expected a lower-case language name (go, rust, java, "
                        f"javascript, cpp, ...), got {language!r:.80}")
    elif runner != "command" and language != "python":
        # (a task in another language runs its tests with test_runner = "command")
        problems.append(f"{tdir / 'task.toml'}: language: only 'python' is supported, got {language!r}")
    if runner != "command" and "test_command" in meta:
        problems.append(f"{tdir / 'task.toml'}:{table_line(tdir / 'task.toml')}: test_command: "
                        "only a task with test_runner = 'command' has one")
    timeout = meta.get("timeout_s", 60)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout)
            or not 0 < timeout <= MAX_SECONDS):
        problems.append(f"{tdir / 'task.toml'}: timeout_s: expected a number of seconds in (0, "
                        f"{MAX_SECONDS:g}], got {timeout!r}")
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(f"{tdir / 'task.toml'}: tags: expected a list of strings")
    allowed_skips = _parse_allowed_skips(meta, tdir / "task.toml", runner, problems)
    environment = default
    if "environment" in meta:  # the task's own table replaces the suite's default as a whole
        environment = parse_environment(meta["environment"], tdir / "task.toml", tdir, problems,
                                        suite_root=root)
    variants: list[Variant] = []
    if file_kind(tdir / "variants") == "dir":
        for vdir in sorted(p for p in (tdir / "variants").iterdir() if file_kind(p) == "dir"):
            v = _load_variant(vdir, problems, root)
            if v is not None:
                variants.append(v)
    if len(problems) > before:
        return None
    solution = tdir / "solution"
    feedback = tdir / "feedback"
    return Task(
        id=tdir.name,
        language=str(language),
        timeout_s=float(timeout),
        tags=tuple(tags),
        prompt=prompt,
        root=tdir,
        workspace_dir=tdir / "workspace",
        tests_dir=tdir / "tests",
        solution_dir=solution if file_kind(solution) == "dir" else None,
        feedback_dir=feedback if file_kind(feedback) == "dir" else None,
        variants=tuple(variants),
        test_runner=cast(TestRunner, runner),  # checked above
        stdio=stdio,
        allowed_skips=allowed_skips,
        test_command=test_command,
        environment=environment,
    )


def _load_repository_task(tdir: Path, meta: dict[str, Any] | None, prompt: str | None, problems: list[str],
                          root: Path, before: int) -> Task | None:
    """A ``test_runner = "repository"`` task (:mod:`reliabench.tasks.repository`)."""
    from reliabench.tasks.repository import parse_repository

    if meta is None or prompt is None:
        return None
    repo = parse_repository(meta, tdir, problems, root)
    if meta.get("id") != tdir.name:
        problems.append(f"{tdir / 'task.toml'}: id: expected {tdir.name!r} (the folder name), "
                        f"got {meta.get('id')!r}")
    timeout = meta.get("timeout_s", 1800)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_SECONDS:
        problems.append(f"{tdir / 'task.toml'}: timeout_s: expected a number of seconds in "
                        f"(0, {MAX_SECONDS:g}]")
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(f"{tdir / 'task.toml'}: tags: expected a list of strings")
    if repo is None or len(problems) > before:
        return None
    # the checkout is shown at the task's workdir (/testbed) to the agent and the tests alike;
    # an image spec runs in that image (SWE-bench's per-instance images) on a container backend
    environment = EnvironmentSpec(image=repo.environment.image, workdir=repo.workdir,
                                  source=f"{tdir / 'task.toml'}: [repository]")
    return Task(id=tdir.name, language=str(meta.get("language", "python")), timeout_s=float(timeout),
                tags=tuple(tags), prompt=prompt, root=tdir, workspace_dir=tdir / "workspace",
                tests_dir=tdir / "tests", solution_dir=None, feedback_dir=None, variants=(),
                test_runner="repository", repository=repo, environment=environment)


def load_suite(path: str | Path) -> Suite:
    """Load a suite from disk, checking everything and reporting all problems at once.

    Raises:
        SuiteError: listing every problem with its path.
    """
    root = Path(path)
    if not root.is_dir():
        raise SuiteError([f"{root}: not a directory (expected a suite with suite.toml and tasks/)"])
    problems: list[str] = _not_regular(root)
    read = _read_toml(root / "suite.toml", problems, root)
    meta = read or {}
    for key in ("name", "version"):
        if read is not None and not isinstance(meta.get(key), str):
            problems.append(f"{root / 'suite.toml'}: {key}: expected a string")
    default = HOST
    if "environment" in meta:
        default = parse_environment(meta["environment"], root / "suite.toml", root, problems, suite_root=root)
    tasks_root = root / "tasks"
    tasks: list[Task] = []
    if file_kind(tasks_root) != "dir":
        problems.append(f"{tasks_root}: missing directory")
    else:
        for tdir in sorted(p for p in tasks_root.iterdir()
                           if file_kind(p) == "dir" and p.name not in _IGNORED):
            t = _load_task(tdir, problems, root, default)
            if t is not None:
                tasks.append(t)
        if not tasks and not problems:
            problems.append(f"{tasks_root}: no tasks")
    if problems:
        raise SuiteError(problems)
    return Suite(
        name=str(meta["name"]),
        version=str(meta["version"]),
        description=str(meta.get("description", "")),
        root=root,
        tasks=tuple(tasks),
        content_hash=_hash_tree(root),
    )


def bundled_suites() -> dict[str, Path]:
    """Return the suites shipped inside the package, by name."""
    if not BUNDLED_ROOT.is_dir():
        return {}
    return {p.name: p for p in sorted(BUNDLED_ROOT.iterdir()) if (p / "suite.toml").is_file()}


def resolve_suite(spec: str | Path) -> Suite:
    """Load a suite from a path, or a bundled suite by name (``py30``)."""
    path = Path(spec)
    if not path.exists() and str(spec) in bundled_suites():
        path = bundled_suites()[str(spec)]
    return load_suite(path)


def materialize(dest: Path, layers: Iterable[Path]) -> None:
    """Copy each directory of ``layers`` over ``dest`` in order (later layers win).

    Only regular files are copied, and none through a link (:func:`suite_files`,
    :func:`reliabench.files.untrusted.open_regular` below the layer): a link in a starter
    never puts the file it points at into a workspace. A target that is a link (a layer made
    it a file of another's folder) is replaced, not written through.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        for src in suite_files(layer):
            target = dest / src.relative_to(layer)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open_regular(src, under=layer) as fh:
                if file_kind(target) == "link":
                    target.unlink()
                with target.open("wb") as out:
                    shutil.copyfileobj(fh, out)
