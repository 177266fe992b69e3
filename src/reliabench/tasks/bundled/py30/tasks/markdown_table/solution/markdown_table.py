"""Rendering lists of records as GitHub-flavoured Markdown tables."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

_ALIGNMENTS = ("left", "right", "center")
_MIN_WIDTH = 3


def _escape(text: str) -> str:
    text = text.replace("|", "\\|")
    return text.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")


def _cell(value: Any) -> str:
    return "" if value is None else _escape(str(value))


def _pad(text: str, width: int, alignment: str | None) -> str:
    missing = width - len(text)
    if alignment == "right":
        return " " * missing + text
    if alignment == "center":
        left = missing // 2
        return " " * left + text + " " * (missing - left)
    return text + " " * missing


def _separator(width: int, alignment: str | None) -> str:
    if alignment == "left":
        return ":" + "-" * (width - 1)
    if alignment == "right":
        return "-" * (width - 1) + ":"
    if alignment == "center":
        return ":" + "-" * (width - 2) + ":"
    return "-" * width


def _resolve_columns(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        resolved = list(columns)
        if len(set(resolved)) != len(resolved):
            raise ValueError("duplicate column names")
    else:
        resolved = []
        seen: set[str] = set()
        for row in rows:
            for key in row:
                if key not in seen:
                    seen.add(key)
                    resolved.append(key)
    if not resolved:
        raise ValueError("table has no columns")
    return resolved


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    align: Mapping[str, str] | None = None,
) -> str:
    """Render ``rows`` as a Markdown table (see prompt.md for the exact format)."""
    names = _resolve_columns(rows, columns)
    alignments = dict(align or {})
    for name, alignment in alignments.items():
        if name not in names:
            raise ValueError(f"alignment given for unknown column {name!r}")
        if alignment not in _ALIGNMENTS:
            raise ValueError(f"invalid alignment {alignment!r} for column {name!r}")

    header = [_escape(name) for name in names]
    body = [[_cell(row.get(name)) for name in names] for row in rows]
    widths = [
        max(_MIN_WIDTH, len(header[i]), *(len(cells[i]) for cells in body))
        for i in range(len(names))
    ]
    modes = [alignments.get(name) for name in names]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    lines = [
        line([_pad(text, widths[i], modes[i]) for i, text in enumerate(header)]),
        line([_separator(widths[i], modes[i]) for i in range(len(names))]),
    ]
    for cells in body:
        lines.append(line([_pad(text, widths[i], modes[i]) for i, text in enumerate(cells)]))
    return "\n".join(lines)
