"""The repository task kind: a repository at a base commit, graded FAIL_TO_PASS / PASS_TO_PASS.

::

    SUITE/tasks/<id>/task.toml      id, language = "python", test_runner = "repository",
                                    timeout_s, tags, and the tables below
    SUITE/tasks/<id>/prompt.md      the problem statement
    SUITE/tasks/<id>/repo.tar.gz    the repository at its base commit (or a folder / git
                                    repository, named by ``source``)
    SUITE/tasks/<id>/test.patch     the test patch, applied after the agent
    SUITE/tasks/<id>/gold.patch     optional: the reference patch (``validate`` applies it)

    [repository]
    source = "repo.tar.gz"              # relative to the task folder: a tarball, folder or git
                                        # repository (left out: no repository, a run refuses the task)
    base_commit = "14e1a23a..."         # 40 hex digits; the source must hold this commit
    workdir = "/testbed"                # where the environment shows the checkout
    test_patch = "test.patch"
    gold_patch = "gold.patch"           # optional
    test_command = ["pytest", "-rA", "--tb=no", "-p", "no:cacheprovider", "tests/test_x.py"]
    log_parser = "pytest"               # reliabench.repository.logs: pytest, pytest-options, ...
    fail_to_pass = ["tests/test_x.py::test_new"]
    pass_to_pass = ["tests/test_x.py::test_old"]
    test_timeout_s = 900                # optional: the test command's wall time

    [repository.environment]            # reliabench.repository.envspec
    python = "3.11"
    packages = ["pytest==7.4.4", ...]
    install = ["python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", "."]

A ``test_runner = "repository"`` task has no ``workspace/`` or ``tests/`` folder: the
workspace is the checkout (after the install command), the hidden tests are the test patch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final, cast

from reliabench.files.untrusted import file_kind, read_file
from reliabench.repository.envspec import RepoEnvSpec, parse_env_spec
from reliabench.repository.logs import LOG_PARSERS
from reliabench.repository.patches import MAX_PATCH_BYTES, PatchApplyError, patch_paths

__all__ = ["DEFAULT_WORKDIR", "RepositoryConfig", "parse_repository", "read_patch"]

DEFAULT_WORKDIR: Final = "/testbed"
_COMMIT: Final = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True, slots=True)
class RepositoryConfig:
    """The ``[repository]`` table of a repository task (see the module docstring).

    Attributes:
        source: The repository (a tarball, folder or git repository); None when the
            converter had none (a run refuses the task).
        base_commit: The commit the task starts from.
        workdir: Where the environment shows the checkout.
        test_patch: The test patch file.
        gold_patch: The reference patch file, if any.
        test_command: The test command (argv, run in ``workdir``).
        log_parser: The parser of its output (:data:`reliabench.repository.logs.LOG_PARSERS`).
        fail_to_pass: Tests that must go from failing to passing.
        pass_to_pass: Tests that must keep passing.
        environment: The environment spec.
        test_timeout_s: Wall-clock seconds of the test command (None: the task's ``timeout_s``).
    """

    source: Path | None
    base_commit: str
    workdir: str
    test_patch: Path
    gold_patch: Path | None
    test_command: tuple[str, ...]
    log_parser: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    environment: RepoEnvSpec
    test_timeout_s: float | None = None


def read_patch(path: Path, root: Path | None = None) -> str:
    """A patch file as text (bounded, no link followed below ``root``)."""
    return read_file(path, MAX_PATCH_BYTES, under=root).decode("utf-8", "surrogateescape")


def _tests(raw: object, key: str, where: str, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, str) and t for t in raw):
        problems.append(f"{where}: {key}: expected a list of test names")
        return ()
    return tuple(raw)


def _file(
    tdir: Path,
    value: object,
    key: str,
    where: str,
    problems: list[str],
    *,
    kinds: tuple[str, ...] = ("file",),
) -> Path | None:
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: {key}: expected a path relative to the task folder")
        return None
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts:
        problems.append(f"{where}: {key}: {value!r} must lie inside the task folder")
        return None
    path = tdir / value
    if file_kind(path) not in kinds:
        problems.append(f"{where}: {key}: {path} is missing (expected a {' or '.join(kinds)})")
        return None
    return path


def parse_repository(
    meta: Mapping[str, Any], tdir: Path, problems: list[str], root: Path | None = None
) -> RepositoryConfig | None:
    """Read the ``[repository]`` table of ``tdir/task.toml``; each problem is appended (``FILE: key``)."""
    where = f"{tdir / 'task.toml'}: [repository]"
    table = meta.get("repository")
    if not isinstance(table, dict):
        problems.append(f'{where}: missing (a test_runner = "repository" task needs it)')
        return None
    before = len(problems)
    known = {
        "source",
        "base_commit",
        "workdir",
        "test_patch",
        "gold_patch",
        "test_command",
        "log_parser",
        "fail_to_pass",
        "pass_to_pass",
        "environment",
        "test_timeout_s",
    }
    for key in sorted(set(table) - known):
        problems.append(f"{where}: {key}: unknown key")
    source = (
        None
        if table.get("source") is None
        else _file(tdir, table.get("source"), "source", where, problems, kinds=("file", "dir"))
    )
    commit = table.get("base_commit")
    if not isinstance(commit, str) or not _COMMIT.match(commit):
        problems.append(f"{where}: base_commit: expected 40 lowercase hex digits, got {commit!r:.60}")
    workdir = table.get("workdir", DEFAULT_WORKDIR)
    if (
        not isinstance(workdir, str)
        or not workdir.startswith("/")
        or ".." in PurePosixPath(workdir).parts
        or workdir.rstrip("/") in ("", "/tmp", "/usr", "/proc", "/dev", "/etc")
    ):
        problems.append(
            f"{where}: workdir: expected an absolute path of its own (like /testbed), got {workdir!r}"
        )
    test_patch = _file(tdir, table.get("test_patch"), "test_patch", where, problems)
    gold = None
    if table.get("gold_patch") is not None:
        gold = _file(tdir, table.get("gold_patch"), "gold_patch", where, problems)
    for patch, key in ((test_patch, "test_patch"), (gold, "gold_patch")):
        if patch is not None:
            try:
                patch_paths(read_patch(patch, root), what=f"{where}: {key}")
            except PatchApplyError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"{patch}: cannot be read ({exc.strerror or type(exc).__name__})")
    command = table.get("test_command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        problems.append(f"{where}: test_command: expected a non-empty list of strings (argv)")
    parser = table.get("log_parser", "pytest")
    if parser not in LOG_PARSERS:
        problems.append(f"{where}: log_parser: expected one of {', '.join(LOG_PARSERS)}, got {parser!r}")
    f2p = _tests(table.get("fail_to_pass"), "fail_to_pass", where, problems)
    p2p = _tests(table.get("pass_to_pass", []), "pass_to_pass", where, problems)
    if not f2p and "fail_to_pass" in table:
        problems.append(f"{where}: fail_to_pass: empty (a task needs a test that the fix makes pass)")
    timeout = table.get("test_timeout_s")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
    ):
        problems.append(f"{where}: test_timeout_s: expected seconds > 0, got {timeout!r}")
    env_table = table.get("environment", {})
    env = (
        parse_env_spec(env_table, f"{where[:-1]}.environment]", problems)
        if isinstance(env_table, dict)
        else None
    )
    if not isinstance(env_table, dict):
        problems.append(f"{where}: environment: expected a table")
    if len(problems) > before or test_patch is None or env is None:
        return None
    return RepositoryConfig(
        source=source,
        base_commit=str(commit),
        workdir=str(workdir),
        test_patch=test_patch,
        gold_patch=gold,
        test_command=tuple(cast(list[str], command)),
        log_parser=str(parser),
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        environment=env,
        test_timeout_s=None if timeout is None else float(timeout),
    )
