"""Parse untrusted XML settings documents."""

from __future__ import annotations

MAX_DOCUMENT_SIZE = 100_000


def parse_settings(document: str | bytes) -> dict[str, str | int | float | bool]:
    """Parse a ``<settings>`` document into a dict of typed values."""
    raise NotImplementedError
