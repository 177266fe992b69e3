"""Full justification of text to a fixed line width."""

from __future__ import annotations


def _spread(words: list[str], width: int) -> str:
    if len(words) == 1:
        return words[0].ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(word) for word in words)
    base, extra = divmod(spaces, gaps)
    parts: list[str] = []
    for index, word in enumerate(words[:-1]):
        parts.append(word)
        parts.append(" " * (base + (1 if index < extra else 0)))
    parts.append(words[-1])
    return "".join(parts)


def justify(text: str, width: int) -> list[str]:
    """Return the words of ``text`` as fully justified lines of exactly ``width`` characters."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a positive int, got {width!r}")
    words = text.split()
    for word in words:
        if len(word) > width:
            raise ValueError(f"word {word!r} is longer than width {width}")

    lines: list[str] = []
    current: list[str] = []
    current_len = 0  # length of the words in ``current`` joined by single spaces
    for word in words:
        needed = len(word) if not current else current_len + 1 + len(word)
        if needed <= width:
            current.append(word)
            current_len = needed
        else:
            lines.append(_spread(current, width))
            current = [word]
            current_len = len(word)
    if current:
        lines.append(" ".join(current).ljust(width))
    return lines
