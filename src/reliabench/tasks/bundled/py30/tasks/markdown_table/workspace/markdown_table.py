"""Rendering lists of records as GitHub-flavoured Markdown tables."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    align: Mapping[str, str] | None = None,
) -> str:
    """Render ``rows`` as a Markdown table (see prompt.md for the exact format)."""
    raise NotImplementedError
