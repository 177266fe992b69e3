"""One registry for every pluggable kind, fed by entry points.

Each pluggable kind of reliabench is one :class:`Registry`: a name (``scanners``), the
entry-point group ``reliabench.<kind>`` through which other packages add entries, and the
built-ins, declared once as ``name -> "module:attribute"`` targets (and, identically, in
reliabench's own ``pyproject.toml``). A third-party package adds one entry with one line in
its own ``pyproject.toml``::

    [project.entry-points."reliabench.scanners"]
    mytool = "my_package.scanner:MyScanner"

Rules every registry keeps:

* entries load lazily: naming a kind imports nothing, ``get(name)`` imports one target;
* a built-in name always means the built-in (an entry point reusing it is ignored), and of two
  entry points with one name the first found wins;
* a plugin that fails to import, or is not what its kind needs, is one
  :class:`~reliabench.errors.PluginError` naming the plugin and its target, not a traceback;
* an unknown name is an :class:`~reliabench.errors.UnknownNameError` listing the known ones
  (the one error of every registry miss), and :meth:`Registry.names` gives the CLI its choices
  (built-ins in their declared order, then the others sorted).

The kinds (:data:`KINDS`): ``scanners``, ``sandboxes``, ``agents``, ``importers``,
``executors``, ``converters``. See "Adding a plugin" in ``docs/guide.md``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from reliabench.errors import InvalidArgumentError, PluginError, UnknownNameError

__all__ = [
    "ENTRY_POINT_PREFIX",
    "KINDS",
    "Registry",
    "entry_points",
    "load_entry_point",
    "load_target",
    "registry",
]

T = TypeVar("T")

ENTRY_POINT_PREFIX = "reliabench."
"""Every kind's entry-point group is this prefix plus the kind's name."""

KINDS: Mapping[str, str] = {
    "scanners": "reliabench.scanners.base:SCANNERS",
    "sandboxes": "reliabench.sandbox.registry:SANDBOXES",
    "agents": "reliabench.agents.base:AGENT_KIND_REGISTRY",
    "importers": "reliabench.importers.base:IMPORTERS",
    "executors": "reliabench.run.executors.base:EXECUTORS",
    "converters": "reliabench.tasks.convert:CONVERTER_REGISTRY",
}
"""Every pluggable kind -> where its :class:`Registry` lives (imported by :func:`registry`)."""


def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` by name (the first one of each name wins)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def load_target(target: str) -> Any:
    """Import ``module:attribute`` (a built-in plugin's target) and return the attribute."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def load_entry_point(ep: importlib.metadata.EntryPoint, what: str) -> Any:
    """Load a third-party plugin.

    Args:
        ep: The entry point.
        what: What it is, for the message (``scanner plugin``, ``sandbox backend plugin``).

    Raises:
        PluginError: the plugin failed to import.
    """
    try:
        return ep.load()
    except Exception as exc:
        raise PluginError(
            f"{what} {ep.name} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
        ) from exc


class Registry(Generic[T]):
    """The entries of one pluggable kind: built-ins, in-process registrations, entry points.

    Args:
        kind: The kind's name; its entry-point group is ``reliabench.<kind>``.
        builtins: Built-in name -> ``module:attribute`` target, in the order
            :meth:`names` lists them (they are declared identically in pyproject.toml).
        what: The singular noun of messages (``scanner``, ``sandbox backend``).
        check: Whether a loaded object is a valid entry of this kind.
        expected: What ``check`` wants, for the message when it fails (``a backend class
            (needs a 'run' method)``).
        plural: The plural noun (default: ``what`` + ``s``).

    Example:
        >>> reg = Registry("examples", builtins={"path": "os.path:join"}, what="example")
        >>> reg.group, reg.names(), reg.get("path")("a", "b")
        ('reliabench.examples', ['path'], 'a/b')
        >>> reg.get("nope")
        Traceback (most recent call last):
        ...
        reliabench.errors.UnknownNameError: unknown example 'nope'; known examples: path
    """

    def __init__(
        self,
        kind: str,
        *,
        builtins: Mapping[str, str],
        what: str,
        check: Callable[[Any], bool] = callable,
        expected: str = "a callable",
        plural: str | None = None,
    ) -> None:
        self.kind = kind
        self.group = ENTRY_POINT_PREFIX + kind
        self.builtins: Mapping[str, str] = dict(builtins)
        self.what = what
        self.plural = plural if plural is not None else what + "s"
        self._check = check
        self._expected = expected
        self._lock = threading.Lock()
        self._registered: dict[str, T] = {}

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, builtins={list(self.builtins)!r})"

    # ------------------------------------------------------------------ what is there

    def entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        """Third-party entry points by name: built-in and registered names are left out."""
        with self._lock:
            taken = set(self.builtins) | set(self._registered)
        return {n: ep for n, ep in entry_points(self.group).items() if n not in taken}

    def names(self) -> list[str]:
        """Every known name: the built-ins in declared order, then the others sorted.

        A name being listed does not mean its entry loads or works here.
        """
        with self._lock:
            registered = set(self._registered)
        others = (registered | set(self.entry_points())) - set(self.builtins)
        return [*self.builtins, *sorted(others)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def target(self, name: str) -> str | None:
        """The ``module:attribute`` a name loads (None for in-process registrations)."""
        if name in self.builtins:
            return self.builtins[name]
        ep = self.entry_points().get(name)
        return None if ep is None else ep.value

    # ------------------------------------------------------------------ loading

    def get(self, name: str) -> T:
        """The entry registered as ``name``, loaded on first use.

        Raises:
            UnknownNameError: ``name`` is unknown (the message lists the known names).
            PluginError: the plugin failed to load or is not a valid entry of this kind.
        """
        found = self.find(name)
        if found is None:
            raise UnknownNameError(f"unknown {self.what} {name!r}; known {self.plural}: "
                             f"{', '.join(self.names())}")
        return found

    def find(self, name: str) -> T | None:
        """Like :meth:`get`, but None for an unknown name (a broken plugin still raises)."""
        if name in self.builtins:
            obj: T = load_target(self.builtins[name])
            return obj
        with self._lock:
            if name in self._registered:
                return self._registered[name]
        ep = entry_points(self.group).get(name)
        if ep is None:
            return None
        loaded = load_entry_point(ep, f"{self.what} plugin")
        if not self._check(loaded):
            raise PluginError(f"{self.what} plugin {name} ({ep.value}) is not {self._expected}, "
                             f"got {loaded!r}")
        plugin: T = loaded
        return plugin

    def load_all(self) -> dict[str, T]:
        """Every entry loaded, by name (a broken plugin raises ``PluginError``)."""
        return {name: self.get(name) for name in self.names()}

    # ------------------------------------------------------------------ in-process entries

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` as ``name`` in this process (entry points are the packaged way).

        Args:
            name: The name.
            entry: The entry (checked as a plugin's would be).
            replace: Allow replacing an earlier registration of ``name``.

        Returns:
            ``entry``, so that a decorator can return it.

        Raises:
            InvalidArgumentError: ``name`` is empty or a built-in name, already registered
                (without ``replace``), or ``entry`` is not valid for this kind.
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgumentError(f"name: expected a non-empty string, got {name!r}")
        if name in self.builtins:
            raise InvalidArgumentError(
                f"name: {name!r} is a built-in {self.what} and cannot be replaced")
        if not self._check(entry):
            raise InvalidArgumentError(f"{self.what} {name!r}: expected {self._expected}, "
                                       f"got {entry!r}")
        with self._lock:
            if name in self._registered and not replace:
                raise InvalidArgumentError(
                    f"name: {self.what} {name!r} is already registered (pass replace=True)")
            self._registered[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Forget an in-process registration (nothing happens for other names)."""
        with self._lock:
            self._registered.pop(name, None)


def registry(kind: str) -> Registry[Any]:
    """The registry of ``kind`` (a key of :data:`KINDS`).

    Raises:
        UnknownNameError: ``kind`` is not a pluggable kind.
    """
    if kind not in KINDS:
        raise UnknownNameError(f"unknown plugin kind {kind!r}; known kinds: {', '.join(KINDS)}")
    reg: Registry[Any] = load_target(KINDS[kind])
    return reg
