"""Full justification of text to a fixed line width."""

from __future__ import annotations


def justify(text: str, width: int) -> list[str]:
    """Return the words of ``text`` as fully justified lines of exactly ``width`` characters."""
    raise NotImplementedError
