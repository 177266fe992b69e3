"""Hidden tests and their helpers import only from the harness's staging, never from the workspace.

:mod:`reliabench.hidden_tests.staging` copies this file next to the outcome plugin as
``_reliabench_import_guard``; the plugin (pytest, fresh or warm) and the lean runner install it
before the workspace is on ``sys.path`` and before any test module is imported. It must import
nothing but the standard library.

The route it closes: pytest's ``--import-mode=append`` (and the lean runner) import a test
module, a ``conftest.py`` below the root, and every helper next to the tests by *name*
(``test_adder``, ``helpers``, ``tests.test_adder``), so whatever ``sys.path`` finds first wins.
The workspace is on ``sys.path`` (the tested code must be importable), and so a workspace file
``test_adder.py``, ``helpers.py``, ``conftest.py``, a package ``tests/`` or a regular package
where the tests have a namespace folder replaced the hidden one, and so did any directory the
agent's code put on ``sys.path``. What this module does about it:

* **names**: every top-level name that the staged tests provide (their modules, ``conftest``
  files, helper modules and folders in the directories pytest puts on ``sys.path``) and that
  nothing before the workspace provides (standard library, site-packages) is *reserved*. A
  finder placed first on ``sys.meta_path`` resolves a reserved name, and every submodule of
  it, in the staged directories only, whatever ``sys.path`` or a package's ``__path__`` holds;
  pytest's assertion rewriter still rewrites what it would (it is asked with the staged
  directories as the path);
* **planted modules**: code imported earlier (the agent's module, imported by the first test
  module) can put a fake module into ``sys.modules`` under a reserved name, which ``import``
  returns without asking any finder. :meth:`ImportGuard.purge` removes every module under a
  reserved name that this guard did not load; the plugin calls it before pytest collects
  anything and before each test, the lean runner before each module and test. What it removed
  is kept in :attr:`ImportGuard.planted` (reported as tamper);
* **bytecode that is not the source**: modules of the workspace are compiled from their source
  every time: a ``__pycache__/*.pyc`` the agent wrote (with a header that matches the source's
  size and time) is never read -- nor pytest's own rewritten ``*-pytest-*.pyc`` of a
  test-named workspace module -- and a sourceless ``*.pyc`` is never imported, so the code that
  runs is the code that was scanned, diffed and kept.

In-process code can still undo all of this (remove the finder, edit a module the tests already
imported): the residual risk "same-process code is all-powerful" of docs/threat-model.md.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

__all__ = ["ImportGuard", "SourceOnlyLoader", "install", "module_name", "plain_roots",
           "provided_names", "pytest_roots"]

_SKIP_DIRS = frozenset({"__pycache__"})

Delegate = Callable[[str, list[str]], "ModuleSpec | None"]


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")
                                     or name == "conftest.py")


def _package_root(path: str, tests_root: str) -> str:
    """The directory pytest's ``append`` mode puts on ``sys.path`` for the module at ``path``.

    The parent of the topmost directory that still has an ``__init__.py`` (and an identifier
    name), else the module's own directory (``_pytest.pathlib.resolve_package_path``); the
    climb stops at ``tests_root`` (staged, its parent is the harness's directory).
    """
    directory = os.path.dirname(path)
    top = None
    while _inside(directory, tests_root) and os.path.isfile(os.path.join(directory, "__init__.py")) \
            and os.path.basename(directory).isidentifier():
        top = directory
        directory = os.path.dirname(directory)
    return os.path.dirname(top) if top is not None else os.path.dirname(path)


def _walk(tests_root: str) -> Iterable[tuple[str, list[str]]]:
    for dirpath, dirnames, filenames in os.walk(tests_root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        yield dirpath, sorted(filenames)


def pytest_roots(tests_root: str) -> list[str]:
    """The directories pytest (``--import-mode=append``) puts on ``sys.path`` for these tests."""
    roots: list[str] = []
    for dirpath, filenames in _walk(tests_root):
        for name in filenames:
            if _is_test_file(name) or name == "__init__.py":
                root = _package_root(os.path.join(dirpath, name), tests_root)
                if root not in roots:
                    roots.append(root)
    return roots


def plain_roots(tests_root: str) -> list[str]:
    """The directories the lean runner puts on ``sys.path``: each test module's own."""
    roots = [tests_root]
    for dirpath, filenames in _walk(tests_root):
        if any(_is_test_file(n) for n in filenames) and dirpath not in roots:
            roots.append(dirpath)
    return roots


def module_name(entry: str, is_dir: bool) -> str | None:
    """The top-level name a directory entry is importable as (``x.py``, ``x.*.so``, ``x/``), or None."""
    if entry.startswith(".") or entry in _SKIP_DIRS:
        return None
    if is_dir:
        return entry if entry.isidentifier() else None
    for suffix in importlib.machinery.all_suffixes():
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            return stem if stem.isidentifier() and stem != "__init__" else None
    return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def provided_names(tests_root: str, roots: Iterable[str], *,
                   package_name: str | None = None) -> frozenset[str]:
    """Top-level module names that the tests in ``tests_root`` provide through ``roots``.

    A root inside ``tests_root`` provides every module, package and folder it holds; a root
    outside it (``tests_root`` is itself a package) provides only the package's name,
    ``package_name`` or ``tests_root``'s own name.
    """
    names: set[str] = set()
    real_tests = os.path.realpath(tests_root)
    for root in roots:
        real = os.path.realpath(root)
        if not _inside(real, real_tests):
            top = package_name or os.path.basename(real_tests)
            if top.isidentifier():
                names.add(top)
            continue
        try:
            entries = list(os.scandir(real))
        except OSError:
            continue
        for entry in entries:
            is_dir = entry.is_dir(follow_symlinks=False)
            name = module_name(entry.name, is_dir)
            if name is not None and (not is_dir or _holds_python(entry.path)):
                names.add(name)
    return frozenset(names)


def _holds_python(directory: str) -> bool:
    """Whether a folder holds a module somewhere (a folder of data files is no package)."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    return any(f.endswith(suffixes) for _, files in _walk(directory) for f in files)


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source loader that never reads bytecode: the module is compiled from its source."""

    def get_code(self, fullname: str) -> CodeType:
        """Compile the source file (no ``__pycache__`` lookup)."""
        source = self.get_data(self.path)
        return self.source_to_code(source, self.path)


class ImportGuard:
    """The meta-path finder that keeps reserved names in the staged tests (see the module doc).

    Args:
        roots: The staged directories the tests import from, in the order to search them.
        names: The reserved top-level names.
        tests_root: The staged tests; submodules of reserved packages come only from below it.
        delegate: Asked first with the staged path (pytest's assertion rewriter).
        workspace: The rollout's workspace (its test-named modules are loaded from source).
    """

    def __init__(self, roots: Sequence[str], names: frozenset[str], tests_root: str,
                 delegate: Delegate | None = None, workspace: str | None = None) -> None:
        self.workspace = os.path.realpath(workspace) if workspace else None
        self.roots = list(roots)
        self.names = names
        self.tests_root = os.path.realpath(tests_root)
        self.parents = {os.path.realpath(r) for r in self.roots}
        self.delegate = delegate
        self.planted: list[str] = []
        # reserved names that are folders (packages, namespaces): they can have submodules
        self.packages = any(os.path.isdir(os.path.join(r, n)) for r in self.roots for n in names) \
            or any(not _inside(os.path.realpath(r), self.tests_root) for r in self.roots)
        self._specs: dict[str, ModuleSpec] = {}

    def reserved(self, fullname: str) -> bool:
        """Whether ``fullname`` (or its top-level package) is a name of the hidden tests."""
        return fullname.partition(".")[0] in self.names

    def _staged_path(self, fullname: str, path: Sequence[str] | None) -> list[str]:
        if "." not in fullname:
            # the order sys.path gives them (as pytest appended them), then the others
            on_path = [p for p in sys.path if p in self.roots]
            return on_path + [r for r in self.roots if r not in on_path]
        return [p for p in (path or ()) if isinstance(p, str)
                and (_inside(os.path.realpath(p), self.tests_root)
                     or os.path.realpath(p) in self.parents)]

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """Resolve a reserved name in the staged directories only; None for any other name.

        One exception: a test-named module of the workspace (``test_*``, ``*_test``) is loaded
        from its source here, before pytest's assertion rewriter, which would read its own
        cached ``.pyc`` of it from the workspace's ``__pycache__`` (a file the agent can forge).
        """
        if not self.reserved(fullname):
            return self._workspace_test_module(fullname, path)
        where = self._staged_path(fullname, path)
        spec = self.delegate(fullname, where) if self.delegate is not None and where else None
        if spec is None and where:
            spec = importlib.machinery.PathFinder.find_spec(fullname, where)
        if spec is None:
            # never fall through to sys.path: the workspace would answer
            raise ModuleNotFoundError(f"No module named {fullname!r} in the hidden tests",
                                      name=fullname)
        self._specs[fullname] = spec
        return spec

    def _workspace_test_module(self, fullname: str, path: Sequence[str] | None) -> ModuleSpec | None:
        last = fullname.rpartition(".")[2]
        if self.workspace is None or not (last.startswith("test_") or last.endswith("_test")):
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = None if found is None else found.origin
        if not isinstance(origin, str) or not origin.endswith(".py") \
                or not _inside(os.path.realpath(origin), self.workspace):
            return None
        return importlib.util.spec_from_file_location(
            fullname, origin, loader=SourceOnlyLoader(fullname, origin),
            submodule_search_locations=found.submodule_search_locations if found else None)

    def adopt(self) -> None:
        """Accept the reserved modules already imported from the staged tests (trusted code)."""
        for name, module in list(sys.modules.items()):
            if not (isinstance(name, str) and self.reserved(name)):
                continue
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None)
            if isinstance(spec, ModuleSpec) and isinstance(origin, str) \
                    and _inside(os.path.realpath(origin), self.tests_root):
                self._specs[name] = spec

    def trust(self, name: str, module: ModuleType) -> None:
        """Accept ``module``, loaded from a staged file by the harness itself, under ``name``."""
        spec = getattr(module, "__spec__", None)
        if isinstance(spec, ModuleSpec):
            self._specs[name] = spec

    def purge(self) -> list[str]:
        """Remove modules under reserved names that this guard did not load; return their names."""
        removed = []
        if self.packages:  # submodules too: walk every module
            candidates = [n for n in list(sys.modules) if isinstance(n, str) and self.reserved(n)]
        else:  # only top-level names (the lean runner's usual case): a few lookups
            candidates = sorted(n for n in self.names if n in sys.modules)
        for name in candidates:
            module = sys.modules.get(name)
            mine = self._specs.get(name)
            if mine is None or getattr(module, "__spec__", None) is not mine:
                sys.modules.pop(name, None)
                removed.append(name)
        self.planted += [n for n in removed if n not in self.planted]
        return removed


def _source_only_hook(workspace: str) -> Callable[[str], importlib.machinery.FileFinder]:
    real_ws = os.path.realpath(workspace)
    details = ((importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
               (SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES))

    def hook(entry: str) -> importlib.machinery.FileFinder:
        if not isinstance(entry, str) or not _inside(os.path.realpath(entry or "."), real_ws):
            raise ImportError("not in the workspace")  # the next hook handles it
        return importlib.machinery.FileFinder(entry, *details)

    return hook


def install(tests_root: str, roots: Sequence[str], workspace: str | None, *,
            delegate: Delegate | None = None) -> ImportGuard:
    """Reserve the names of the staged tests and make the workspace's modules source-only.

    Call before the workspace is on ``sys.path`` and before any module of it is imported.

    Args:
        tests_root: The staged hidden tests.
        roots: The staged directories the tests import from (:func:`pytest_roots`,
            :func:`plain_roots`).
        workspace: The rollout's workspace, or None.
        delegate: Asked first for a reserved name, with the staged path (pytest's assertion
            rewriter's ``find_spec``).

    Returns:
        The installed guard (first on ``sys.meta_path``).
    """
    staged = {os.path.realpath(r) for r in roots}
    real_ws = os.path.realpath(workspace) if workspace else None
    # what comes before the workspace: absolute entries that are neither staged nor in it
    before = [p for p in sys.path if isinstance(p, str) and os.path.isabs(p)
              and os.path.realpath(p) not in staged
              and not (real_ws and _inside(os.path.realpath(p), real_ws))]

    def found_before(name: str) -> bool:
        if name in sys.builtin_module_names:
            return True
        spec = importlib.machinery.PathFinder.find_spec(name, before)
        return spec is not None and spec.origin is not None  # a namespace portion loses

    names = frozenset(n for n in provided_names(tests_root, roots) if not found_before(n))
    guard = ImportGuard(roots, names, tests_root, delegate, workspace)
    guard.adopt()
    sys.meta_path.insert(0, guard)
    if workspace and real_ws:
        sys.path_hooks.insert(0, _source_only_hook(workspace))
        own = _interpreter_dirs()
        for entry in [e for e in sys.path_importer_cache if isinstance(e, str)]:
            if _inside(entry, real_ws) or (not _inside_any(entry, own)
                                           and _inside(os.path.realpath(entry or "."), real_ws)):
                del sys.path_importer_cache[entry]
    return guard


def _interpreter_dirs() -> tuple[str, ...]:
    """The interpreter's own folders (its prefixes), which only their owner (root) can change.

    A cached finder of a folder below them cannot lead into a workspace (no rollout can put a
    link there), so it is not resolved: a warm worker's fork inherits dozens of them.
    """
    dirs = {p for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix) if p}
    return tuple(sorted(d for d in dirs if d != os.sep))


def _inside_any(path: str, roots: Sequence[str]) -> bool:
    return any(_inside(path, r) for r in roots)
