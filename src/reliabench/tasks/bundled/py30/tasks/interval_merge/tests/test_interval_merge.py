import pytest

from interval_merge import gaps, insert, merge, total_length


def test_merge_example():
    assert merge([(8, 10), (1, 3), (2, 6), (15, 18), (6, 7)]) == [(1, 7), (8, 10), (15, 18)]


def test_merge_empty():
    assert merge([]) == []


def test_merge_single():
    assert merge([(2, 5)]) == [(2, 5)]


def test_merge_disjoint_are_sorted_not_merged():
    assert merge([(5, 6), (1, 2), (3, 4)]) == [(1, 2), (3, 4), (5, 6)]


def test_merge_touching_intervals():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]
    assert merge([(3, 5), (1, 3)]) == [(1, 5)]


def test_merge_contained_interval():
    assert merge([(1, 10), (2, 3), (4, 8)]) == [(1, 10)]


def test_merge_contained_interval_does_not_shrink_end():
    assert merge([(1, 10), (2, 3), (11, 12)]) == [(1, 10), (11, 12)]


def test_merge_same_start():
    assert merge([(1, 4), (1, 2)]) == [(1, 4)]
    assert merge([(1, 2), (1, 4)]) == [(1, 4)]


def test_merge_chain():
    assert merge([(1, 2), (2, 3), (3, 4), (4, 5)]) == [(1, 5)]


def test_merge_zero_length():
    assert merge([(4, 4)]) == [(4, 4)]
    assert merge([(1, 4), (4, 4)]) == [(1, 4)]
    assert merge([(0, 0), (2, 2)]) == [(0, 0), (2, 2)]


def test_merge_negative_and_float():
    assert merge([(-5.5, -1), (-2, 0.5), (1, 2)]) == [(-5.5, 0.5), (1, 2)]


def test_merge_returns_tuples_from_lists_and_keeps_types():
    result = merge([[3, 4], [1, 2]])
    assert result == [(1, 2), (3, 4)]
    assert all(type(item) is tuple for item in result)
    assert all(type(value) is int for item in result for value in item)


def test_merge_does_not_mutate_input():
    data = [[5, 7], [1, 6]]
    merge(data)
    assert data == [[5, 7], [1, 6]]


def test_merge_accepts_generator():
    assert merge(iter([(2, 3), (1, 2)])) == [(1, 3)]


def test_merge_invalid_interval():
    with pytest.raises(ValueError):
        merge([(1, 2), (5, 3)])


def test_insert_bridging():
    assert insert([(1, 2), (3, 5), (6, 7), (8, 10), (12, 16)], (4, 8)) == [(1, 2), (3, 10), (12, 16)]


def test_insert_disjoint_at_ends():
    assert insert([(3, 5)], (0, 1)) == [(0, 1), (3, 5)]
    assert insert([(3, 5)], (7, 9)) == [(3, 5), (7, 9)]


def test_insert_into_empty_and_unsorted():
    assert insert([], (2, 3)) == [(2, 3)]
    assert insert([(6, 9), (1, 3)], (2, 5)) == [(1, 5), (6, 9)]


def test_insert_invalid_new():
    with pytest.raises(ValueError):
        insert([(1, 2)], (3, 2))


def test_total_length_overlaps_counted_once():
    assert total_length([(1, 3), (2, 6), (8, 10)]) == 7


def test_total_length_empty_and_points():
    assert total_length([]) == 0
    assert total_length([(5, 5), (7, 7)]) == 0


def test_total_length_float():
    assert total_length([(0.5, 1.0), (0.75, 2.0)]) == pytest.approx(1.5)


def test_gaps():
    assert gaps([(5, 6), (1, 2), (2, 3)]) == [(3, 5)]
    assert gaps([(1, 2), (4, 5), (7, 9)]) == [(2, 4), (5, 7)]


def test_gaps_none():
    assert gaps([]) == []
    assert gaps([(1, 5), (2, 3)]) == []
