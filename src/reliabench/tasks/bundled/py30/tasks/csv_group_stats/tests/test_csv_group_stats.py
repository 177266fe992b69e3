import pytest

from csv_group_stats import group_stats

BASIC = "city,temp\nOslo,3\nRome,18\nOslo,5\nRome,22\nOslo,-2\n"


def test_basic_counts():
    result = group_stats(BASIC, "city", "temp")
    assert result["Oslo"]["count"] == 3
    assert result["Rome"]["count"] == 2
    assert isinstance(result["Oslo"]["count"], int)


def test_basic_sum_and_mean():
    result = group_stats(BASIC, "city", "temp")
    assert result["Oslo"]["sum"] == pytest.approx(6.0)
    assert result["Oslo"]["mean"] == pytest.approx(2.0)
    assert result["Rome"]["mean"] == pytest.approx(20.0)


def test_basic_min_max():
    result = group_stats(BASIC, "city", "temp")
    assert result["Oslo"]["min"] == pytest.approx(-2.0)
    assert result["Oslo"]["max"] == pytest.approx(5.0)
    assert result["Rome"]["min"] == pytest.approx(18.0)
    assert result["Rome"]["max"] == pytest.approx(22.0)


def test_result_has_exact_keys():
    result = group_stats("k,v\na,1\n", "k", "v")
    assert result == {"a": {"count": 1, "sum": 1.0, "mean": 1.0, "min": 1.0, "max": 1.0}}


def test_min_max_when_first_value_is_extreme():
    text = "k,v\na,9\na,4\na,7\nb,1\nb,8\nb,3\n"
    result = group_stats(text, "k", "v")
    assert (result["a"]["min"], result["a"]["max"]) == (4.0, 9.0)
    assert (result["b"]["min"], result["b"]["max"]) == (1.0, 8.0)


def test_group_order_is_first_appearance():
    text = "k,v\nzeta,1\nalpha,2\nmid,3\nalpha,4\n"
    assert list(group_stats(text, "k", "v")) == ["zeta", "alpha", "mid"]


def test_columns_in_any_position_and_extra_columns():
    text = "id,value,name,group\n1,10,x,B\n2,20,y,A\n3,30,z,B\n"
    result = group_stats(text, "group", "value")
    assert result["B"]["sum"] == pytest.approx(40.0)
    assert result["A"]["count"] == 1


def test_quoted_fields_with_commas_and_quotes():
    text = 'name,amount\n"Smith, John",1.5\n"Smith, John",2.5\n"say ""hi""",3\n'
    result = group_stats(text, "name", "amount")
    assert result["Smith, John"]["sum"] == pytest.approx(4.0)
    assert result['say "hi"']["count"] == 1


def test_quoted_field_with_newline():
    text = 'k,v\n"multi\nline",4\n"multi\nline",6\n'
    result = group_stats(text, "k", "v")
    assert result["multi\nline"]["mean"] == pytest.approx(5.0)


def test_whitespace_is_stripped_from_keys_values_and_header():
    text = " k , v \n  a , 1 \na,  2\n"
    result = group_stats(text, "k", "v")
    assert result == {"a": {"count": 2, "sum": 3.0, "mean": 1.5, "min": 1.0, "max": 2.0}}


def test_blank_lines_are_skipped():
    text = "k,v\n\na,1\n\n\nb,2\n,\n  ,  \n"
    result = group_stats(text, "k", "v")
    assert list(result) == ["a", "b"]
    assert result["a"]["count"] == 1


def test_blank_value_row_is_not_counted():
    text = "k,v\na,1\na,\na,   \na,3\n"
    result = group_stats(text, "k", "v")
    assert result["a"]["count"] == 2
    assert result["a"]["mean"] == pytest.approx(2.0)


def test_group_with_only_blank_values_is_absent():
    text = "k,v\na,\nb,5\n"
    assert list(group_stats(text, "k", "v")) == ["b"]


def test_empty_key_is_its_own_group():
    text = "k,v\n,4\n  ,6\nx,1\n"
    result = group_stats(text, "k", "v")
    assert result[""]["count"] == 2
    assert result[""]["sum"] == pytest.approx(10.0)


def test_float_and_scientific_values():
    text = "k,v\na,0.1\na,0.2\na,1e2\n"
    result = group_stats(text, "k", "v")
    assert result["a"]["sum"] == pytest.approx(100.3)
    assert isinstance(result["a"]["sum"], float)


@pytest.mark.parametrize("bad", ["abc", "1,2", "12x", "nan", "inf", "-inf"])
def test_bad_number_raises_value_error(bad):
    text = f'k,v\na,1\na,"{bad}"\n'
    with pytest.raises(ValueError):
        group_stats(text, "k", "v")


def test_missing_column_raises_key_error():
    with pytest.raises(KeyError):
        group_stats(BASIC, "country", "temp")
    with pytest.raises(KeyError):
        group_stats(BASIC, "city", "rain")


def test_short_row_raises_value_error():
    text = "a,b,c\nx,1,2\ny,3\n"
    with pytest.raises(ValueError):
        group_stats(text, "a", "b")


def test_extra_fields_are_ignored():
    text = "k,v\na,1,extra,more\n"
    assert group_stats(text, "k", "v")["a"]["sum"] == pytest.approx(1.0)


@pytest.mark.parametrize("text", ["", "k,v\n", "k,v"])
def test_empty_or_header_only_returns_empty(text):
    assert group_stats(text, "k", "v") == {}
