"""Parse untrusted XML settings documents."""

from __future__ import annotations

import math
import re
from xml.parsers import expat

MAX_DOCUMENT_SIZE = 100_000

Value = str | int | float | bool

_INT = re.compile(r"[+-]?[0-9]+")
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})


def _convert(kind: str, text: str) -> Value:
    if kind == "str":
        return text
    if kind == "int":
        if not _INT.fullmatch(text):
            raise ValueError(f"not an integer: {text!r}")
        return int(text)
    if kind == "float":
        try:
            number = float(text)
        except ValueError as exc:
            raise ValueError(f"not a number: {text!r}") from exc
        if not math.isfinite(number):
            raise ValueError(f"not a finite number: {text!r}")
        return number
    if kind == "bool":
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"not a boolean: {text!r}")
    raise ValueError(f"unknown setting type: {kind!r}")


class _SettingsHandler:
    def __init__(self) -> None:
        self.settings: dict[str, Value] = {}
        self._depth = 0
        self._current: tuple[str, str] | None = None
        self._text: list[str] = []

    # --- declarations are never allowed -------------------------------------------
    def forbid_doctype(self, *_args: object) -> None:
        raise ValueError("DOCTYPE declarations are not allowed")

    def forbid_entity(self, *_args: object) -> None:
        raise ValueError("entity declarations are not allowed")

    def forbid_external(self, *_args: object) -> int:
        raise ValueError("external entities are not allowed")

    # --- element structure --------------------------------------------------------
    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if self._depth == 1:
            if tag != "settings":
                raise ValueError("root element must be <settings>")
        elif self._depth == 2:
            if tag != "setting":
                raise ValueError(f"unexpected element <{tag}>")
            name = attrs.get("name", "")
            if not name:
                raise ValueError("setting without a name")
            if name in self.settings:
                raise ValueError(f"duplicate setting: {name}")
            self._current = (name, attrs.get("type", "str"))
            self._text = []
        else:
            raise ValueError("settings must not contain nested elements")

    def end(self, _tag: str) -> None:
        if self._depth == 2 and self._current is not None:
            name, kind = self._current
            self.settings[name] = _convert(kind, "".join(self._text).strip())
            self._current = None
        self._depth -= 1

    def data(self, text: str) -> None:
        if self._current is not None:
            self._text.append(text)


def parse_settings(document: str | bytes) -> dict[str, str | int | float | bool]:
    """Parse a ``<settings>`` document into a dict of typed values."""
    if not isinstance(document, (str, bytes)):
        raise ValueError("document must be str or bytes")
    if len(document) > MAX_DOCUMENT_SIZE:
        raise ValueError("document too large")
    handler = _SettingsHandler()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = handler.forbid_doctype
    parser.EntityDeclHandler = handler.forbid_entity
    parser.UnparsedEntityDeclHandler = handler.forbid_entity
    parser.ExternalEntityRefHandler = handler.forbid_external
    parser.StartElementHandler = handler.start
    parser.EndElementHandler = handler.end
    parser.CharacterDataHandler = handler.data
    try:
        parser.Parse(document, True)
    except expat.ExpatError as exc:
        raise ValueError(f"malformed XML: {exc}") from exc
    return handler.settings
