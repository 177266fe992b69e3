"""Terminal output of the study renderers: rich renderables, printed one after the other.

A study renderer returns the parts of its output (tables, lines with rich markup); the
command prints them on its console, and tests turn them into text with ``to_text``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from rich.console import Console, RenderableType

__all__ = ["Parts", "print_parts", "to_text"]

Parts = list[RenderableType]
"""What a terminal renderer returns: renderables (a ``str`` is rich markup), in order."""


def print_parts(console: Console, parts: Iterable[RenderableType]) -> None:
    """Print each part on ``console`` (a part per ``console.print`` call)."""
    for part in parts:
        console.print(part)


def to_text(parts: Iterable[RenderableType], width: int = 150) -> str:
    """The parts as plain text, as a console of ``width`` columns in a pipe prints them."""
    buf = io.StringIO()
    print_parts(Console(file=buf, width=width, highlight=False, color_system=None), parts)
    return buf.getvalue()
