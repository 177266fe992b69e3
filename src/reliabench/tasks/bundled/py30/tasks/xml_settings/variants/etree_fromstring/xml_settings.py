"""Parse untrusted XML settings documents."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

MAX_DOCUMENT_SIZE = 100_000


def _convert(kind, text):
    if kind == "str":
        return text
    if kind == "int":
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ValueError("bad int")
        return int(text)
    if kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ValueError("bad float")
        return value
    if kind == "bool":
        if text.lower() in ("true", "yes", "1"):
            return True
        if text.lower() in ("false", "no", "0"):
            return False
        raise ValueError("bad bool")
    raise ValueError("unknown type")


def parse_settings(document: str | bytes) -> dict[str, str | int | float | bool]:
    if len(document) > MAX_DOCUMENT_SIZE:
        raise ValueError("document too large")
    try:
        root = ET.fromstring(document)
    except ET.ParseError as exc:
        raise ValueError(f"malformed XML: {exc}") from exc
    if root.tag != "settings":
        raise ValueError("root must be <settings>")
    result = {}
    for child in root:
        if child.tag != "setting" or len(child):
            raise ValueError("unexpected element")
        name = child.get("name")
        if not name or name in result:
            raise ValueError("missing or duplicate name")
        result[name] = _convert(child.get("type", "str"), (child.text or "").strip())
    return result
