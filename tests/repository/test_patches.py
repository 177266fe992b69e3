"""Patches: paths a patch touches (refusing escapes), applying, the trusted test-patch result, lay_files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reliabench.repository.patches import (
    PatchApplyError,
    apply_patch,
    directives_of,
    lay_files,
    patch_paths,
    patched_test_files,
    repository_diff,
)

PATCH = """diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1,2 +1,2 @@
 a = 1
-b = 2
+b = 3
diff --git a/tests/test_m.py b/tests/test_m.py
new file mode 100644
--- /dev/null
+++ b/tests/test_m.py
@@ -0,0 +1 @@
+def test_b(): pass
diff --git a/data/x.json b/data/x.json
--- a/data/x.json
+++ b/data/x.json
@@ -1 +1 @@
-{}
+[]
"""


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("a = 1\nb = 2\n")
    (root / "data").mkdir()
    (root / "data" / "x.json").write_text("{}\n")
    return root


def test_paths_and_directives() -> None:
    p = patch_paths(PATCH)
    assert p.old == ("pkg/m.py", "data/x.json")
    assert p.new == ("pkg/m.py", "tests/test_m.py", "data/x.json")
    assert directives_of(PATCH) == ("pkg/m.py", "tests/test_m.py")  # .json is data, not a directive


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.py", "a/../../b.py", ".git/config"])
def test_escaping_paths_are_refused(bad: str) -> None:
    with pytest.raises(PatchApplyError, match="refusing the path"):
        patch_paths(f"--- a/{bad}\n+++ b/{bad}\n@@ -1 +1 @@\n-x\n+y\n")


def test_apply_and_failure_message(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t")
    apply_patch(tree, PATCH)
    assert (tree / "pkg" / "m.py").read_text() == "a = 1\nb = 3\n"
    assert (tree / "tests" / "test_m.py").is_file()
    with pytest.raises(PatchApplyError, match="does not apply"):
        apply_patch(_tree(tmp_path / "u") / "pkg" / "..", PATCH.replace("-b = 2", "-b = 7"))


def test_apply_refuses_a_patch_through_a_link(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "m.py").write_text("a = 1\nb = 2\n")
    os.rename(tree / "pkg", tmp_path / "pkg-real")
    os.symlink(outside, tree / "pkg")
    with pytest.raises(PatchApplyError):
        apply_patch(tree, PATCH)
    assert (outside / "m.py").read_text() == "a = 1\nb = 2\n"


def test_patched_test_files_leaves_base_untouched(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t")
    result = patched_test_files(tree, PATCH)
    assert result["pkg/m.py"] == b"a = 1\nb = 3\n" and result["tests/test_m.py"] == b"def test_b(): pass\n"
    assert (tree / "pkg" / "m.py").read_text() == "a = 1\nb = 2\n"
    with pytest.raises(PatchApplyError):
        patched_test_files(tree, PATCH.replace("-b = 2", "-b = 9"))


def test_lay_files_replaces_links_and_folders_never_writes_through(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("keep")
    os.symlink(secret, ws / "a.py")  # the agent made the file a link
    (ws / "b.py").mkdir()  # ... a folder
    os.symlink(tmp_path, ws / "pkg")  # ... a parent folder a link
    os.mkfifo(ws / "c.py")  # ... a FIFO
    lay_files(ws, {"a.py": b"A", "b.py": b"B", "pkg/m.py": b"M", "c.py": None})
    assert secret.read_text() == "keep" and not (tmp_path / "m.py").exists()
    assert (ws / "a.py").read_bytes() == b"A" and not (ws / "a.py").is_symlink()
    assert (ws / "b.py").read_bytes() == b"B"
    assert (
        (ws / "pkg").is_dir() and not (ws / "pkg").is_symlink() and (ws / "pkg" / "m.py").read_bytes() == b"M"
    )
    assert not os.path.lexists(ws / "c.py")


def test_repository_diff_is_git_shaped_and_applies_back(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base")
    ws = _tree(tmp_path / "ws")
    apply_patch(ws, PATCH)
    (ws / "data" / "x.json").unlink()
    (ws / "pkg" / "__pycache__").mkdir()
    (ws / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    diff = repository_diff(base, ws)
    assert "diff --git a/pkg/m.py b/pkg/m.py" in diff
    assert "diff --git a/tests/test_m.py b/tests/test_m.py\nnew file mode 100644" in diff
    assert "deleted file mode 100644" in diff and "__pycache__" not in diff
    again = _tree(tmp_path / "again")
    subprocess.run(["git", "apply", "-"], cwd=again, input=diff.encode(), check=True)
    assert (again / "pkg" / "m.py").read_text() == "a = 1\nb = 3\n" and not (
        again / "data" / "x.json"
    ).exists()


def test_repository_diff_is_bounded(tmp_path: Path) -> None:
    base = tmp_path / "b"
    base.mkdir()
    ws = tmp_path / "w"
    ws.mkdir()
    for i in range(200):
        (ws / f"f{i}.py").write_text("x = 1\n" * 50)
    diff = repository_diff(base, ws, max_bytes=2000)
    assert len(diff) < 6000 and "diff cut by reliabench" in diff
