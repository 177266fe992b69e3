"""pytest's start-up done once in the warm server; every rollout's fork runs its own session on a copy.

``pytest.main(args)`` starts with :func:`_pytest.config.get_config`: a new plugin manager, and
every built-in plugin imported, registered and checked against the hook specifications (the
plugin manager verifies each hook implementation's signature), then one
``pytest_addoption`` call per plugin. Nothing of that depends on the rollout, the task or the
test files: only on pytest, the installed plugin set and the ``-p no:NAME`` arguments (which
plugins are blocked before they are imported). It is a third of what a warm fork spends in
``pytest.main`` on a py30 task.

:func:`prepare` does that part in the server, once per distinct set of ``-p no:`` arguments,
and the server never uses the result itself. :func:`run_session` runs in the rollout's fork:
it hands the prepared configuration to ``pytest.main`` in place of a new one (for that one
call: a test that calls ``pytest.main`` itself gets a new one) with the rollout's own
arguments and invocation directory, and pytest goes on exactly as in a fresh process:
arguments and ini file, conftest files, configure, collection, the tests, the report.

Why this is as fresh as a new process: the fork is a copy-on-write copy of the server, made
after the configuration was prepared; the server never runs a session on it, never changes it
after :func:`prepare` and never sees what a fork does to its copy. A rollout that rewrites
pytest's modules, registers a plugin on the configuration, edits the parser or the stash, or
monkeypatches a hook changes its own copy: the next rollout is forked from the unchanged
server (``tests/warm/test_pytest_session.py`` and ``tests/test_hostile_rollouts.py`` run such
rollouts back to back and check the next verdict). The classic trap of keeping pytest warm,
``pytest.main`` in a loop in one process (modules cached from the previous run), cannot
happen: no process ever runs two sessions.

The outcome plugin is registered on the configuration under its module name before the
session starts (:func:`run_session`), as ``-p _reliabench_outcome_plugin`` would register it
after the built-in plugins and before any ``conftest.py``; ``-p`` then finds it registered and
does not look for a ``pytest11`` entry point of that name in every installed distribution
(~4 ms per rollout). The fresh-process path registers it the same way
(:func:`reliabench.hidden_tests.staging.pytest_command`), so both paths register the same
plugins in the same order.

The session's ``FixtureManager`` scans each plugin module for fixtures on a stand-in with only
the names that scan can act on (:mod:`reliabench.warm.pytest_fixtures`: the same fixtures, in
the same order, with the same warnings, at a fraction of the cost).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from reliabench.warm.pytest_fixtures import scan_candidates_only

__all__ = ["blocked_plugins", "prepare", "run_session"]

_PROG = "pytest.main()"
"""The program name ``pytest.main`` gives its configuration (its usage line in a usage error)."""


def blocked_plugins(args: Sequence[str]) -> tuple[str, ...]:
    """The ``-p no:NAME`` arguments of ``args``, in order (what :func:`prepare` depends on).

    Read the way pytest's ``consider_preparse`` reads them: ``-p VALUE`` and ``-pVALUE``,
    surrounding blanks stripped.

    >>> blocked_plugins(["-p", "no:cacheprovider", "-pno:pastebin", "-p", "mine", "-q"])
    ('no:cacheprovider', 'no:pastebin')
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        opt = args[i]
        i += 1
        if opt == "-p":
            if i >= len(args):
                break
            value = args[i]
            i += 1
        elif opt.startswith("-p"):
            value = opt[2:]
        else:
            continue
        value = value.strip()
        if value.startswith("no:"):
            out.append(value)
    return tuple(out)


def prepare(blocked: Sequence[str]) -> Any:
    """The configuration pytest's ``get_config`` makes, with ``blocked`` plugins kept out.

    Called in the warm server (cwd ``/``, no rollout state), never in a rollout.

    Args:
        blocked: ``no:NAME`` values (:func:`blocked_plugins` of the requests it serves).

    Returns:
        A ``_pytest.config.Config`` that no session has used, for :func:`run_session`.
    """
    import _pytest.config

    args: list[str] = []
    for value in blocked:
        args += ["-p", value]
    return _pytest.config.get_config(args, prog=_PROG)


def run_session(args: Sequence[str], plugin_module: str, prepared: Any | None) -> int:
    """Run ``pytest.main(args)`` in a rollout's fork, on ``prepared`` when it matches ``args``.

    Call it once per process, after the jail is set up and the outcome plugin's directory is
    first on ``sys.path``; it imports the outcome plugin (which takes its channel from the
    environment) and registers it under ``plugin_module``.

    Args:
        args: The rollout's pytest arguments.
        plugin_module: The outcome plugin's module name (``-p`` of ``args``).
        prepared: From :func:`prepare` with ``blocked_plugins(args)``, or None (pytest then
            makes its own, as a fresh process does).

    Returns:
        pytest's exit code.
    """
    import _pytest.config
    import pytest

    plugin = sys.modules.get(plugin_module)
    if plugin is not None and getattr(plugin, "_preloaded_guard", None) is not None:
        plugin.activate()  # the server's copy (nothing of the rollout has run yet)
    else:
        plugin = importlib.import_module(plugin_module)
    if prepared is None:
        with scan_candidates_only():
            return int(pytest.main(list(args), plugins=[plugin]))
    real = _pytest.config.get_config
    config: _pytest.config.Config = prepared

    def get_prepared(args: Iterable[str] | None = None, plugins: Sequence[str | object] | None = None,
                     *, prog: str | None = None) -> _pytest.config.Config:
        _pytest.config.get_config = real  # once: another pytest.main gets a configuration of its own
        if prog != _PROG:  # another usage line than the prepared one (not ``pytest.main``'s)
            return real(args, plugins, prog=prog)
        config.invocation_params = _pytest.config.Config.InvocationParams(
            args=tuple(args or ()), plugins=plugins, dir=Path.cwd())
        return config

    _pytest.config.get_config = get_prepared
    try:
        with scan_candidates_only():
            return int(pytest.main(list(args), plugins=[plugin]))
    finally:
        _pytest.config.get_config = real
