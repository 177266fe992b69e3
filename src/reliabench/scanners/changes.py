r"""Scan only what the agent wrote: the change set between starter and workspace.

``changed_files`` compares the task's starter workspace with the rollout's workspace after
the agent ran and lists added, modified and deleted files, with the 1-based line numbers the
agent added or changed in each (every line of a new file; a difflib comparison against the
starter for a modified one). ``filter_to_changes`` then drops findings that already existed
in the starter: they are not the agent's. ``workspace_diff`` renders the same comparison as
a unified diff, which the runner stores as an artifact.

Test-named files -- anything under a ``tests/`` or ``test/`` directory, ``test_*.py``,
``*_test.py`` and ``conftest.py`` (:func:`is_test_path`) -- are part of the change set like
any other file (the default ``include_tests=True``): the hidden tests are never in the
workspace, and a file the agent wrote is the agent's code whatever its name (a solution can
import its helpers from ``tests/_impl.py``). Findings in them are marked ``test_file`` by
the scanning path (:mod:`reliabench.scanners.workspace`) and count like the others.
``include_tests=False`` leaves them out (for a caller who wants the deliverable only).

What is left out: caches and tool state at any depth: ``__pycache__``, ``*.pyc``,
``.git``, ``.pytest_cache``, ``.mypy_cache``, ``.ruff_cache``, ``.hypothesis``, ``.tox``,
``.nox``, ``.venv``, ``venv``, ``node_modules``, ``*.egg-info``, ``.coverage`` -- except
Python source (:data:`SOURCE_SUFFIXES`): a ``.venv/impl.py`` or ``node_modules/impl.py`` is
code the solution can import (``sys.path.insert``), so it is listed, scanned and kept like
any other file. (Bytecode is removed before the tests instead: ``scanners.workspace``.)

Safety: the workspace is untrusted. Symbolic links are compared by their target text and
never followed (a link to ``/etc/shadow`` must not end up in a diff artifact), FIFOs and
devices are never opened, and files are opened with ``O_NOFOLLOW | O_NONBLOCK``.

Line numbers follow ``bytes.splitlines`` (``\n``, ``\r\n`` and ``\r`` end a line), which
is how Python's tokenizer -- and so Bandit -- counts lines. A pure deletion marks no line of
the new file: removing a sanitiser the starter had is not attributed to a surviving line.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Final, Literal

from reliabench.errors import InvalidArgumentError
from reliabench.files.untrusted import read_bounded, walk_tree
from reliabench.records import Finding

__all__ = [
    "CACHE_DIRS",
    "CACHE_FILE_PATTERNS",
    "DEFAULT_MAX_FILE_BYTES",
    "SOURCE_SUFFIXES",
    "TEST_DIRS",
    "TEST_FILE_PATTERNS",
    "ChangeSet",
    "changed_files",
    "filter_to_changes",
    "is_ignored",
    "is_test_path",
    "quote_path",
    "workspace_diff",
]

CACHE_DIRS: Final = frozenset({
    "__pycache__", ".git", ".hg", ".svn", ".pytest_cache", ".mypy_cache", ".ruff_cache",
    ".hypothesis", ".tox", ".nox", ".venv", "venv", "node_modules", ".eggs",
})
CACHE_FILE_PATTERNS: Final = ("*.pyc", "*.pyo", ".coverage", ".coverage.*", ".DS_Store")
TEST_DIRS: Final = frozenset({"tests", "test"})
TEST_FILE_PATTERNS: Final = ("test_*.py", "*_test.py", "conftest.py")
DEFAULT_MAX_FILE_BYTES: Final = 4 * 1024 * 1024
SOURCE_SUFFIXES: Final = frozenset({".py", ".pyw"})
"""Python source: never left out for the folder it is in (the tests can import it from anywhere)."""

_Kind = Literal["file", "link", "other", "error"]


def is_test_path(rel: str) -> bool:
    """Whether the POSIX relative path ``rel`` is named like test code.

    Example:
        >>> is_test_path("tests/_impl.py"), is_test_path("test_impl.py"), is_test_path("impl.py")
        (True, True, False)
    """
    *dirs, name = PurePosixPath(rel).parts or ("",)
    return any(d in TEST_DIRS for d in dirs) or any(
        fnmatch.fnmatchcase(name, p) for p in TEST_FILE_PATTERNS)


def is_ignored(rel: str, *, include_tests: bool = False) -> bool:
    """Whether the POSIX relative path ``rel`` is left out of change sets.

    Example:
        >>> is_ignored("pkg/tests/test_x.py"), is_ignored("app/__pycache__/m.cpython-311.pyc")
        (True, True)
        >>> is_ignored("tests/helper.py", include_tests=True), is_ignored("src/app.py")
        (False, False)
    """
    parts = PurePosixPath(rel).parts
    if not parts:
        return True
    if not include_tests and is_test_path(rel):
        return True
    *dirs, name = parts
    if PurePosixPath(name).suffix in SOURCE_SUFFIXES:
        return False  # importable wherever it lies
    if any(d in CACHE_DIRS or d.endswith(".egg-info") for d in dirs):
        return True
    return any(fnmatch.fnmatchcase(name, p) for p in CACHE_FILE_PATTERNS)


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: _Kind
    size: int = 0
    link: str = ""


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """What the agent changed in its workspace, relative to the starter.

    Attributes:
        added: Paths (POSIX, relative) that exist only in the workspace.
        modified: Paths whose content (or link target, or kind) differs.
        deleted: Paths that exist only in the starter, for the record.
        changed_lines: For every added or modified *regular file*: the 1-based lines the
            agent added or changed (all lines of a new file; empty when it could not be
            read, so a scanner reports it as an error instead).
        unreadable: Workspace paths that could not be examined (a directory nested deeper
            than ``untrusted_files.MAX_DEPTH``, a path longer than ``PATH_MAX``, no
            permission): their content was not compared or scanned, and callers must say so.
    """

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    changed_lines: Mapping[str, frozenset[int]] = field(
        default_factory=lambda: MappingProxyType({}), hash=False
    )
    unreadable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.changed_lines, MappingProxyType):
            frozen = {k: frozenset(v) for k, v in dict(self.changed_lines).items()}
            object.__setattr__(self, "changed_lines", MappingProxyType(frozen))

    @property
    def files(self) -> tuple[str, ...]:
        """The regular files to scan (added or modified), sorted."""
        return tuple(sorted(self.changed_lines))

    @property
    def empty(self) -> bool:
        """True when the agent changed nothing (outside ignored paths)."""
        return not (self.added or self.modified or self.deleted)


def _check_dir(value: object, name: str) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidArgumentError(f"{name}: expected a directory path, got {value!r}")
    path = Path(value)
    if not path.is_dir():
        raise InvalidArgumentError(f"{name}: expected an existing directory, got {str(value)!r}")
    return path


def _check_max(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"max_file_bytes: expected an integer >= 1, got {value!r}")
    return value


def _walk(root: Path, include_tests: bool) -> dict[str, _Entry]:
    def skip(rel: str) -> bool:  # tool-state folders are walked: they may hold Python source
        return not include_tests and is_test_path(rel + "/x")

    entries: dict[str, _Entry] = {}
    for e in walk_tree(root, skip_dir=skip):
        if e.kind == "dir":
            continue
        if e.kind == "error":
            if not skip(e.rel):
                entries[e.rel] = _Entry("error", link=e.error)
            continue
        if is_ignored(e.rel, include_tests=include_tests):
            continue
        if e.kind == "link":
            try:
                target = os.readlink(root / e.rel)
            except (OSError, ValueError):
                target = "(unreadable link)"
            entries[e.rel] = _Entry("link", link=target)
        elif e.kind == "file":
            entries[e.rel] = _Entry("file", size=e.size)
        else:
            entries[e.rel] = _Entry("other")
    return entries


def _read(path: Path, limit: int) -> bytes | None:
    """Up to ``limit + 1`` bytes of a regular file, without following links; None if unreadable."""
    return read_bounded(path, limit)


def _same(old_path: Path, new_path: Path, old: bytes, new: bytes, limit: int) -> bool:
    """Equal contents; ``old``/``new`` are the first ``limit + 1`` bytes already read."""
    if old != new:
        return False
    if len(old) <= limit:
        return True
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fa, fb = os.open(old_path, flags), os.open(new_path, flags)
    except OSError:
        return False
    try:
        while True:
            a, b = os.read(fa, 1 << 20), os.read(fb, 1 << 20)
            if a != b:
                return False
            if not a:
                return True
    except OSError:
        return False
    finally:
        os.close(fa)
        os.close(fb)


def _changed(old: bytes, new: bytes) -> frozenset[int]:
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    lines: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(range(j1 + 1, j2 + 1))
    return frozenset(lines)


def _all_lines(data: bytes) -> frozenset[int]:
    return frozenset(range(1, len(data.splitlines()) + 1))


def _count_all_lines(path: Path) -> frozenset[int]:
    """Every line of a (large) file, counted as ``bytes.splitlines`` would, in O(1) memory."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return frozenset()
    count, last, pending_cr = 0, b"", False
    try:
        while chunk := os.read(fd, 1 << 20):
            if pending_cr and chunk.startswith(b"\n"):
                chunk = chunk[1:]  # the \n of a \r\n split across chunks
            count += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
            pending_cr = chunk.endswith(b"\r")
            last = chunk[-1:] or last
    except OSError:
        return frozenset()
    finally:
        os.close(fd)
    if last and last not in (b"\n", b"\r"):
        count += 1
    return frozenset(range(1, count + 1))


def changed_files(
    starter: Path,
    workspace: Path,
    *,
    include_tests: bool = True,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> ChangeSet:
    r"""Compare a starter workspace with the workspace the agent left behind.

    Args:
        starter: The task's starter workspace (pristine).
        workspace: The rollout's workspace after the agent ran.
        include_tests: List test-named files too (the default: they are the agent's code
            like any other; see the module docstring).
        max_file_bytes: Files larger than this are not diffed line by line: when they
            differ, every line of the new version counts as changed.

    Returns:
        The change set; paths are POSIX and relative, tuples sorted.

    Raises:
        InvalidArgumentError: a directory does not exist or ``max_file_bytes`` < 1.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ...     _ = (Path(a) / "m.py").write_text("x = 1\n")
        ...     _ = (Path(b) / "m.py").write_text("x = 1\ny = 2\n")
        ...     _ = (Path(b) / "new.py").write_text("z = 3\n")
        ...     cs = changed_files(Path(a), Path(b))
        >>> cs.added, cs.modified, sorted(cs.changed_lines["m.py"])
        (('new.py',), ('m.py',), [2])
    """
    start = _check_dir(starter, "starter")
    work = _check_dir(workspace, "workspace")
    limit = _check_max(max_file_bytes)
    before, after = _walk(start, include_tests), _walk(work, include_tests)
    added: list[str] = []
    modified: list[str] = []
    lines: dict[str, frozenset[int]] = {}
    for rel in sorted(after):
        new = after[rel]
        old = before.get(rel)
        if new.kind != "file":
            if old is None:
                added.append(rel)
            elif old != new:
                modified.append(rel)
            continue
        new_data = _read(work / rel, limit)
        if old is None or old.kind != "file":
            (added if old is None else modified).append(rel)
            lines[rel] = frozenset() if new_data is None else _all_lines(new_data)
            continue
        old_data = _read(start / rel, limit)
        if new_data is not None and old_data is not None and _same(
            start / rel, work / rel, old_data, new_data, limit
        ):
            continue
        modified.append(rel)
        if new_data is None:
            lines[rel] = frozenset()
        elif old_data is None or len(new_data) > limit or len(old_data) > limit:
            lines[rel] = _count_all_lines(work / rel)
        else:
            lines[rel] = _changed(old_data, new_data)
    deleted = sorted(rel for rel in before if rel not in after)
    unreadable = tuple(sorted(rel for rel, e in after.items() if e.kind == "error"))
    return ChangeSet(tuple(added), tuple(modified), tuple(deleted), lines, unreadable)


def filter_to_changes(findings: Iterable[Finding], changeset: ChangeSet) -> tuple[Finding, ...]:
    """Keep the findings on lines the agent added or changed.

    A finding is kept when its file is an added or modified regular file of ``changeset``
    and its line is one of that file's changed lines (a finding without a line in a changed
    file is kept: it cannot be shown to predate the agent). Findings in unchanged files, and
    on lines the starter already had, are dropped.

    Raises:
        InvalidArgumentError: ``changeset`` is not a ``ChangeSet``.
    """
    if not isinstance(changeset, ChangeSet):
        raise InvalidArgumentError(
            f"changeset: expected a ChangeSet, got {type(changeset).__name__}"
        )
    kept = []
    for f in findings:
        rel = PurePosixPath(f.path.replace("\\", "/")).as_posix() if f.path else ""
        changed = changeset.changed_lines.get(rel)
        if changed is not None and (f.line is None or f.line in changed):
            kept.append(f)
    return tuple(kept)


def _text_lines(data: bytes) -> list[str] | None:
    if b"\0" in data:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # bytes.splitlines: the same line breaks as changed_files (not \f, \v or U+2028)
    return [line.decode("utf-8") for line in data.splitlines(keepends=True)]


_C_ESCAPES: Final = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r",
                     34: '\\"', 92: "\\\\"}


def quote_path(name: str) -> str:
    r"""A path as git prints it in a diff header: C-quoted when it holds special bytes.

    Like git with ``core.quotePath`` on (its default): a name with a double quote, a
    backslash, a control character or a non-ASCII byte is put in double quotes with C
    escapes (``\n``, ``\t``, ``\"``, ``\\``) and octal ``\ooo`` for other bytes, so a newline
    in a file name cannot start a forged line of the diff. Non-UTF-8 names (lone
    surrogates from ``os.fsdecode``) are quoted byte for byte.

    Example:
        >>> quote_path("a/x.py"), quote_path("a/x\n+++ b/evil"), quote_path("a/caf\u00e9")
        ('a/x.py', '"a/x\\n+++ b/evil"', '"a/caf\\303\\251"')
    """
    raw = os.fsencode(name)
    if all(0x20 <= b < 0x7F and b not in (34, 92) for b in raw):
        return name
    out = []
    for b in raw:
        if b in _C_ESCAPES:
            out.append(_C_ESCAPES[b])
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _hunks(rel: str, old: list[str] | None, new: list[str] | None, context: int) -> list[str]:
    a_name = "/dev/null" if old is None else quote_path(f"a/{rel}")
    b_name = "/dev/null" if new is None else quote_path(f"b/{rel}")
    out: list[str] = []
    for line in difflib.unified_diff(old or [], new or [], a_name, b_name, n=context):
        if line.endswith("\n"):
            out.append(line)
        else:  # only the last line of a file can lack its newline
            out.append(line + "\n\\ No newline at end of file\n")
    return out


def workspace_diff(
    starter: Path,
    workspace: Path,
    *,
    include_tests: bool = True,
    context: int = 3,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_bytes: int | None = None,
) -> str:
    """A unified diff (``a/`` = starter, ``b/`` = workspace) of everything the agent changed.

    Caches are left out; test code is included by default (an agent that edits tests is worth
    seeing). Binary files, symbolic links, special files, unreadable and oversized files are
    named on one line each instead of being diffed; link targets are never followed.

    Args:
        starter: The task's starter workspace.
        workspace: The rollout's workspace after the agent ran.
        include_tests: Include test code.
        context: Lines of context around each change.
        max_file_bytes: Larger files are named, not diffed.
        max_bytes: Stop after about this many characters of diff and end it with a line
            saying how many paths were left out (None: no limit). An agent that writes
            20,000 files gets a bounded diff, computed in bounded time.

    Raises:
        InvalidArgumentError: a directory does not exist, ``context`` < 0 or
            ``max_file_bytes`` < 1.
    """
    start = _check_dir(starter, "starter")
    work = _check_dir(workspace, "workspace")
    limit = _check_max(max_file_bytes)
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise InvalidArgumentError(f"context: expected an integer >= 0, got {context!r}")
    before, after = _walk(start, include_tests), _walk(work, include_tests)
    out: list[str] = []
    size = skipped = 0
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old == new and old is not None and old.kind != "file":
            continue
        if max_bytes is not None and size > max_bytes:
            skipped += 1
            continue
        part = _diff_one(rel, start, work, old, new, limit, context)
        out.extend(part)
        size += sum(len(p) for p in part)
    if skipped:
        out.append(f"[... diff cut by reliabench at {max_bytes} characters: {skipped} more "
                   "path(s) not compared ...]\n")
    return "".join(out)


def _diff_one(
    rel: str,
    start: Path,
    work: Path,
    old: _Entry | None,
    new: _Entry | None,
    limit: int,
    context: int,
) -> Sequence[str]:
    if (old is not None and old.kind != "file") or (new is not None and new.kind != "file"):
        def show(e: _Entry | None) -> str:
            if e is None:
                return "(absent)"
            if e.kind == "error":
                return f"not examined ({e.link})"
            return {"link": f"symbolic link -> {e.link!r}", "file": "regular file"}.get(
                e.kind, "special file"
            )

        return [f"Changed {quote_path(rel)}: {show(old)} => {show(new)}\n"]
    old_data = None if old is None else _read(start / rel, limit)
    new_data = None if new is None else _read(work / rel, limit)
    if old_data is not None and new_data is not None and old_data == new_data:
        return []
    if (old is not None and old_data is None) or (new is not None and new_data is None):
        return [f"Cannot read {quote_path(rel)}\n"]
    if (old_data is not None and len(old_data) > limit) or (
        new_data is not None and len(new_data) > limit
    ):
        return [f"Large file {quote_path(rel)} differs (over {limit} bytes, not diffed)\n"]
    old_lines = None if old_data is None else _text_lines(old_data)
    new_lines = None if new_data is None else _text_lines(new_data)
    if (old_data is not None and old_lines is None) or (new_data is not None and new_lines is None):
        a_name = "/dev/null" if old is None else quote_path(f"a/{rel}")
        b_name = "/dev/null" if new is None else quote_path(f"b/{rel}")
        return [f"Binary files {a_name} and {b_name} differ\n"]
    return _hunks(rel, old_lines, new_lines, context)
