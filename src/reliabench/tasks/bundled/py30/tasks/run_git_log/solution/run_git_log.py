"""List the commits of one author using ``git log``."""

from __future__ import annotations

import os
import subprocess  # nosec B404 - used with an argument vector, never a shell

MAX_COUNT_LIMIT = 1000
LOG_FORMAT = "--format=%H %s"


class GitLogError(RuntimeError):
    """Raised when the git process exits with a non-zero status."""


def _validate(author: str, max_count: int) -> None:
    if not isinstance(author, str) or not author.strip():
        raise ValueError("author must be a non-empty string")
    if isinstance(max_count, bool) or not isinstance(max_count, int):
        raise ValueError("max_count must be an integer")
    if max_count < 1 or max_count > MAX_COUNT_LIMIT:
        raise ValueError(f"max_count must be between 1 and {MAX_COUNT_LIMIT}")


def _parse(output: str) -> list[tuple[str, str]]:
    commits: list[tuple[str, str]] = []
    for raw in output.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        sha, _, subject = line.partition(" ")
        commits.append((sha, subject))
    return commits


def git_log(
    repo: str | os.PathLike[str],
    author: str,
    *,
    max_count: int = 20,
    git_executable: str = "git",
) -> list[tuple[str, str]]:
    """Return ``(sha, subject)`` pairs of the latest commits by ``author`` in ``repo``.

    Runs ``[git_executable, "log", f"--author={author}", f"--max-count={max_count}",
    "--format=%H %s"]`` in ``repo`` without a shell.
    """
    _validate(author, max_count)
    argv = [git_executable, "log", f"--author={author}", f"--max-count={max_count}", LOG_FORMAT]
    result = subprocess.run(  # nosec B603 - fixed argv list, shell=False
        argv,
        cwd=os.fspath(repo),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise GitLogError(
            f"git log failed with exit code {result.returncode}: {result.stderr.strip()}"
        )
    return _parse(result.stdout)
