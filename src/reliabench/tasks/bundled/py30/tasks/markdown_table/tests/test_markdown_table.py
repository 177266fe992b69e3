import pytest

from markdown_table import render_table


def test_prompt_example():
    rows = [{"name": "apple", "qty": 3}, {"name": "kiwi", "qty": 12, "note": "a|b"}]
    assert render_table(rows, align={"qty": "right"}) == (
        "| name  | qty | note |\n"
        "| ----- | --: | ---- |\n"
        "| apple |   3 |      |\n"
        "| kiwi  |  12 | a\\|b |"
    )


def test_simple_table_default_alignment():
    assert render_table([{"a": "x", "bb": "long value"}]) == (
        "| a   | bb         |\n"
        "| --- | ---------- |\n"
        "| x   | long value |"
    )


def test_no_trailing_newline():
    assert not render_table([{"a": 1}]).endswith("\n")


def test_minimum_width_is_three():
    assert render_table([{"k": ""}]) == "| k   |\n| --- |\n|     |"


def test_header_wider_than_cells():
    assert render_table([{"identifier": 7}]).splitlines()[2] == "| 7          |"


def test_column_order_first_appearance():
    rows = [{"b": 1, "a": 2}, {"c": 3, "a": 4}]
    assert render_table(rows).splitlines()[0] == "| b   | a   | c   |"


def test_explicit_columns_order_and_filtering():
    rows = [{"a": 1, "b": 2, "c": 3}]
    out = render_table(rows, columns=["c", "a"])
    assert out.splitlines() == ["| c   | a   |", "| --- | --- |", "| 3   | 1   |"]


def test_explicit_column_missing_from_rows():
    out = render_table([{"a": 1}], columns=["a", "zzz"])
    assert out.splitlines()[2] == "| 1   |     |"


def test_none_missing_and_falsy_values():
    rows = [{"a": None, "b": 0, "c": False}, {"a": 1.5}]
    lines = render_table(rows).splitlines()
    assert lines[2] == "|     | 0   | False |"
    assert lines[3] == "| 1.5 |     |       |"


def test_escape_pipes_in_cells_and_headers():
    out = render_table([{"x|y": "1|2|3"}])
    assert out.splitlines() == ["| x\\|y    |", "| ------- |", "| 1\\|2\\|3 |"]


def test_newlines_become_br():
    out = render_table([{"t": "a\nb\r\nc\rd"}])
    assert out.splitlines()[2] == "| a<br>b<br>c<br>d |"


def test_left_alignment():
    out = render_table([{"col": "ab"}, {"col": "abcde"}], align={"col": "left"})
    assert out.splitlines() == ["| col   |", "| :---- |", "| ab    |", "| abcde |"]


def test_right_alignment():
    out = render_table([{"n": 5}, {"n": 12345}], align={"n": "right"})
    assert out.splitlines() == ["|     n |", "| ----: |", "|     5 |", "| 12345 |"]


def test_center_alignment_extra_space_on_right():
    out = render_table([{"mid": "abcdef"}, {"mid": "x"}, {"mid": "xy"}], align={"mid": "center"})
    assert out.splitlines() == [
        "|  mid   |",
        "| :----: |",
        "| abcdef |",
        "|   x    |",
        "|   xy   |",
    ]


def test_center_minimum_width_separator():
    assert render_table([{"c": 1}], align={"c": "center"}).splitlines()[1] == "| :-: |"


def test_empty_rows_with_columns():
    assert render_table([], columns=["a", "b"]) == "| a   | b   |\n| --- | --- |"


def test_no_columns_raises():
    with pytest.raises(ValueError):
        render_table([])
    with pytest.raises(ValueError):
        render_table([{}, {}])
    with pytest.raises(ValueError):
        render_table([{"a": 1}], columns=[])


def test_duplicate_columns_raise():
    with pytest.raises(ValueError):
        render_table([{"a": 1}], columns=["a", "a"])


def test_invalid_alignment_raises():
    with pytest.raises(ValueError):
        render_table([{"a": 1}], align={"a": "middle"})
    with pytest.raises(ValueError):
        render_table([{"a": 1}], align={"b": "left"})
    with pytest.raises(ValueError):
        render_table([{"a": 1, "b": 2}], columns=["a"], align={"b": "right"})
