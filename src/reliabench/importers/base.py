"""The Importer protocol, its declared options, and the registry of importers.

An importer turns one foreign result format into rollout records. It declares:

* ``name``: the format's name (``--format NAME``), ``label``: the harness, for messages;
* ``shapes``: what it reads -- a ``folder``, a ``zip`` archive, a ``json`` document, or
  ``jsonl`` lines -- so that detection asks it only about sources of those shapes;
* ``detect(path, data)``: whether the source is its format, judged by content (``data`` is the
  decoded JSON document for ``json``, the first decoded line for ``jsonl``, None otherwise);
* ``load(path, data, *, agent, options)``: the records (``data`` as given to ``detect`` for
  ``json``, else None);
* ``options``: the format's own options (name, help, choices), which ``reliabench import``
  turns into command-line options and ``load_foreign`` checks.

Detection asks the importers in registry order (the built-ins in the order of
:data:`BUILTIN_IMPORTERS`, then plugins sorted by name); the first that says yes wins. Third
parties add one through the ``reliabench.importers`` entry-point group, naming an importer
object::

    [project.entry-points."reliabench.importers"]
    mytool = "my_package.importer:importer"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from reliabench.errors import UsageError
from reliabench.importers._common import ImportResult
from reliabench.plugins import Registry

__all__ = [
    "BUILTIN_IMPORTERS",
    "IMPORTERS",
    "RESERVED_OPTION_NAMES",
    "SHAPES",
    "DeclaredOption",
    "FormatImporter",
    "Importer",
    "ImporterOption",
    "SourceShape",
    "declared_options",
    "get_importer",
    "importers_for",
]

SourceShape = Literal["folder", "zip", "json", "jsonl"]
SHAPES: tuple[SourceShape, ...] = ("folder", "zip", "json", "jsonl")

RESERVED_OPTION_NAMES: frozenset[str] = frozenset(
    {"agent", "format", "input_format", "output", "path", "source", "help"})
"""Option names an importer cannot declare (the commands' own parameters use them)."""

_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class ImporterOption:
    """An option of one format (``scorer`` for Inspect logs).

    Attributes:
        name: The keyword (``options[name]``) and, with ``-`` for ``_``, the command-line
            option ``--name``; lower case letters, digits and ``_``.
        help: One sentence for ``--help``.
        choices: The allowed values (None: any string).
    """

    name: str
    help: str
    choices: tuple[str, ...] | None = None


@runtime_checkable
class Importer(Protocol):
    """Reads one foreign result format into rollout records (see the module docstring)."""

    name: str
    label: str
    shapes: frozenset[SourceShape]
    options: tuple[ImporterOption, ...]

    def detect(self, path: Path, data: Any) -> bool:
        """Whether ``path`` (of one of ``shapes``) holds this format, judged by content."""
        ...

    def load(self, path: Path, data: Any, *, agent: str | None = None,
             options: Mapping[str, Any] | None = None) -> ImportResult:
        """Read ``path`` into records; ``options`` holds only names of ``self.options``.

        Raises:
            InputError: naming the file and the position at fault.
        """
        ...


@dataclass(frozen=True, slots=True)
class FormatImporter:
    """An :class:`Importer` made of a format module's functions (how the built-ins are made).

    Attributes:
        name: The format's name.
        label: The harness, for messages.
        shapes: What the format reads.
        detector: ``(path, data) -> bool``, as :meth:`Importer.detect`.
        loader: The module's ``load(path, data, *, agent=None, **options)``; it gets the
            options given, as keywords.
        options: The options ``loader`` takes.
    """

    name: str
    label: str
    shapes: frozenset[SourceShape]
    detector: Callable[[Path, Any], bool]
    loader: Callable[..., ImportResult]
    options: tuple[ImporterOption, ...] = ()

    def detect(self, path: Path, data: Any) -> bool:
        """See :meth:`Importer.detect`."""
        return self.detector(path, data)

    def load(self, path: Path, data: Any, *, agent: str | None = None,
             options: Mapping[str, Any] | None = None) -> ImportResult:
        """See :meth:`Importer.load`."""
        return self.loader(path, data, agent=agent, **dict(options or {}))


def _is_importer(obj: Any) -> bool:
    if isinstance(obj, type) or not isinstance(obj, Importer):
        return False
    shapes = getattr(obj, "shapes", None)
    opts = getattr(obj, "options", None)
    return (isinstance(obj.name, str) and bool(obj.name) and isinstance(shapes, frozenset)
            and bool(shapes) and shapes <= set(SHAPES) and isinstance(opts, tuple)
            and all(isinstance(o, ImporterOption) and _OPTION_NAME.match(o.name)
                    and o.name not in RESERVED_OPTION_NAMES for o in opts))


BUILTIN_IMPORTERS: Mapping[str, str] = {
    "swebench": "reliabench.importers.swebench:IMPORTER",
    "terminal-bench": "reliabench.importers.terminal_bench:IMPORTER",
    "tau-bench": "reliabench.importers.tau_bench:IMPORTER",
    "inspect": "reliabench.importers.inspect_log:IMPORTER",
    "evalplus": "reliabench.importers.evalplus:IMPORTER",
    "humaneval": "reliabench.importers.humaneval:IMPORTER",
    "jsonl": "reliabench.importers.jsonl:IMPORTER",
}
"""The built-in importers, in detection order."""

IMPORTERS: Registry[Importer] = Registry(
    "importers",
    builtins=BUILTIN_IMPORTERS,
    what="importer",
    check=_is_importer,
    expected=("an Importer object (name, label, shapes among folder/zip/json/jsonl, options as "
              "ImporterOption with lower-case names other than "
              + ", ".join(sorted(RESERVED_OPTION_NAMES)) + ", detect, load)"),
)
"""The importer registry (entry-point group ``reliabench.importers``: format -> importer)."""


def get_importer(name: str) -> Importer:
    """The importer of format ``name``.

    Raises:
        UsageError: unknown format (the message lists the known ones), or a broken plugin.
    """
    return IMPORTERS.get(name)


def importers_for(shape: SourceShape) -> list[tuple[str, Importer]]:
    """``(format, importer)`` of the importers reading ``shape``, in detection order.

    Raises:
        UsageError: a plugin fails to load or is not an importer.
    """
    return [(name, imp) for name, imp in IMPORTERS.load_all().items() if shape in imp.shapes]


@dataclass(frozen=True, slots=True)
class DeclaredOption:
    """One option as the commands offer it: merged over the importers that declare it.

    Attributes:
        name: The keyword.
        help: The declarations' help, each prefixed with its importer's label.
        choices: The union of the allowed values (None when any declaration allows any).
        formats: The formats that take it.
    """

    name: str
    help: str
    choices: tuple[str, ...] | None
    formats: tuple[str, ...]


def declared_options() -> tuple[DeclaredOption, ...]:
    """Every importer's options, merged by name, in registry order.

    A plugin that fails to load is left out here (so that a broken plugin does not take the
    whole command line down); it still raises ``UsageError`` when a source is read.
    """
    merged: dict[str, list[tuple[str, Importer, ImporterOption]]] = {}
    for fmt in IMPORTERS.names():
        try:
            imp = IMPORTERS.get(fmt)
        except UsageError:
            continue
        for opt in imp.options:
            merged.setdefault(opt.name, []).append((fmt, imp, opt))
    out: list[DeclaredOption] = []
    for name, decls in merged.items():
        choices: tuple[str, ...] | None = ()
        for _, _, opt in decls:
            if opt.choices is None or choices is None:
                choices = None
            else:
                choices = (*choices, *(c for c in opt.choices if c not in choices))
        out.append(DeclaredOption(
            name=name,
            help="; ".join(f"{imp.label}: {opt.help}" for _, imp, opt in decls),
            choices=choices,
            formats=tuple(fmt for fmt, _, _ in decls),
        ))
    return tuple(out)
