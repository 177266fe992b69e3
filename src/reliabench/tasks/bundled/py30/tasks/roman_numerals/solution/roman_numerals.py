"""Conversion between integers and canonical Roman numerals (1..3999)."""

from __future__ import annotations

MIN_VALUE = 1
MAX_VALUE = 3999

_PAIRS: tuple[tuple[int, str], ...] = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)

_SYMBOLS: dict[str, int] = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number: int) -> str:
    """Return the canonical Roman numeral for ``number`` (1..3999)."""
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected int, got {type(number).__name__}")
    if number < MIN_VALUE or number > MAX_VALUE:
        raise ValueError(f"{number} is out of range {MIN_VALUE}..{MAX_VALUE}")
    parts: list[str] = []
    remaining = number
    for value, symbol in _PAIRS:
        count, remaining = divmod(remaining, value)
        parts.append(symbol * count)
    return "".join(parts)


def from_roman(numeral: str) -> int:
    """Return the integer value of a canonical Roman numeral."""
    if not isinstance(numeral, str):
        raise TypeError(f"expected str, got {type(numeral).__name__}")
    if not numeral:
        raise ValueError("empty numeral")
    total = 0
    for index, char in enumerate(numeral):
        value = _SYMBOLS.get(char)
        if value is None:
            raise ValueError(f"invalid character {char!r} in {numeral!r}")
        following = _SYMBOLS.get(numeral[index + 1]) if index + 1 < len(numeral) else None
        if following is not None and following > value:
            total -= value
        else:
            total += value
    # Only canonical spellings are accepted: the value must map back to the same text.
    if total < MIN_VALUE or total > MAX_VALUE or to_roman(total) != numeral:
        raise ValueError(f"not a canonical Roman numeral: {numeral!r}")
    return total
