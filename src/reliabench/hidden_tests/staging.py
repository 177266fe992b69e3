"""Staging hidden tests for a sandboxed run: a private copy, the plugin and its import guard, one ini."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import marshal
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Final

from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.channel import Channel
from reliabench.sandbox import SandboxResult, slot_uid
from reliabench.sandbox.base import minimal_env

__all__ = [
    "GUARD_MODULE",
    "PLUGIN_MODULE",
    "UNUSED_PLUGINS",
    "RawRun",
    "fd_channel",
    "hidden_test_env",
    "precompile",
    "pytest_command",
    "socket_channel",
    "staged",
    "unneeded_plugins",
]

PLUGIN_MODULE: Final = "_reliabench_outcome_plugin"
"""The module name under which the outcome plugin is loaded inside the sandbox."""
GUARD_MODULE: Final = "_reliabench_import_guard"
"""The import guard's module name, staged beside the plugin (it loads it from there)."""

_BOOT: Final = (
    "import sys; sys.path.insert(0, {plugin_dir!r}); import pytest; "
    f"import {PLUGIN_MODULE} as plugin; "
    "raise SystemExit(int(pytest.main(sys.argv[1:], plugins=[plugin])))"
)
"""The fresh pytest process's ``-c`` program: the outcome plugin registered as an object.

It is registered after the built-in plugins and before any ``conftest.py``, as ``-p`` would
register it, so ``-p`` (still in the arguments) finds it and does not look for a ``pytest11``
entry point of its name in every installed distribution; a warm fork registers it the same
way (:func:`reliabench.warm.pytest_session.run_session`).
"""
_INI: Final = """[pytest]
# written by reliabench: the only ini file the hidden tests run with
addopts =
python_files = test_*.py *_test.py
"""


@contextlib.contextmanager
def staged(tests_dir: Path, slot: int, parent: Path | None = None, *, rewrite: bool = True) -> Iterator[Path]:
    """Copy the hidden tests and the plugin to a private directory; remove it afterwards.

    Every module gets its bytecode beside it (:func:`precompile`; pytest's rewritten
    bytecode too with ``rewrite``, for stagings pytest runs).
    """
    if not tests_dir.is_dir():
        raise SandboxError(f"hidden tests directory not found: {tests_dir}")
    staging = Path(tempfile.mkdtemp(prefix="rb-hidden-", dir=parent))
    try:
        shutil.copytree(
            tests_dir,
            staging / "tests",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"),
        )
        plugin_dir = staging / "plugin"
        plugin_dir.mkdir()
        plugin_src = Path(__file__).with_name("_outcome_plugin.py")
        shutil.copyfile(plugin_src, plugin_dir / f"{PLUGIN_MODULE}.py")
        shutil.copyfile(plugin_src.with_name("_import_guard.py"), plugin_dir / f"{GUARD_MODULE}.py")
        (staging / "pytest.ini").write_text(_INI, encoding="utf-8")
        precompile(staging, rewrite=rewrite)
        for dirpath, dirnames, filenames in os.walk(staging):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o644)
        if os.geteuid() == 0:
            # only this slot's group may enter (other slots' agents must not read the tests).
            # Owned by root, not by the slot uid: the namespaces backend removes the slot
            # uid's files from /tmp after each run, and a run of the same slot in another
            # process may end while this directory waits for the slot lock.
            os.chown(staging, 0, slot_uid(slot))
            os.chmod(staging, 0o750)
        else:
            os.chmod(staging, 0o700)
        yield staging
    finally:
        remove_tree(staging)


def precompile(staging: Path, *, rewrite: bool = True) -> int:
    """Put bytecode of every module of a staging beside it, so that no test process compiles it.

    Two caches in each ``__pycache__``: the interpreter's own bytecode (what the lean runner,
    the import guard and plain imports read) and, with ``rewrite``, pytest's
    assertion-rewritten bytecode (what pytest's import hook reads for test modules,
    ``conftest.py`` files and the outcome plugin; it reads a cache even where it may not
    write one, as under ``-B``). Both are checked against their source's hash when loaded,
    so a stale or foreign cache is recompiled, never trusted; and both are made once per
    source content in this process (:data:`_BYTECODE`), then only written: the plugin and
    its guard are the same in every staging, and a task's tests the same in every slot's.
    The staging is trusted suite content, written by this process and read-only to every
    test process: nothing of a rollout can put bytecode there. Returns how many files got
    bytecode; a file that does not compile is left to the test process, which reports the
    error as it would have.
    """
    done = 0
    for dirpath, dirnames, filenames in os.walk(staging):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as fh:
                    source = fh.read()
                plain, rewritten = _bytecode(source, path, rewrite)
                cache = os.path.join(dirpath, "__pycache__")
                os.makedirs(cache, exist_ok=True)
                with open(importlib.util.cache_from_source(path), "wb") as fh:
                    fh.write(plain)
                if rewritten is not None:
                    with open(os.path.join(cache, name[:-3] + rewritten[0]), "wb") as fh:
                        fh.write(rewritten[1])
            except (SyntaxError, ValueError, OSError):
                continue
            done += 1
    return done


_BYTECODE: dict[tuple[bytes, bool], tuple[bytes, CodeType, tuple[str, CodeType] | None]] = {}
"""Source hash (and whether pytest's is wanted) -> its hash and code objects, made once per process."""
_BYTECODE_MAX = 4096


def _bytecode(source: bytes, path: str, rewrite: bool) -> tuple[bytes, tuple[str, bytes] | None]:
    """The checked-hash ``.pyc`` bytes of ``source``, and pytest's (file name tail, bytes) if wanted.

    The compiled code is cached by the source's content; each cache written names its own
    ``path`` (the code's file name), as a compilation of that file would.

    Raises:
        SyntaxError, ValueError: ``source`` does not compile.
    """
    key = (hashlib.sha256(source).digest(), rewrite)
    hit = _BYTECODE.get(key)
    if hit is None:
        code = compile(source, path, "exec", dont_inherit=True)
        rewritten: tuple[str, CodeType] | None = None
        if rewrite:
            try:
                from _pytest.assertion import rewrite as pytest_rewrite

                tree = ast.parse(source, filename=path)
                pytest_rewrite.rewrite_asserts(tree, source, path, None)
                rewritten = (pytest_rewrite.PYC_TAIL, compile(tree, path, "exec", dont_inherit=True))
            except (ImportError, AttributeError):  # another pytest: it rewrites in the test process
                rewritten = None
        if len(_BYTECODE) >= _BYTECODE_MAX:
            _BYTECODE.clear()
        hit = _BYTECODE[key] = (importlib.util.source_hash(source), code, rewritten)
    source_hash, code, rewritten = hit
    header = bytes(importlib.util.MAGIC_NUMBER) + (3).to_bytes(4, "little") + source_hash
    plain = header + marshal.dumps(_named(code, path))
    if rewritten is None:
        return plain, None
    return plain, (rewritten[0], header + marshal.dumps(_named(rewritten[1], path)))


def _named(code: CodeType, path: str) -> CodeType:
    """``code`` and every code object in it with ``path`` as their file name."""
    if code.co_filename == path:
        return code
    consts = tuple(_named(c, path) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def socket_channel(path: str) -> dict[str, str]:
    """Where the outcome plugin connects: the socket ``path`` as the test process sees it."""
    return {"RELIABENCH_OUTCOME_SOCKET": path}


def fd_channel(outcome_fd: int, key_fd: int) -> dict[str, str]:
    """The outcome channel as inherited descriptors (a warm worker's fork, which execs nothing)."""
    return {"RELIABENCH_OUTCOME_FD": str(outcome_fd), "RELIABENCH_OUTCOME_KEY_FD": str(key_fd)}


def hidden_test_env(channel: Mapping[str, str], workspace: str | Path,
                    order_seed: int | None = None) -> dict[str, str]:
    """The whole environment of the hidden tests (a fresh process or a warm worker's fork).

    Nothing of the harness's environment: the sandbox's ``minimal_env``, no pytest plugin
    autoload, where the outcome plugin finds its ``channel`` (:func:`socket_channel` or
    :func:`fd_channel`) and the workspace (as the tests see it); with ``order_seed``
    (re-tests), the seed of the test order, which the outcome plugin (pytest) and the lean
    runner read when they load. Both paths get the order the same way, so a re-test runs on
    the path its rollout ran on.
    """
    env = {
        **minimal_env(),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        **channel,
        "RELIABENCH_WORKSPACE": str(workspace),
    }
    if order_seed is not None:
        env["RELIABENCH_ORDER_SEED"] = str(int(order_seed))
    return env


UNUSED_PLUGINS: Final = ("cacheprovider", "pastebin", "setuponly", "setupplan", "stepwise")
"""Built-in pytest plugins no hidden-test run uses: they act only on options it never passes
(``--lf``/``--ff``, ``--pastebin``, ``--setup-only``, ``--setup-plan``, ``--sw``) and define no
fixture; the cache would also write into the staged, read-only tests. Blocked with ``-p no:``."""

_PLUGIN_USES: Final = {
    # the record_* fixtures (a --junitxml report is never asked for)
    "junitxml": re.compile(rb"\brecord_(?:property|xml_attribute|testsuite_property)\b"),
    # doctest_namespace, --doctest-* options in a conftest, doctests in test*.txt files
    "doctest": re.compile(rb"doctest"),
    # tmpdir, tmpdir_factory, testdir, and the py.path attributes (Node.fspath, Config.rootdir ...)
    "legacypath": re.compile(rb"\b(?:tmpdir|tmpdir_factory|testdir|Testdir|fspath|rootdir|startdir|"
                             rb"inifile|legacy_path|LEGACY_PATH)\b|\bpy\.path\b"),
}
"""Built-in plugins that only a test that names what they provide can use: a plugin whose
pattern occurs in no staged file (nor, for ``doctest``, a ``test*.txt`` file) is blocked."""


def unneeded_plugins(tests: Path) -> tuple[str, ...]:
    """The built-in pytest plugins the staged ``tests`` cannot use: blocked for their run.

    :data:`UNUSED_PLUGINS`, and each plugin of :data:`_PLUGIN_USES` that no file under
    ``tests`` mentions (every file is read, helpers, data and ``conftest.py`` files
    included). Blocking them changes no verdict: what they do for a run is what its tests ask
    of them by name; it saves their part of every session (their fixtures parsed, their hooks
    called for every test). Both test paths pass the same list.
    """
    used: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(tests):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.startswith("test") and name.endswith(".txt"):
                used.add("doctest")
            with contextlib.suppress(OSError), open(os.path.join(dirpath, name), "rb") as fh:
                text = fh.read()
            used.update(plugin for plugin, pattern in _PLUGIN_USES.items()
                        if plugin not in used and pattern.search(text))
    return UNUSED_PLUGINS + tuple(p for p in _PLUGIN_USES if p not in used)


def pytest_command(python: str, staging: Path, extra: Sequence[str],
                   unneeded: Sequence[str] | None = None) -> list[str]:
    """The pytest command line for staged tests: isolated, only the outcome plugin, one ini file.

    ``unneeded`` plugins are blocked (default: :func:`unneeded_plugins` of the staged tests).
    """
    tests = staging / "tests"
    blocked = unneeded_plugins(tests) if unneeded is None else tuple(unneeded)
    return [
        python,
        "-I",
        "-B",
        "-c",
        _BOOT.format(plugin_dir=str(staging / "plugin")),
        "-c",
        str(staging / "pytest.ini"),
        "--rootdir",
        str(tests),
        "--confcutdir",
        str(tests),
        *[arg for plugin in blocked for arg in ("-p", f"no:{plugin}")],
        "-p",
        PLUGIN_MODULE,
        "--import-mode=append",
        "-q",
        "--color=no",
        "--tb=short",
        "-o",
        "console_output_style=classic",
        *extra,
        str(tests),
    ]


@dataclass(frozen=True, slots=True)
class RawRun:
    """One run of the hidden tests: the sandbox's result and the checked outcome channel."""

    result: SandboxResult
    channel: Channel
