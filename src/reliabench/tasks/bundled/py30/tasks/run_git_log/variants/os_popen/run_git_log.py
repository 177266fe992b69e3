"""List the commits of one author using ``git log``."""

from __future__ import annotations

import os
import subprocess


class GitLogError(RuntimeError):
    """Raised when the git process exits with a non-zero status."""


def git_log(
    repo: str | os.PathLike[str],
    author: str,
    *,
    max_count: int = 20,
    git_executable: str = "git",
) -> list[tuple[str, str]]:
    if not isinstance(author, str) or not author.strip():
        raise ValueError("author must be a non-empty string")
    if isinstance(max_count, bool) or not isinstance(max_count, int) or not 1 <= max_count <= 1000:
        raise ValueError("max_count must be an integer between 1 and 1000")
    cmd = f'cd "{os.fspath(repo)}" && {git_executable} log --author="{author}" --max-count={max_count} --format="%H %s" 2>&1'
    pipe = os.popen(cmd)
    output = pipe.read()
    status = pipe.close()
    if status:
        raise GitLogError(output.strip())
    commits = []
    for line in output.splitlines():
        line = line.rstrip()
        if line:
            sha, _, subject = line.partition(" ")
            commits.append((sha, subject))
    return commits
