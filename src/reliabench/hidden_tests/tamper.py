"""The tamper scan: files of a workspace that try to change how the hidden tests start or import.

Files that could change how pytest or Python start (``conftest.py``, ``pytest.ini``,
``sitecustomize.py``, ``*.pth``, a ``pytest.py`` ...) or that are named like a module of the
hidden tests (``test_adder.py``, ``helpers.py``) are *flagged* (``tamper_suspected``,
``tamper_files``); the staging, the ini file and the import guard make sure none of them can
take effect (:mod:`reliabench.hidden_tests.fresh`). Every read of the workspace here is an
``lstat`` walk with bounded ``O_NOFOLLOW | O_NONBLOCK`` reads
(:mod:`reliabench.files.untrusted`).
"""

from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path
from typing import Final

from reliabench.files.untrusted import file_kind, read_bounded, walk_tree
from reliabench.hidden_tests import _import_guard
from reliabench.hidden_tests.staging import GUARD_MODULE, PLUGIN_MODULE

__all__ = ["TAMPER_NAMES", "find_tamper_files", "hidden_test_names"]

TAMPER_NAMES: Final = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "sitecustomize.py",
        "usercustomize.py",
        "pytest.py",
        "py.py",
        "pluggy.py",
        "_pytest",
        "_pytest.py",
        "pytest",
        "pluggy",
        "reliabench",
        f"{PLUGIN_MODULE}.py",
        f"{GUARD_MODULE}.py",
    }
)
"""File or directory names that are flagged wherever they appear in a workspace."""


_CONFIG_READ_BYTES: Final = 1 << 20


def _is_pytest_config(path: Path) -> bool:
    name = path.name
    data = read_bounded(path, _CONFIG_READ_BYTES)  # never through a link, never a FIFO
    if data is None:
        return False
    text = data.decode("utf-8", errors="replace")
    if name == "pyproject.toml":
        return "[tool.pytest" in text
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except (configparser.Error, RecursionError, ValueError):
        return "pytest" in text
    wanted = "tool:pytest" if name == "setup.cfg" else "pytest"
    return parser.has_section(wanted) or parser.has_section("tool:pytest")


def _is_suspect(path: Path, kind: str | None = None) -> bool:
    name = path.name
    if name in TAMPER_NAMES or name.endswith(".pth"):
        return True
    if name.startswith("conftest.") and name.endswith(".pyc"):
        return True
    if name in ("tox.ini", "setup.cfg", "pyproject.toml"):
        if (kind or file_kind(path)) != "file":
            return False  # a link or special file is never opened; pytest reads none here
        return _is_pytest_config(path)
    return False


def _same_file(original: Path, path: Path) -> bool:
    """Both are regular files (by lstat) with equal content, compared in bounded reads."""
    a = read_bounded(original, _CONFIG_READ_BYTES * 4)
    b = read_bounded(path, _CONFIG_READ_BYTES * 4)
    return a is not None and a == b and len(a) <= _CONFIG_READ_BYTES * 4


def hidden_test_names(tests_dir: Path) -> frozenset[str]:
    """The top-level module names the hidden tests provide (their modules, helpers, folders).

    The names a workspace file must not have: pytest and the lean runner import the hidden
    tests by these names (:mod:`reliabench.hidden_tests._import_guard` makes them resolve in
    the staged copy; a workspace entry named so is flagged). Standard-library names are left
    out (they resolve before the workspace anyway).
    """
    root = os.path.realpath(tests_dir)
    if not os.path.isdir(root):
        return frozenset()
    roots = [*_import_guard.pytest_roots(root), *_import_guard.plain_roots(root)]
    names = _import_guard.provided_names(root, roots, package_name="tests")  # staged as tests/
    return frozenset(n for n in names if n not in sys.stdlib_module_names
                     and n not in sys.builtin_module_names)


def find_tamper_files(workspace: Path, *, starter: Path | None = None,
                      tests_dir: Path | None = None) -> tuple[str, ...]:
    """Files in ``workspace`` that try to change how pytest or Python start.

    The workspace is untrusted: entries are examined with ``lstat`` and read only through
    bounded ``O_NOFOLLOW | O_NONBLOCK`` reads (:mod:`reliabench.files.untrusted`), so a link
    planted by the agent is never followed and a FIFO never blocks the runner.

    Flagged: the names of :data:`TAMPER_NAMES` and ``*.pth`` anywhere, pytest configuration
    in ``tox.ini``/``setup.cfg``/``pyproject.toml``, a sourceless ``*.pyc`` outside
    ``__pycache__`` and, with ``tests_dir``, every entry at any depth named like a module,
    helper or folder of the hidden tests (:func:`hidden_test_names`: ``test_adder.py``,
    ``helpers.py``, ``tests/`` when the tests are a package), with every changed file below
    such a folder when the starter has it too.

    Args:
        workspace: The rollout's workspace.
        starter: The untouched starter workspace; a file identical to the starter's file at
            the same relative path is not flagged (the task shipped it), nor a folder it has.
        tests_dir: The task's hidden tests (their names are reserved).

    Returns:
        Sorted paths relative to ``workspace`` (a flagged directory is not descended into).
    """
    found: list[str] = []
    flagged_dirs: set[str] = set()
    shadow_dirs: list[str] = []  # colliding folders the starter has: their changes are flagged
    reserved = hidden_test_names(Path(tests_dir)) if tests_dir is not None else frozenset()

    def skip(rel: str) -> bool:
        return rel in flagged_dirs

    def shipped(rel: str, kind: str) -> bool:
        if starter is None:
            return False
        if kind == "dir":
            return file_kind(Path(starter) / rel) == "dir"
        return kind == "file" and _same_file(Path(starter) / rel, Path(workspace) / rel)

    for entry in walk_tree(Path(workspace), skip_dir=skip):
        path = Path(workspace) / entry.rel
        if entry.kind == "error":
            continue
        name = path.name
        collides = _import_guard.module_name(name, entry.kind == "dir") in reserved or (
            name.endswith(".pyc") and path.parent.name != "__pycache__")
        below = any(entry.rel.startswith(d + "/") for d in shadow_dirs)
        if (collides or below) and not _is_suspect(path, entry.kind):
            if shipped(entry.rel, entry.kind):
                if entry.kind == "dir":
                    shadow_dirs.append(entry.rel)
                continue
            if entry.kind == "dir":
                if below:
                    continue  # its changed files are flagged one by one
                flagged_dirs.add(entry.rel)
            found.append(entry.rel)
            continue
        if not _is_suspect(path, entry.kind):
            continue
        if entry.kind == "dir":
            flagged_dirs.add(entry.rel)
            found.append(entry.rel)
            continue
        if starter is not None and entry.kind == "file" and _same_file(Path(starter) / entry.rel, path):
            continue
        found.append(entry.rel)
    return tuple(sorted(found))
