"""Tokenize text and compute word frequencies."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

DEFAULT_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "of", "on", "or", "the", "to", "was", "with",
    }
)

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def tokenize(text: str) -> list[str]:
    """Return the case-folded word tokens of ``text`` in order."""
    if not isinstance(text, str):
        raise TypeError("text must be a string")
    normalised = text.translate(_APOSTROPHES).casefold()
    return _TOKEN.findall(normalised)


def _require_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}")
    return value


def top_words(
    text: str,
    n: int = 10,
    stop_words: Iterable[str] | None = None,
    min_length: int = 1,
) -> list[tuple[str, int]]:
    """Return the ``n`` most frequent words as ``(word, count)`` pairs."""
    limit = _require_int("n", n, 0)
    shortest = _require_int("min_length", min_length, 1)
    stops = DEFAULT_STOP_WORDS if stop_words is None else {word.casefold() for word in stop_words}
    counts = Counter(
        token for token in tokenize(text) if token not in stops and len(token) >= shortest
    )
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:limit]
