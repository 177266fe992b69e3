"""pytest's fixture scan of plugin modules, on the names it can act on only (same result, less work).

When a session starts, pytest's ``FixtureManager`` looks for fixtures in every registered
plugin module (~30 built-in modules, ~1,700 names): for each name of ``dir(module)`` it reads
the raw value, follows its ``__wrapped__`` chain to warn about a fixture hidden behind a
decorator, and registers the value if it is a fixture definition. In a warm rollout's fork
that is about a fifth of a py30 pytest session (``benchmarks/bench_pytest_floor.py`` prints
the ``FixtureManager``'s share), most of it spent on names that are neither, each read
touching, and so copying, a page of the server's heap.

:func:`scan_candidates_only` hands the scan, for each plain module, a stand-in that holds only
the names where it can find something (:func:`fixture_candidates`), computed from the module
as it is when the session scans it (a rollout that plants a fixture or a wrapper in a plugin
module before its session is seen exactly as a fresh process sees it); conftest modules are
plugin modules too. Nothing else changes: plugins that are class instances, test modules and
test classes (pytest passes those as collection nodes) are scanned whole.
It is used only with the loop it was checked against (pytest 9's
``parsefactories(holder=..., node=...)``; other versions scan as they always do), and
``tests/warm/test_pytest_fixtures.py`` compares the registered fixtures, their order, the
autouse lists, the warnings and the verdicts of sessions with and without it, over every task
of the bundled py30 suite and planted cases.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["fixture_candidates", "scan_candidates_only"]


def fixture_candidates(holder: types.ModuleType) -> types.ModuleType | None:
    """A stand-in for ``holder`` with the only names pytest 9's fixture scan can act on, or None.

    pytest's ``FixtureManager.parsefactories(holder=module, ...)`` goes through
    ``dir(module)``; for each name it reads the raw ``__dict__`` value, follows its
    ``__wrapped__`` chain (``inspect.unwrap``) to warn about a fixture hidden behind a
    decorator, and registers the value if ``type(getattr(module, name))`` is
    ``FixtureFunctionDefinition``. For a module of exactly ``types.ModuleType`` without its own
    ``__dir__``, ``dir`` is the sorted ``__dict__`` keys and ``getattr`` the ``__dict__`` value,
    so a name whose value neither is a fixture definition nor has a ``__wrapped__`` attribute
    is skipped without effect. The stand-in keeps the others (a value whose attribute lookup
    raises is kept: pytest's loop handles it), so the scan on it registers the same fixtures
    in the same order and warns the same. None when ``holder`` is not such a module: scan it
    whole.

    >>> import functools
    >>> m = types.ModuleType("m")
    >>> m.plain = lambda: 1
    >>> m.wrapped = functools.wraps(m.plain)(lambda: 2)
    >>> sorted(k for k in vars(fixture_candidates(m)) if not k.startswith("__"))
    ['wrapped']
    """
    from _pytest.fixtures import FixtureFunctionDefinition

    if type(holder) is not types.ModuleType:
        return None
    values = holder.__dict__
    if "__dir__" in values:
        return None
    name = values.get("__name__")
    view = types.ModuleType(name if isinstance(name, str) else "")
    kept = view.__dict__
    for key, value in list(values.items()):
        try:
            if type(value) is not FixtureFunctionDefinition and not hasattr(value, "__wrapped__"):
                continue
        except Exception:  # an "evil" object: keep it, pytest's loop copes with it
            pass
        kept[key] = value
    return view


@contextlib.contextmanager
def scan_candidates_only() -> Iterator[None]:
    """For the block, ``FixtureManager.parsefactories`` scans plugin modules' candidates only.

    Only where the installed pytest has the keyword form checked in :func:`fixture_candidates`
    (pytest 9); elsewhere nothing changes.
    """
    from _pytest.fixtures import FixtureManager

    real = FixtureManager.parsefactories
    if "holder" not in inspect.signature(real).parameters:
        yield
        return

    @functools.wraps(real)
    def parsefactories(self: FixtureManager, *args: Any, **kwargs: Any) -> None:
        holder = kwargs.get("holder")
        if not args and isinstance(holder, types.ModuleType) and "node" in kwargs:
            view = fixture_candidates(holder)
            if view is not None:
                kwargs["holder"] = view
        real(self, *args, **kwargs)

    FixtureManager.parsefactories = parsefactories  # type: ignore[method-assign]
    try:
        yield
    finally:
        FixtureManager.parsefactories = real  # type: ignore[method-assign]
