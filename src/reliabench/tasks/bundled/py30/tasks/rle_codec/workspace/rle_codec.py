"""Run-length encoding of arbitrary strings, with escaping of digits and backslashes."""

from __future__ import annotations


def encode(text: str) -> str:
    """Run-length encode ``text`` (see prompt.md for the format)."""
    raise NotImplementedError


def decode(encoded: str) -> str:
    """Decode a string produced by :func:`encode`; raise ValueError if malformed."""
    raise NotImplementedError
