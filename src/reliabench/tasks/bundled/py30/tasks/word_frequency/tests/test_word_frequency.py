"""Hidden tests for word_frequency."""

from __future__ import annotations

import pytest

from word_frequency import DEFAULT_STOP_WORDS, tokenize, top_words


def test_tokenize_basic_and_case_folding():
    assert tokenize("Hello, World! HELLO world.") == ["hello", "world", "hello", "world"]


def test_tokenize_internal_apostrophes():
    assert tokenize("Don't stop rock'n'roll at five o'clock") == ["don't", "stop", "rock'n'roll", "at", "five", "o'clock"]


def test_tokenize_edge_apostrophes_and_quotes():
    assert tokenize("'Tis the dogs' 'bone'") == ["tis", "the", "dogs", "bone"]


def test_tokenize_double_apostrophe_splits():
    assert tokenize("rock''roll") == ["rock", "roll"]


def test_tokenize_typographic_apostrophes():
    assert tokenize("It’s ‘quoted’ isn’t") == ["it's", "quoted", "isn't"]


def test_tokenize_casefold_unicode():
    assert tokenize("Straße STRASSE Ünïcödé café") == ["strasse", "strasse", "ünïcödé", "café"]


def test_tokenize_separators_digits_and_underscores():
    assert tokenize("snake_case well-known 2024 v2 -- ... ") == ["snake", "case", "well", "known", "2024", "v2"]


def test_tokenize_empty():
    assert tokenize("") == []
    assert tokenize(" ,.;!? ") == []


def test_tokenize_rejects_non_string():
    with pytest.raises(TypeError):
        tokenize(None)


def test_top_words_counts_and_default_stop_words():
    text = "The cat and the hat. The cat sat on the mat with a cat."
    assert top_words(text) == [("cat", 3), ("hat", 1), ("mat", 1), ("sat", 1)]


def test_ties_broken_alphabetically():
    assert top_words("pear apple fig apple pear fig kiwi", n=3) == [("apple", 2), ("fig", 2), ("pear", 2)]


def test_n_limits_result():
    text = "a1 a1 a1 b2 b2 c3"
    assert top_words(text, n=1) == [("a1", 3)]
    assert top_words(text, n=100) == [("a1", 3), ("b2", 2), ("c3", 1)]


def test_n_zero_returns_empty():
    assert top_words("hello hello", n=0) == []


def test_custom_stop_words_are_case_folded():
    assert top_words("Alpha beta GAMMA beta", stop_words=["BETA", "Gamma"]) == [("alpha", 1)]


def test_empty_stop_words_keeps_everything():
    assert top_words("the the cat", stop_words=()) == [("the", 2), ("cat", 1)]


def test_min_length():
    assert top_words("go went gone go ox sun", min_length=3) == [("gone", 1), ("sun", 1), ("went", 1)]


@pytest.mark.parametrize("kwargs", [{"n": -1}, {"n": True}, {"n": 2.0}, {"min_length": 0}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        top_words("some text", **kwargs)


def test_default_stop_words_unchanged():
    assert {"the", "and", "of", "with"} <= DEFAULT_STOP_WORDS
    assert len(DEFAULT_STOP_WORDS) == 22
