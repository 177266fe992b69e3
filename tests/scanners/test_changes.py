"""Change sets between starter and workspace, and filtering findings to the agent's lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliabench.errors import InvalidArgumentError
from reliabench.records import Finding
from reliabench.scanners import ChangeSet, changed_files, filter_to_changes, workspace_diff
from reliabench.scanners.bandit_scanner import BanditScanner
from reliabench.scanners.changes import is_ignored

STARTER_APP = """\
import os


def legacy(cmd):
    os.system(cmd)


def todo():
    pass
"""

AGENT_APP = """\
import os
import subprocess


def legacy(cmd):
    os.system(cmd)


def todo(cmd):
    return subprocess.run(cmd, shell=True)
"""


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    starter = _tree(tmp_path / "starter", {
        "app.py": STARTER_APP,
        "keep.py": "x = 1\n",
        "old.py": "gone = True\n",
        "tests/test_app.py": "def test(): pass\n",
    })
    work = _tree(tmp_path / "work", {
        "app.py": AGENT_APP,
        "keep.py": "x = 1\n",
        "new/util.py": "a = 1\nb = 2\nc = 3\n",
        "tests/test_app.py": "def test(): assert True\n",
        "tests/helper.py": "import pickle\n",
        "test_extra.py": "pass\n",
        "util_test.py": "pass\n",
        "conftest.py": "pass\n",
        "__pycache__/app.cpython-311.pyc": b"\x00\x01",
        "pkg/mod.pyc": b"\x00",
        ".pytest_cache/v/cache": "{}",
        "pkg.egg-info/PKG-INFO": "x",
    })
    return starter, work


def test_added_modified_deleted(dirs: tuple[Path, Path]) -> None:
    cs = changed_files(*dirs, include_tests=False)
    assert cs.added == ("new/util.py",)
    assert cs.modified == ("app.py",)
    assert cs.deleted == ("old.py",)
    assert cs.files == ("app.py", "new/util.py")
    assert not cs.empty


def test_new_file_has_all_lines_modified_file_only_changed_ones(dirs: tuple[Path, Path]) -> None:
    cs = changed_files(*dirs)
    assert cs.changed_lines["new/util.py"] == frozenset({1, 2, 3})
    # line 2 (import subprocess) and lines 9-10 (the new todo) are the agent's
    assert cs.changed_lines["app.py"] == frozenset({2, 9, 10})


def test_tests_are_included_by_default(dirs: tuple[Path, Path]) -> None:
    # issue 20 finding 8: a test-named file the agent wrote is its code (a solution may import it)
    assert changed_files(*dirs) == changed_files(*dirs, include_tests=True)
    cs = changed_files(*dirs, include_tests=True)
    assert set(cs.files) == {"app.py", "new/util.py", "tests/test_app.py", "tests/helper.py",
                             "test_extra.py", "util_test.py", "conftest.py"}
    assert "__pycache__/app.cpython-311.pyc" not in cs.added
    assert "pkg/mod.pyc" not in cs.added


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("tests/a.py", True), ("src/pkg/tests/a.py", True), ("test/a.py", True),
        ("test_a.py", True), ("pkg/a_test.py", True), ("conftest.py", True),
        ("a/__pycache__/x.py", False),  # Python source is importable wherever it lies
        ("a/__pycache__/x.cpython-311.pyc", True), ("x.pyc", True), (".git/config", True),
        ("node_modules/x.js", True), ("my.egg-info/x", True), (".coverage", True),
        ("app.py", False), ("testing.py", False), ("contest.py", False), ("tests.py", False),
    ],
)
def test_is_ignored(rel: str, ignored: bool) -> None:
    assert is_ignored(rel) is ignored


def test_identical_trees_make_an_empty_changeset(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"m.py": "x = 1\n"})
    b = _tree(tmp_path / "b", {"m.py": "x = 1\n"})
    cs = changed_files(a, b)
    assert cs == ChangeSet()
    assert cs.empty
    assert workspace_diff(a, b) == ""


def test_changeset_is_immutable(dirs: tuple[Path, Path]) -> None:
    cs = changed_files(*dirs)
    with pytest.raises(TypeError):
        cs.changed_lines["x.py"] = frozenset()  # type: ignore[index]


def test_crlf_and_cr_line_numbers_match_python(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"m.py": b"a = 1\r\nb = 2\r\n"})
    b = _tree(tmp_path / "b", {"m.py": b"a = 1\r\nb = 2\r\nc = 3\x0c\r\nd = 4\r"})
    assert changed_files(a, b).changed_lines["m.py"] == frozenset({3, 4})


def test_large_files_count_every_line_as_changed(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"m.py": "x = 1\n" * 50})
    b = _tree(tmp_path / "b", {"m.py": "x = 1\n" * 50 + "y = 2\r\nz = 3\rw"})
    cs = changed_files(a, b, max_file_bytes=64)
    assert cs.changed_lines["m.py"] == frozenset(range(1, 54))


# -------------------------------------------------------------------- filter_to_changes


def test_filter_keeps_new_findings_and_drops_preexisting_ones(dirs: tuple[Path, Path]) -> None:
    cs = changed_files(*dirs)
    pre = Finding("bandit", "B605", "high", "high", 78, "app.py", 6)
    new = Finding("bandit", "B602", "high", "high", 78, "app.py", 10)
    elsewhere = Finding("bandit", "B101", "low", "high", 703, "keep.py", 1)
    in_new_file = Finding("bandit", "B1", "low", "high", None, "new/util.py", 3)
    no_line = Finding("semgrep", "r", "medium", "medium", None, "app.py", None)
    kept = filter_to_changes([pre, new, elsewhere, in_new_file, no_line], cs)
    assert kept == (new, in_new_file, no_line)


def test_filter_requires_a_changeset() -> None:
    with pytest.raises(InvalidArgumentError, match=r"changeset: expected a ChangeSet, got dict"):
        filter_to_changes([], {})  # type: ignore[arg-type]


def test_end_to_end_only_the_agents_finding_counts(dirs: tuple[Path, Path]) -> None:
    starter, work = dirs
    cs = changed_files(starter, work)
    scanner = BanditScanner()
    everything = scanner.scan(work, cs.files)
    assert {f.rule_id for f in everything.findings} >= {"B605", "B602", "B404"}
    theirs = filter_to_changes(everything.findings, cs)
    # tests/helper.py's "import pickle" (B403) is the agent's too: test-named files are scanned
    assert sorted((f.rule_id, f.path) for f in theirs) == [
        ("B101", "tests/test_app.py"), ("B403", "tests/helper.py"), ("B404", "app.py"), ("B602", "app.py")]
    # the same through the scanner's own changed_lines argument
    direct = scanner.scan(work, cs.files, cs.changed_lines)
    assert direct.findings == theirs


# ----------------------------------------------------------------------------- safety


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    starter = _tree(tmp_path / "s", {"m.py": "x = 1\n"})
    work = _tree(tmp_path / "w", {"m.py": "x = 1\n"})
    (work / "leak.py").symlink_to(secret)
    (work / "dirlink").symlink_to(tmp_path)
    cs = changed_files(starter, work)
    assert cs.added == ("dirlink", "leak.py")
    assert cs.files == ()
    diff = workspace_diff(starter, work)
    assert "TOP-SECRET-CONTENT" not in diff
    assert "Changed leak.py: (absent) => symbolic link ->" in diff


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_never_opened(tmp_path: Path) -> None:
    starter = _tree(tmp_path / "s", {})
    work = _tree(tmp_path / "w", {})
    os.mkfifo(work / "pipe.py")
    cs = changed_files(starter, work)  # would block forever if the FIFO were opened
    assert cs.added == ("pipe.py",)
    assert cs.files == ()
    assert "special file" in workspace_diff(starter, work)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_file_has_no_lines(tmp_path: Path) -> None:
    starter = _tree(tmp_path / "s", {})
    work = _tree(tmp_path / "w", {"m.py": "x = 1\n"})
    (work / "m.py").chmod(0)
    try:
        assert changed_files(starter, work).changed_lines == {"m.py": frozenset()}
    finally:
        (work / "m.py").chmod(0o644)


@pytest.mark.parametrize("which", ["starter", "workspace"])
def test_directories_must_exist(tmp_path: Path, which: str) -> None:
    ok = tmp_path
    missing = tmp_path / "missing"
    args = (missing, ok) if which == "starter" else (ok, missing)
    with pytest.raises(InvalidArgumentError, match=rf"{which}: expected an existing directory"):
        changed_files(*args)


def test_bad_max_file_bytes(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"max_file_bytes: expected an integer >= 1"):
        changed_files(tmp_path, tmp_path, max_file_bytes=0)
    with pytest.raises(InvalidArgumentError, match=r"context: expected an integer >= 0, got -1"):
        workspace_diff(tmp_path, tmp_path, context=-1)


# ------------------------------------------------------------------------------ diff


def test_diff_names_files_and_marks_missing_newline(tmp_path: Path) -> None:
    starter = _tree(tmp_path / "s", {"m.py": "a\nb\n", "gone.py": "z\n", "bin.dat": b"\x00a"})
    work = _tree(tmp_path / "w", {"m.py": "a\nc", "add.py": "n\n", "bin.dat": b"\x00b"})
    diff = workspace_diff(starter, work)
    assert "--- a/m.py\n+++ b/m.py\n" in diff
    assert "+c\n\\ No newline at end of file\n" in diff
    assert "--- /dev/null\n+++ b/add.py\n@@ -0,0 +1 @@\n+n\n" in diff
    assert "--- a/gone.py\n+++ /dev/null\n" in diff
    assert "Binary files a/bin.dat and b/bin.dat differ\n" in diff


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_diff_applies_cleanly_with_git(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    starter, work = dirs
    (work / "app.py").write_text(AGENT_APP + "# no newline at the end")
    diff = workspace_diff(starter, work, include_tests=True)
    copy = tmp_path / "copy"
    shutil.copytree(starter, copy)
    subprocess.run(["git", "apply", "--unsafe-paths", "-p1", "-"], input=diff.encode(),
                   cwd=copy, check=True, capture_output=True)
    for rel in ("app.py", "new/util.py", "tests/test_app.py", "tests/helper.py", "conftest.py"):
        assert (copy / rel).read_bytes() == (work / rel).read_bytes()
    assert not (copy / "old.py").exists()


# -------------------------------------------------------------------------- property


LINES = st.lists(st.sampled_from(["a", "b", "c", "", "x = 1", "pass"]), max_size=12)


@settings(max_examples=60, deadline=None)
@given(old=LINES, new=LINES)
def test_unchanged_lines_are_a_common_subsequence(old: list[str], new: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d:
        a = _tree(Path(d) / "a", {"m.py": "".join(s + "\n" for s in old)})
        b = _tree(Path(d) / "b", {"m.py": "".join(s + "\n" for s in new)})
        cs = changed_files(a, b)
    changed = cs.changed_lines.get("m.py", frozenset())
    assert changed <= frozenset(range(1, len(new) + 1))
    kept = iter(old)
    # the lines not marked changed appear in the starter, in order
    assert all(any(line == o for o in kept)
               for i, line in enumerate(new, start=1) if i not in changed)
    if old == new:
        assert "m.py" not in cs.changed_lines
    if not old and new:
        assert changed == frozenset(range(1, len(new) + 1))
