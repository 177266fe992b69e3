"""Run-length encoding of arbitrary strings, with escaping of digits and backslashes."""

from __future__ import annotations

_ESCAPE = "\\"
_DIGITS = "0123456789"


def _token(char: str) -> str:
    if char in _DIGITS or char == _ESCAPE:
        return _ESCAPE + char
    return char


def encode(text: str) -> str:
    """Run-length encode ``text`` (see prompt.md for the format)."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    parts: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        end = index + 1
        while end < len(text) and text[end] == char:
            end += 1
        run = end - index
        parts.append((str(run) if run > 1 else "") + _token(char))
        index = end
    return "".join(parts)


def decode(encoded: str) -> str:
    """Decode a string produced by :func:`encode`; raise ValueError if malformed."""
    if not isinstance(encoded, str):
        raise TypeError(f"expected str, got {type(encoded).__name__}")
    parts: list[str] = []
    index = 0
    length = len(encoded)
    while index < length:
        start = index
        while index < length and encoded[index] in _DIGITS:
            index += 1
        digits = encoded[start:index]
        if digits:
            if digits[0] == "0":
                raise ValueError(f"count with leading zero at position {start}")
            count = int(digits)
            if count < 2:
                raise ValueError(f"count must be at least 2 at position {start}")
        else:
            count = 1
        if index >= length:
            raise ValueError("count at end of input is not followed by a character")
        char = encoded[index]
        if char == _ESCAPE:
            index += 1
            if index >= length:
                raise ValueError("dangling escape at end of input")
            char = encoded[index]
            if char not in _DIGITS and char != _ESCAPE:
                raise ValueError(f"invalid escape sequence at position {index - 1}")
        parts.append(char * count)
        index += 1
    return "".join(parts)
