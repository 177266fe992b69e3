"""Patches of a repository task: the files a patch touches, applying one, the agent's own patch.

* :func:`patch_paths` reads the ``diff --git`` / ``---`` / ``+++`` headers of a unified diff
  (as ``git diff`` writes it) and refuses a path that is absolute, climbs out with ``..``
  or points into ``.git``: a patch from a dataset or a predictions file is data, and never
  writes outside the repository it is applied to.
* :func:`apply_patch` applies a patch to a checkout with ``git apply`` (then, as the
  SWE-bench harness does, ``patch --fuzz=5``), with a bounded size, a time limit and none
  of the user's or the system's git configuration.
* :func:`patched_test_files` is the trusted half of SWE-bench's "revert the test files, apply
  the test patch": it is computed ONCE per task on the untouched base tree, and
  :func:`lay_files` writes its result over a rollout's workspace, so the files the test patch
  touches hold exactly base + test patch whatever the agent did to them (or to ``.git``),
  and a test patch that does not apply is found before any rollout (the harness's fault).
* :func:`repository_diff` is the agent's patch: a ``git diff``-shaped diff of the workspace
  against the base tree, bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from reliabench.errors import InvalidArgumentError
from reliabench.files.untrusted import file_kind, read_bounded, remove_tree

__all__ = [
    "MAX_PATCH_BYTES",
    "PatchApplyError",
    "PatchPaths",
    "apply_patch",
    "git_env",
    "lay_files",
    "patch_paths",
    "repository_diff",
    "directives_of",
    "patched_test_files",
]

MAX_PATCH_BYTES: Final = 16 * 1024 * 1024
"""The largest patch applied (a test patch, a prediction's ``model_patch``)."""

NON_TEST_SUFFIXES: Final = (
    ".json",
    ".png",
    "csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)
"""Files of a test patch that are not test directives (SWE-bench's ``NON_TEST_EXTS``)."""

_GIT_HEADER: Final = re.compile(r"^diff --git a/(.*) b/(.*)$")


class PatchApplyError(InvalidArgumentError):
    """A patch does not apply to the tree it was given (the message says what git said)."""


@dataclass(frozen=True, slots=True)
class PatchPaths:
    """The paths a patch names.

    Attributes:
        old: Paths of files the patch changes or deletes (``a/...``, not ``/dev/null``): what
            SWE-bench resets to the base commit before it applies a test patch.
        new: Paths of files as the patch leaves them (``b/...``, not ``/dev/null``).
    """

    old: tuple[str, ...]
    new: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        """Every path named, once, in order."""
        return tuple(dict.fromkeys((*self.old, *self.new)))


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith('"') and name.endswith('"'):
        raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        name = raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return name.split("\t", 1)[0]


def _check(path: str, what: str) -> str:
    pure = PurePosixPath(path)
    if (
        not path
        or pure.is_absolute()
        or ".." in pure.parts
        or "\0" in path
        or (pure.parts and pure.parts[0] == ".git")
    ):
        raise PatchApplyError(
            f"{what}: refusing the path {path!r} (absolute, '..', or in .git: a "
            "patch writes only inside its repository)"
        )
    return str(pure)


def patch_paths(patch: str, *, what: str = "patch") -> PatchPaths:
    r"""The files a unified diff touches (see :class:`PatchPaths`).

    Raises:
        PatchApplyError: A path is absolute, has ``..``, or is inside ``.git``.

    Example:
        >>> p = patch_paths("diff --git a/t/x.py b/t/x.py\n--- a/t/x.py\n+++ b/t/x.py\n@@ -1 +1 @@\n-a\n+b\n")
        >>> p.old, p.new
        (('t/x.py',), ('t/x.py',))
    """
    old: dict[str, None] = {}
    new: dict[str, None] = {}
    for line in patch.splitlines():
        header = _GIT_HEADER.match(line)
        if header:
            new[_check(_unquote(header.group(2)), what)] = None
        elif line.startswith("--- ") and not line.startswith("--- /dev/null"):
            name = _unquote(line[4:])
            old[_check(name[2:] if name.startswith("a/") else name, what)] = None
        elif line.startswith("+++ ") and not line.startswith("+++ /dev/null"):
            name = _unquote(line[4:])
            new[_check(name[2:] if name.startswith("b/") else name, what)] = None
        elif line.startswith(("rename from ", "copy from ")):
            old[_check(line.split(" ", 2)[2], what)] = None
        elif line.startswith(("rename to ", "copy to ")):
            new[_check(line.split(" ", 2)[2], what)] = None
    return PatchPaths(tuple(old), tuple(new))


def directives_of(test_patch: str) -> tuple[str, ...]:
    """The test files a test patch names (``diff --git`` targets that are not data files).

    What SWE-bench appends to the test command of a pytest repository.
    """
    found = [_unquote(m.group(2)) for m in map(_GIT_HEADER.match, test_patch.splitlines()) if m]
    return tuple(dict.fromkeys(d for d in found if not d.endswith(NON_TEST_SUFFIXES)))


def git_env() -> dict[str, str]:
    """The environment git runs with here: no user, system or global configuration read."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/nonexistent",
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "reliabench",
        "GIT_AUTHOR_EMAIL": "reliabench@localhost",
        "GIT_COMMITTER_NAME": "reliabench",
        "GIT_COMMITTER_EMAIL": "reliabench@localhost",
        "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    }


def apply_patch(tree: Path, patch: str, *, what: str = "patch", timeout_s: float = 120.0) -> None:
    """Apply ``patch`` to the checkout ``tree``: ``git apply``, else ``patch --fuzz=5`` (SWE-bench's order).

    ``tree`` must be a tree reliabench made (a starter copy before the agent, a build copy):
    git runs on the host. The patch's paths are checked first (:func:`patch_paths`); git
    itself refuses to write through a symbolic link.

    Raises:
        PatchApplyError: The patch is too large, names a path outside the tree, or applies
            neither way (the message has git's last lines).
    """
    data = patch.encode("utf-8", "surrogateescape")
    if len(data) > MAX_PATCH_BYTES:
        raise PatchApplyError(f"{what}: {len(data)} bytes, more than {MAX_PATCH_BYTES}")
    if not patch.strip():
        return
    patch_paths(patch, what=what)
    if not data.endswith(b"\n"):
        data += b"\n"
    attempts = (
        ["git", "-c", "core.hooksPath=/dev/null", "apply", "--verbose", "--whitespace=nowarn", "-"],
        ["patch", "--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-r", "-", "-s"],
    )
    said = ""
    for argv in attempts:
        try:
            done = subprocess.run(
                argv, cwd=tree, input=data, capture_output=True, timeout=timeout_s, env=git_env(), check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            said = f"{argv[0]}: {exc}"
            continue
        if done.returncode == 0:
            return
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        if argv[0] == "git":
            # git leaves the tree untouched on failure; `patch` may half-apply: it runs last
            continue
    tail = " | ".join(said.splitlines()[-3:])
    raise PatchApplyError(f"{what} does not apply: {tail}")


def patched_test_files(
    base: Path, test_patch: str, *, max_bytes: int = 256 * 1024 * 1024
) -> dict[str, bytes | None]:
    """What the files a test patch touches hold after it is applied to the base tree.

    Path -> content (None: the patch deletes it), for every path the patch names. Computed on
    a private copy of those files, so ``base`` is not changed.

    Raises:
        PatchApplyError: The test patch does not apply to the base tree.
    """
    paths = patch_paths(test_patch, what="test patch")
    with tempfile.TemporaryDirectory(prefix="rb-testpatch-") as tmp:
        work = Path(tmp) / "tree"
        work.mkdir()
        for rel in paths.all:
            src = base / rel
            if file_kind(src) == "file":
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, work / rel)
        apply_patch(work, test_patch, what="test patch")
        out: dict[str, bytes | None] = {}
        for rel in paths.all:
            data = read_bounded(work / rel, max_bytes)
            out[rel] = data
        return out


def _clear_way(root: Path, rel: str) -> Path:
    """Make every parent of ``root/rel`` a real folder (links and files in the way removed)."""
    here = root
    for part in PurePosixPath(rel).parts[:-1]:
        here = here / part
        if file_kind(here) == "dir":
            continue
        if os.path.lexists(here):
            here.unlink()  # a link, file or FIFO where a folder belongs
        here.mkdir()
    return root / rel


def lay_files(root: Path, files: Mapping[str, bytes | None]) -> None:
    """Write ``files`` (path -> content, None: absent) over the tree ``root``, following no link.

    Whatever the agent left at such a path (a link, a folder, a FIFO) is removed first, and a
    link or file in place of a parent folder is replaced by a folder: the content lands in
    the workspace and nowhere else. Nothing of the agent runs meanwhile (its phase is over).
    """
    for rel, data in files.items():
        _check(rel, "lay_files")
        target = _clear_way(root, rel)
        kind = file_kind(target)
        if kind == "dir":
            remove_tree(target)
        elif os.path.lexists(target):
            target.unlink()
        if data is None:
            continue
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def repository_diff(base: Path, workspace: Path, *, max_bytes: int = 8 * 1024 * 1024) -> str:
    """The agent's patch: a ``git diff``-shaped diff of ``workspace`` against the base tree.

    Each file gets a ``diff --git a/X b/X`` header (``new file mode`` / ``deleted file mode``
    where it is added or removed), so the result is what ``git diff`` of the checkout shows
    and what ``git apply`` takes back (SWE-bench's ``model_patch``). Caches (``.git``,
    ``__pycache__``, ``*.egg-info``...) are left out; links and binary files are named on a
    line, never followed; cut at about ``max_bytes`` characters with a closing line.
    """
    from reliabench.scanners.changes import workspace_diff

    raw = workspace_diff(base, workspace, include_tests=True, max_bytes=max_bytes)
    out: list[str] = []
    lines = raw.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            a, b = line[4:].rstrip("\n"), lines[i + 1][4:].rstrip("\n")
            name_a = b.replace("b/", "a/", 1) if a == "/dev/null" else a
            name_b = a.replace("a/", "b/", 1) if b == "/dev/null" else b
            out.append(f"diff --git {name_a} {name_b}\n")
            if a == "/dev/null":
                out.append("new file mode 100644\n")
            elif b == "/dev/null":
                out.append("deleted file mode 100644\n")
        out.append(line)
        i += 1
    return "".join(out)
