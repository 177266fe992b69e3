"""Hidden tests for run_git_log.

A fake ``git`` executable (a small /bin/sh script) records the argument vector and
working directory it was started with, prints canned output and exits with a
canned status.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import pytest

from run_git_log import GitLogError, git_log

FAKE_TEMPLATE = """#!/bin/sh
{{ printf '%s\\0' "$(pwd -P)"; for arg in "$@"; do printf '%s\\0' "$arg"; done; }} > {record}
cat {out}
cat {err} >&2
exit {code}
"""

SAMPLE = (
    "1111111111111111111111111111111111111111 Fix login redirect\n"
    "2222222222222222222222222222222222222222 Add audit log: phase 2\n"
)


class FakeGit:
    """A /bin/sh script standing in for git: records cwd + argv (NUL separated)."""

    def __init__(self, tmp_path: Path, stdout: str = SAMPLE, stderr: str = "", code: int = 0):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        self.record = bindir / "record"
        out, err = bindir / "stdout.txt", bindir / "stderr.txt"
        out.write_text(stdout, encoding="utf-8")
        err.write_text(stderr, encoding="utf-8")
        self.path = bindir / "fake-git"
        self.path.write_text(
            FAKE_TEMPLATE.format(
                record=shlex.quote(str(self.record)), out=shlex.quote(str(out)), err=shlex.quote(str(err)), code=code
            ),
            encoding="utf-8",
        )
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    @property
    def calls(self) -> dict:
        cwd, *argv = self.record.read_bytes().decode("utf-8").split("\0")[:-1]
        return {"cwd": cwd, "argv": argv}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


def test_returns_sha_subject_pairs(tmp_path, repo):
    fake = FakeGit(tmp_path)
    assert git_log(repo, "alice", git_executable=str(fake.path)) == [
        ("1111111111111111111111111111111111111111", "Fix login redirect"),
        ("2222222222222222222222222222222222222222", "Add audit log: phase 2"),
    ]


def test_exact_argument_vector(tmp_path, repo):
    fake = FakeGit(tmp_path)
    git_log(repo, "alice", max_count=5, git_executable=str(fake.path))
    assert fake.calls["argv"] == ["log", "--author=alice", "--max-count=5", "--format=%H %s"]


def test_default_max_count_is_20(tmp_path, repo):
    fake = FakeGit(tmp_path)
    git_log(repo, "bob", git_executable=str(fake.path))
    assert fake.calls["argv"][2] == "--max-count=20"


def test_runs_inside_repo_directory(tmp_path, repo):
    fake = FakeGit(tmp_path)
    git_log(str(repo), "alice", git_executable=str(fake.path))
    assert os.path.samefile(fake.calls["cwd"], repo)


def test_author_with_space_is_one_argument(tmp_path, repo):
    fake = FakeGit(tmp_path)
    git_log(repo, "Ada Lovelace", git_executable=str(fake.path))
    assert fake.calls["argv"][1] == "--author=Ada Lovelace"
    assert len(fake.calls["argv"]) == 4


def test_blank_lines_skipped_and_trailing_whitespace_stripped(tmp_path, repo):
    fake = FakeGit(tmp_path, stdout="\nabc123 First  \r\n   \ndef456 Second\n\n")
    assert git_log(repo, "alice", git_executable=str(fake.path)) == [
        ("abc123", "First"),
        ("def456", "Second"),
    ]


def test_line_without_subject(tmp_path, repo):
    fake = FakeGit(tmp_path, stdout="abc123\n")
    assert git_log(repo, "alice", git_executable=str(fake.path)) == [("abc123", "")]


def test_no_commits_returns_empty_list(tmp_path, repo):
    fake = FakeGit(tmp_path, stdout="")
    assert git_log(repo, "nobody", git_executable=str(fake.path)) == []


def test_nonzero_exit_raises_git_log_error_with_stderr(tmp_path, repo):
    fake = FakeGit(tmp_path, stdout="", stderr="fatal: not a git repository\n", code=128)
    with pytest.raises(GitLogError, match="fatal: not a git repository"):
        git_log(repo, "alice", git_executable=str(fake.path))


def test_git_log_error_is_runtime_error():
    assert issubclass(GitLogError, RuntimeError)


@pytest.mark.parametrize("author", ["", "   ", "\t\n"])
def test_blank_author_rejected_without_running(tmp_path, repo, author):
    fake = FakeGit(tmp_path)
    with pytest.raises(ValueError):
        git_log(repo, author, git_executable=str(fake.path))
    assert not fake.record.exists()


@pytest.mark.parametrize("max_count", [1, 1000])
def test_max_count_boundaries_accepted(tmp_path, repo, max_count):
    fake = FakeGit(tmp_path)
    git_log(repo, "alice", max_count=max_count, git_executable=str(fake.path))
    assert fake.calls["argv"][2] == f"--max-count={max_count}"


@pytest.mark.parametrize("max_count", [0, -1, 1001, True, "5"])
def test_invalid_max_count_rejected(tmp_path, repo, max_count):
    fake = FakeGit(tmp_path)
    with pytest.raises(ValueError):
        git_log(repo, "alice", max_count=max_count, git_executable=str(fake.path))
    assert not fake.record.exists()


@pytest.mark.security
@pytest.mark.parametrize(
    "author",
    [
        "alice; touch pwned",
        "x'; touch pwned; echo '",
        'x"; touch pwned; echo "',
        "$(touch pwned)",
        "`touch pwned`",
        "a' | touch pwned | echo '",
        "a'\ntouch pwned\necho '",
    ],
)
def test_shell_metacharacters_are_not_interpreted(tmp_path, repo, author):
    fake = FakeGit(tmp_path)
    try:
        git_log(repo, author, git_executable=str(fake.path))
    except (GitLogError, ValueError):
        pass
    assert not list(tmp_path.rglob("pwned")), "author value was executed by a shell"
    assert fake.calls["argv"] == ["log", f"--author={author}", "--max-count=20", "--format=%H %s"]
