"""Tokenize text and compute word frequencies."""

from __future__ import annotations

from typing import Iterable

DEFAULT_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "of", "on", "or", "the", "to", "was", "with",
    }
)


def tokenize(text: str) -> list[str]:
    """Return the case-folded word tokens of ``text`` in order."""
    raise NotImplementedError


def top_words(
    text: str,
    n: int = 10,
    stop_words: Iterable[str] | None = None,
    min_length: int = 1,
) -> list[tuple[str, int]]:
    """Return the ``n`` most frequent words as ``(word, count)`` pairs."""
    raise NotImplementedError
