"""The lean test runner: plain ``test_*`` functions, one signed outcome each, no pytest session.

For tasks with ``test_runner = "plain"`` (hidden tests are top-level functions without
fixtures, parametrisation or plugins, as in converted HumanEval and MBPP suites). It runs in
the warm worker's rollout process, after the jail is set up and privileges are dropped, and
does what pytest with reliabench's outcome plugin does, minus pytest's start-up:

* it loads the staged outcome plugin (``_reliabench_outcome_plugin``) and signs its lines with
  the plugin's own writer, so the channel, its secret, the sequence numbers and the
  end-of-session list are exactly those of the pytest path;
* it installs the plugin's import guard (helpers of the tests import only from the staging,
  the workspace's modules only from source; modules planted under the tests' names are removed
  before each module and test and reported),
* it writes ``start``, appends the workspace to ``sys.path`` (after the standard library),
  imports every test module (``test_*.py``, ``*_test.py``, sorted like pytest) from its staged
  path; a module that cannot be imported is a ``collect_error`` and, as in pytest, then no
  test runs at all;
* ``collected`` lists every ``test*`` function of the modules (definition order), collected
  before any test runs, so a test that deletes another one does not stop it from running;
  with an order seed (re-tests: ``RELIABENCH_ORDER_SEED``, read by the outcome plugin) the
  list is shuffled with ``random.Random(seed)``, as the plugin does on the pytest path;
* each test is called with its output captured at the file-descriptor level (like pytest's
  ``--capture=fd``); a return is ``passed``, ``pytest.skip`` or ``unittest.SkipTest`` is
  ``skipped``, any other exception (``SystemExit`` and other ``BaseException`` included) is
  ``failed`` with its message, a traceback tail and the captured output in the log;
  ``KeyboardInterrupt`` and ``pytest.exit`` stop the session, like pytest; ``pytest.xfail``
  is ``xfailed`` (the parent fails an undeclared skip or xfail, :mod:`reliabench.hidden_tests.skips`);
* ``end`` closes the stream. A test that ends the process (``os._exit``, a crash) leaves the
  remaining tests without an outcome: the caller counts them failed.

Verdicts are those of the pytest path on the same rollouts (``tests/warm/test_plain_tests.py``
checks this, hostile code included).
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import tempfile
import traceback
import unittest
from collections.abc import Callable
from types import ModuleType
from typing import Any

from _pytest.outcomes import Exit as _PytestExit  # its own small module: no pytest session
from _pytest.outcomes import Skipped as _PytestSkipped
from _pytest.outcomes import XFailed as _PytestXFailed

__all__ = ["GUARD_MODULE", "PLUGIN_MODULE", "collect_order", "run_plain"]

PLUGIN_MODULE = "_reliabench_outcome_plugin"
GUARD_MODULE = "_reliabench_import_guard"
_MAX_SHOWN = 4096

# Bound once in the server, so that code under test that monkeypatches these modules or the
# builtins does not change how the runner itself works.
_write_fd = os.write
_dup = os.dup
_dup2 = os.dup2
_close = os.close
_lseek = os.lseek
_read = os.read
_getpid = os.getpid
_format_exception = traceback.format_exception
_spec_from_file = importlib.util.spec_from_file_location
_module_from_spec = importlib.util.module_from_spec
_TemporaryFile = tempfile.TemporaryFile
_Random = random.Random
# bound here, in the server, before any test runs: code under test that rebinds
# ``_pytest.outcomes.Skipped`` (say, to AssertionError) or plants another ``_pytest.outcomes``
# changes nothing of how the runner reads an outcome
_Skip = (_PytestSkipped, unittest.SkipTest)
_XFail = _PytestXFailed
_Stop = (KeyboardInterrupt, _PytestExit)
_isinstance = isinstance
_callable = callable
_str = str
_len = len
_sorted = sorted
_BaseException = BaseException
_KeyboardInterrupt = KeyboardInterrupt


def _classify(exc: BaseException) -> str:
    """What a test's exception means: ``skipped``, ``xfailed``, ``stop`` (end the session) or ``failed``."""
    if _isinstance(exc, _Skip):
        return "skipped"  # graded by the parent: counts only when declared
    if _isinstance(exc, _XFail):
        return "xfailed"
    if _isinstance(exc, _Stop):
        return "stop"
    return "failed"


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def collect_order(tests_root: str) -> list[str]:
    """The test modules under ``tests_root`` in pytest's order, as paths relative to it.

    pytest walks a directory's entries sorted by name, files and sub-directories alike, and
    descends into a directory where it meets it.
    """
    out: list[str] = []

    def walk(rel: str) -> None:
        path = os.path.join(tests_root, rel) if rel else tests_root
        for entry in _sorted(os.scandir(path), key=lambda e: e.name):
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name in ("__pycache__",) or entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                walk(child)
            elif entry.is_file(follow_symlinks=False) and _is_test_file(entry.name):
                out.append(child)

    walk("")
    return out


class _Capture:
    """Redirect fds 1 and 2 (and flush ``sys.stdout``/``sys.stderr``) into one temp file."""

    def __init__(self) -> None:
        self.saved = (_dup(1), _dup(2))
        self.file = _TemporaryFile(dir="/tmp")
        self.sys_streams = (sys.stdout, sys.stderr)

    def start(self) -> None:
        self.file.seek(0)
        self.file.truncate()
        fd = self.file.fileno()
        _dup2(fd, 1)
        _dup2(fd, 2)

    def stop(self) -> str:
        for stream in (sys.stdout, sys.stderr, *self.sys_streams):
            try:  # noqa: SIM105 - contextlib could be monkeypatched by the code under test
                stream.flush()
            except _BaseException:  # a replaced stream may do anything
                pass
        sys.stdout, sys.stderr = self.sys_streams
        _dup2(self.saved[0], 1)
        _dup2(self.saved[1], 2)
        try:
            size = _lseek(self.file.fileno(), 0, os.SEEK_END)
            if size <= _MAX_SHOWN:
                _lseek(self.file.fileno(), 0, os.SEEK_SET)
                return _read(self.file.fileno(), _MAX_SHOWN).decode("utf-8", "replace")
            _lseek(self.file.fileno(), size - _MAX_SHOWN, os.SEEK_SET)
            tail = _read(self.file.fileno(), _MAX_SHOWN).decode("utf-8", "replace")
            return f"[... {size - _MAX_SHOWN} bytes of output cut ...]\n{tail}"
        except OSError:
            return ""


def _say(text: str) -> None:
    data = memoryview(text.encode("utf-8", "replace"))
    while data:
        try:
            n = _write_fd(1, data)
        except OSError:
            return
        data = data[n:]


def _describe(exc: BaseException) -> str:
    try:
        lines = _format_exception(type(exc), exc, exc.__traceback__, limit=-3)
        return "".join(lines).rstrip()[-_MAX_SHOWN:]
    except _BaseException:  # an exception whose __str__ raises
        return f"<{type(exc).__name__} that cannot be shown>"


def _message(exc: BaseException) -> str:
    try:
        return _str(exc)[:500]
    except _BaseException:
        return "<message that cannot be shown>"


def _load_plugin(plugin_dir: str) -> Any:
    preloaded = sys.modules.get(PLUGIN_MODULE)
    if preloaded is not None and getattr(preloaded, "_preloaded_guard", None) is not None:
        preloaded.activate()  # the server's copy (nothing of the rollout has run yet)
        return preloaded
    spec = _spec_from_file(PLUGIN_MODULE, os.path.join(plugin_dir, PLUGIN_MODULE + ".py"))
    if spec is None or spec.loader is None:  # pragma: no cover - the file is staged by us
        raise ImportError(f"cannot load the outcome plugin from {plugin_dir}")
    module = _module_from_spec(spec)
    sys.modules[PLUGIN_MODULE] = module
    spec.loader.exec_module(module)
    return module


def _import_test_module(tests_root: str, rel: str) -> ModuleType:
    """Import like pytest's ``--import-mode=append``: basename, its directory appended."""
    path = os.path.join(tests_root, rel)
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.append(directory)
    name = os.path.basename(rel)[:-3]
    spec = _spec_from_file(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {rel}")
    module = _module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except _BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _test_functions(module: ModuleType) -> list[tuple[str, Callable[[], object], bool]]:
    found: list[tuple[str, Callable[[], object], bool]] = []
    for name, obj in list(vars(module).items()):
        if not name.startswith("test") or not _callable(obj) or not hasattr(obj, "__code__"):
            continue
        if getattr(obj, "__test__", True) is False:
            continue
        marks = getattr(obj, "pytestmark", [])
        security = any(getattr(m, "name", None) == "security" for m in marks)
        found.append((name, obj, security))
    return found


def run_plain(tests_root: str, plugin_dir: str, workspace: str) -> int:
    """Run every plain test under ``tests_root``; return pytest's exit code for the session.

    Args:
        tests_root: The staged hidden tests (read-only).
        plugin_dir: The staged outcome plugin's directory.
        workspace: The rollout's workspace (appended to ``sys.path``).

    Returns:
        0 all passed, 1 some failed, 2 interrupted (collection errors, ``pytest.exit``),
        5 no tests.
    """
    plugin = _load_plugin(plugin_dir)
    write = plugin._write
    written: list[list[str]] = plugin._written
    write({"event": "start", "pid": _getpid()})
    guard = plugin._guard_module
    # the tests and their helpers import only from the staging, the workspace only from source
    plugin.guard_imports(tests_root, None if guard is None else guard.plain_roots(tests_root))
    purge = plugin.purge_planted
    if workspace and workspace not in sys.path:
        sys.path.append(workspace)  # after the standard library and pytest
    capture = _Capture()
    items: list[tuple[str, Callable[[], object], bool]] = []
    errors: list[str] = []
    for rel in collect_order(tests_root):
        capture.start()
        try:
            purge()  # modules planted under the tests' names by code imported before
            module = _import_test_module(tests_root, rel)
            plugin.trust_module(module.__name__, module)
        except _BaseException as exc:  # a collection error, whatever it is
            out = capture.stop()
            if _isinstance(exc, _KeyboardInterrupt):
                raise
            errors.append(rel)
            write({"event": "collect_error", "name": rel})
            _say(f"ERROR collecting {rel}\n{_describe(exc)}\n{out}\n")
            continue
        capture.stop()
        items += [(f"{rel}::{name}", fn, sec) for name, fn, sec in _test_functions(module)]
    if plugin._order_seed is not None:  # re-tests: the seeded order the pytest plugin uses too
        _Random(int(plugin._order_seed)).shuffle(items)
    write({"event": "collected", "tests": [[name, sec] for name, _, sec in items]})
    status = 0
    if errors:
        _say(f"Interrupted: {_len(errors)} error(s) during collection\n")
        status = 2
    elif not items:
        status = 5
    else:
        failed = 0
        for name, fn, security in items:
            capture.start()
            outcome = "passed"
            problem: BaseException | None = None
            stop = False
            try:
                purge()
                fn()
            except _BaseException as exc:  # every exception is an outcome
                problem = exc
                outcome = _classify(exc)  # a skip or xfail is graded by the parent
                stop = outcome == "stop"
            out = capture.stop()
            if stop:
                _say(f"!!! session stopped by {name}: {type(problem).__name__}\n")
                status = 2
                break
            written.append([name, outcome])
            write({"event": "test", "name": name, "outcome": outcome, "security": security})
            if outcome == "failed" and problem is not None:
                failed += 1
                _say(f"FAILED {name} - {type(problem).__name__}: {_message(problem)}\n"
                     f"{_describe(problem)}\n")
                if out:
                    _say(f"--- captured output of {name} ---\n{out}\n")
        status = 1 if failed else 0
        _say(f"{_len(written) - failed} passed, {failed} failed\n")
    write({"event": "end", "exitstatus": status, "tests": written})
    return status
