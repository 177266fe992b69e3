"""List the commits of one author using ``git log``."""

from __future__ import annotations

import os


class GitLogError(RuntimeError):
    """Raised when the git process exits with a non-zero status."""


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
    raise NotImplementedError
