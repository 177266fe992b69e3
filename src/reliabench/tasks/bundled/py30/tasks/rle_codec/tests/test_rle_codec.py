import pytest

from rle_codec import decode, encode

BS = "\\"


def test_encode_basic_runs():
    assert encode("aaabccdddd") == "3ab2c4d"


def test_encode_single_characters_have_no_count():
    assert encode("abc") == "abc"
    assert encode("a") == "a"


def test_encode_empty():
    assert encode("") == ""
    assert decode("") == ""


def test_encode_multi_digit_count():
    assert encode("x" * 12) == "12x"
    assert encode("y" * 100 + "z") == "100yz"


def test_encode_escapes_digits():
    assert encode("a111b") == "a3" + BS + "1b"
    assert encode("7") == BS + "7"
    assert encode("2024") == BS + "2" + BS + "0" + BS + "2" + BS + "4"


def test_encode_escapes_backslash():
    assert encode(BS) == BS + BS
    assert encode(BS * 3 + "n") == "3" + BS + BS + "n"


def test_encode_whitespace_and_unicode():
    assert encode("   \n\n") == "3 2\n"
    assert encode("ééé→") == "3é→"


def test_encode_only_merges_adjacent_runs():
    assert encode("aabaa") == "2ab2a"


def test_decode_basic():
    assert decode("3ab2c4d") == "aaabccdddd"
    assert decode("12x") == "x" * 12


def test_decode_escapes():
    assert decode("a3" + BS + "1b") == "a111b"
    assert decode("2" + BS + BS) == BS * 2
    assert decode(BS + "0" + BS + "9") == "09"


def test_decode_accepts_non_maximal_runs():
    assert decode("2a3a") == "aaaaa"
    assert decode("aa") == "aa"


@pytest.mark.parametrize(
    "text",
    [
        "hello world  mississippi\t\t\n",
        "1" * 25 + "2" + "11" + "1",
        "10 green bottles",
        BS + BS + "1" + BS + "x" + BS,
        "a" + BS * 4 + "0" * 10 + "2a3" + BS + "x",
        "ab" * 7 + "é" * 3,
    ],
)
def test_round_trip(text):
    assert decode(encode(text)) == text


def test_decode_count_without_token():
    for bad in ("3", "a12", "2", "ab99"):
        with pytest.raises(ValueError):
            decode(bad)


def test_decode_count_with_leading_zero():
    for bad in ("0a", "05a", "a01b", "00x"):
        with pytest.raises(ValueError):
            decode(bad)


def test_decode_count_of_one():
    for bad in ("1a", "b1" + BS + BS):
        with pytest.raises(ValueError):
            decode(bad)


def test_decode_dangling_escape():
    with pytest.raises(ValueError):
        decode("a" + BS)
    with pytest.raises(ValueError):
        decode("3" + BS)


def test_decode_invalid_escape():
    for bad in (BS + "a", "2" + BS + "n", "x" + BS + " "):
        with pytest.raises(ValueError):
            decode(bad)


def test_type_errors():
    with pytest.raises(TypeError):
        encode(b"aaa")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decode(None)  # type: ignore[arg-type]
