import pytest

from roman_numerals import from_roman, to_roman

KNOWN = [
    (1, "I"), (3, "III"), (4, "IV"), (5, "V"), (9, "IX"), (14, "XIV"), (40, "XL"),
    (49, "XLIX"), (90, "XC"), (99, "XCIX"), (400, "CD"), (444, "CDXLIV"), (500, "D"),
    (900, "CM"), (1666, "MDCLXVI"), (1994, "MCMXCIV"), (2024, "MMXXIV"), (3888, "MMMDCCCLXXXVIII"),
    (3999, "MMMCMXCIX"),
]


def test_to_roman_basic_symbols():
    assert [to_roman(n) for n in (1, 5, 10, 50, 100, 500, 1000)] == ["I", "V", "X", "L", "C", "D", "M"]


def test_to_roman_additive():
    assert to_roman(3) == "III"
    assert to_roman(8) == "VIII"
    assert to_roman(2000) == "MM"
    assert to_roman(1666) == "MDCLXVI"


def test_to_roman_subtractive():
    assert [to_roman(n) for n in (4, 9, 40, 90, 400, 900)] == ["IV", "IX", "XL", "XC", "CD", "CM"]


def test_to_roman_known_values():
    for number, numeral in KNOWN:
        assert to_roman(number) == numeral, number


def test_to_roman_bounds():
    assert to_roman(1) == "I"
    assert to_roman(3999) == "MMMCMXCIX"


@pytest.mark.parametrize("number", [0, -1, 4000, 10**6])
def test_to_roman_out_of_range(number):
    with pytest.raises(ValueError):
        to_roman(number)


@pytest.mark.parametrize("value", [True, 5.0, "5", None])
def test_to_roman_type_error(value):
    with pytest.raises(TypeError):
        to_roman(value)


def test_from_roman_basic_symbols():
    assert [from_roman(s) for s in "IVXLCDM"] == [1, 5, 10, 50, 100, 500, 1000]


def test_from_roman_subtractive():
    assert [from_roman(s) for s in ("IV", "IX", "XL", "XC", "CD", "CM")] == [4, 9, 40, 90, 400, 900]


def test_from_roman_known_values():
    for number, numeral in KNOWN:
        assert from_roman(numeral) == number, numeral


def test_round_trip_full_range():
    for number in range(1, 4000):
        assert from_roman(to_roman(number)) == number


def test_from_roman_rejects_empty_whitespace_and_case():
    for bad in ("", " ", "X ", " X", "iv", "Mcm", "x"):
        with pytest.raises(ValueError):
            from_roman(bad)


def test_from_roman_rejects_unknown_characters():
    for bad in ("ABC", "X1", "MZ", "I-V"):
        with pytest.raises(ValueError):
            from_roman(bad)


def test_from_roman_rejects_too_many_repetitions():
    for bad in ("IIII", "XXXX", "CCCC", "MMMM", "VV", "LL", "DD", "VVV"):
        with pytest.raises(ValueError):
            from_roman(bad)


def test_from_roman_rejects_invalid_subtraction():
    for bad in ("IL", "IC", "ID", "IM", "XD", "XM", "VX", "LC", "DM", "IIV", "IXIX", "XCXC"):
        with pytest.raises(ValueError):
            from_roman(bad)


def test_from_roman_rejects_non_canonical():
    for bad in ("VIV", "XCX", "CMD", "IXI", "MCMC", "XLX"):
        with pytest.raises(ValueError):
            from_roman(bad)


@pytest.mark.parametrize("value", [4, None, b"IV", ["I"]])
def test_from_roman_type_error(value):
    with pytest.raises(TypeError):
        from_roman(value)
