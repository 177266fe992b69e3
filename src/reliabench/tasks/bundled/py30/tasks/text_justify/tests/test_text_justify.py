import pytest

from text_justify import justify


def test_example():
    assert justify("This is an example of text justification.", 16) == [
        "This    is    an",
        "example  of text",
        "justification.  ",
    ]


def test_all_lines_have_exact_width():
    text = "The quick brown fox jumps over the lazy dog and keeps running far away"
    for width in (9, 10, 13, 20, 33):
        lines = justify(text, width)
        assert lines
        assert all(len(line) == width for line in lines), width


def test_words_preserved_in_order():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert " ".join(justify(text, 17)).split() == text.split()


def test_extra_spaces_go_to_left_gaps():
    assert justify("a b c d e", 8) == ["a  b c d", "e       "]
    assert justify("ab cd ef gh", 9) == ["ab  cd ef", "gh       "]


def test_uneven_distribution():
    assert justify("What must be acknowledgment shall be", 16) == [
        "What   must   be",
        "acknowledgment  ",
        "shall be        ",
    ]


def test_distribution_several_extra_spaces():
    # 4 gaps, 7 spaces: base 1 each, 3 extra go to the three leftmost gaps
    assert justify("aa bb cc dd ee fffff", 17) == [
        "aa  bb  cc  dd ee",
        "fffff            ",
    ]


def test_last_line_not_justified():
    assert justify("left right", 15) == ["left right     "]


def test_two_words_justified_when_not_last():
    assert justify("left right x", 11) == ["left  right", "x          "]
    assert justify("left right xxxxx", 14) == ["left     right", "xxxxx         "]


def test_single_word_line_left_aligned():
    assert justify("tiny enormousword x", 12) == [
        "tiny        ",
        "enormousword",
        "x           ",
    ]


def test_last_line_single_spaced():
    assert justify("one two three four five six", 15) == [
        "one  two  three",
        "four five six  ",
    ]


def test_greedy_exact_fit():
    assert justify("abc def ghi", 11) == ["abc def ghi"]
    assert justify("abc def ghi jk", 11) == ["abc def ghi", "jk         "]


def test_word_equal_to_width():
    assert justify("abcdef", 6) == ["abcdef"]


def test_whitespace_handling():
    assert justify("  a\n\tb   c  ", 5) == ["a b c"]


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_text(text):
    assert justify(text, 10) == []


def test_word_too_long_raises():
    with pytest.raises(ValueError):
        justify("short incomprehensibilities", 10)


@pytest.mark.parametrize("width", [0, -3])
def test_invalid_width(width):
    with pytest.raises(ValueError):
        justify("a b", width)
