import math

import pytest

from duration_parse import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [("90s", 90), ("1h30m", 5400), ("2d 4h", 187200), ("1.5h", 5400), ("1w", 604800)],
)
def test_parse_examples(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


def test_parse_returns_float():
    assert isinstance(parse_duration("5m"), float)


def test_parse_all_units_combined():
    assert parse_duration("1w2d3h4m5s") == pytest.approx(604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5)


def test_parse_skipped_units():
    assert parse_duration("1d30m") == pytest.approx(86400 + 1800)
    assert parse_duration("2w10s") == pytest.approx(2 * 604800 + 10)


def test_parse_fractions():
    assert parse_duration("0.25d") == pytest.approx(21600)
    assert parse_duration("1.5m 0.5s") == pytest.approx(90.5)


def test_parse_zero_and_multi_digit():
    assert parse_duration("0s") == 0
    assert parse_duration("120m") == pytest.approx(7200)


def test_parse_whitespace_between_and_around():
    assert parse_duration("  1h   30m\t15s \n") == pytest.approx(5415)


def test_parse_empty():
    for bad in ("", "   ", "\n"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_missing_number_or_unit():
    for bad in ("90", "h", "1.5", "1 h", "1h 30"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_unknown_or_uppercase_unit():
    for bad in ("5x", "1H", "10S", "3y", "1hr", "2ms"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_bad_numbers_and_signs():
    for bad in ("-5m", "+5m", ".5h", "1.h", "1..5h", "1e3s", "1,5h"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_units_out_of_order():
    for bad in ("30m1h", "1s1m", "1d1w", "5m 2h"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_repeated_unit():
    for bad in ("1h1h", "1m 2m", "3s3s"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_garbage_between_components():
    for bad in ("1h,30m", "1h and 30m", "1h-30m", "1h30m!"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_type_error():
    with pytest.raises(TypeError):
        parse_duration(90)  # type: ignore[arg-type]


def test_format_examples():
    assert format_duration(5400) == "1h30m"
    assert format_duration(90) == "1m30s"
    assert format_duration(59) == "59s"


def test_format_all_components_and_gaps():
    assert format_duration(90061) == "1d1h1m1s"
    assert format_duration(86400 * 9) == "9d"
    assert format_duration(3601) == "1h1s"
    assert format_duration(86400 + 60) == "1d1m"


def test_format_float_input():
    assert format_duration(5400.0) == "1h30m"
    assert format_duration(61.2) == "1m1s"


def test_format_zero():
    assert format_duration(0) == "0s"
    assert format_duration(0.4) == "0s"


def test_format_rounds_half_up():
    assert format_duration(59.5) == "1m"
    assert format_duration(2.4) == "2s"
    assert format_duration(0.5) == "1s"
    assert format_duration(3599.5) == "1h"


def test_format_no_weeks():
    assert format_duration(604800 * 2 + 1) == "14d1s"


def test_format_invalid_values():
    for bad in (-1, -0.6, math.nan, math.inf):
        with pytest.raises(ValueError):
            format_duration(bad)


def test_format_type_errors():
    for bad in ("60", None, True):
        with pytest.raises(TypeError):
            format_duration(bad)  # type: ignore[arg-type]


def test_round_trip():
    for seconds in (1, 59, 60, 61, 3599, 3600, 86399, 86401, 1_000_000):
        assert parse_duration(format_duration(seconds)) == seconds
