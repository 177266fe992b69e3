"""Conversion between integers and canonical Roman numerals (1..3999)."""

from __future__ import annotations


def to_roman(number: int) -> str:
    """Return the canonical Roman numeral for ``number`` (1..3999)."""
    raise NotImplementedError


def from_roman(numeral: str) -> int:
    """Return the integer value of a canonical Roman numeral."""
    raise NotImplementedError
