import pytest

from shortest_path import distances, shortest_path

G = {"A": {"B": 1, "C": 4}, "B": {"C": 2, "D": 5}, "C": {"D": 1}}


def path_cost(graph, path):
    return sum(graph[a][b] for a, b in zip(path, path[1:]))


def test_example():
    assert shortest_path(G, "A", "D") == (4, ["A", "B", "C", "D"])


def test_direct_edge_not_always_best():
    graph = {"s": {"t": 10, "a": 1}, "a": {"b": 1}, "b": {"t": 1}}
    assert shortest_path(graph, "s", "t") == (3, ["s", "a", "b", "t"])


def test_direct_edge_when_cheapest():
    graph = {"s": {"t": 2, "a": 1}, "a": {"t": 5}}
    assert shortest_path(graph, "s", "t") == (2, ["s", "t"])


def test_start_equals_goal():
    assert shortest_path(G, "B", "B") == (0, ["B"])


def test_target_only_node_as_start_and_goal():
    assert shortest_path(G, "D", "D") == (0, ["D"])
    assert shortest_path(G, "A", "D")[1][-1] == "D"


def test_unreachable_returns_none():
    assert shortest_path(G, "D", "A") is None
    assert shortest_path({"a": {"b": 1}, "c": {}}, "a", "c") is None


def test_directed_edges():
    graph = {"a": {"b": 1}}
    assert shortest_path(graph, "a", "b") == (1, ["a", "b"])
    assert shortest_path(graph, "b", "a") is None


def test_unknown_nodes_raise_key_error():
    with pytest.raises(KeyError):
        shortest_path(G, "Z", "A")
    with pytest.raises(KeyError):
        shortest_path(G, "A", "Z")


def test_negative_weight_raises_even_if_unreachable():
    graph = {"a": {"b": 1}, "x": {"y": -1}}
    with pytest.raises(ValueError):
        shortest_path(graph, "a", "b")
    with pytest.raises(ValueError):
        distances(graph, "a")


def test_zero_weight_edges():
    graph = {"a": {"b": 0, "c": 1}, "b": {"c": 0}}
    assert shortest_path(graph, "a", "c") == (0, ["a", "b", "c"])


def test_float_weights():
    graph = {"a": {"b": 0.5, "c": 2.0}, "b": {"c": 0.75}}
    cost, path = shortest_path(graph, "a", "c")
    assert cost == pytest.approx(1.25)
    assert path == ["a", "b", "c"]


def test_cycles_in_graph():
    graph = {"a": {"b": 1}, "b": {"a": 1, "c": 3}, "c": {"a": 1, "d": 1}}
    assert shortest_path(graph, "a", "d") == (5, ["a", "b", "c", "d"])


def test_tie_returns_a_valid_cheapest_path():
    graph = {"s": {"a": 1, "b": 1}, "a": {"t": 1}, "b": {"t": 1}}
    cost, path = shortest_path(graph, "s", "t")
    assert cost == 2
    assert path in (["s", "a", "t"], ["s", "b", "t"])


def test_longer_cheaper_path_found_after_expensive_discovery():
    graph = {
        "s": {"a": 2, "b": 7},
        "a": {"b": 3, "c": 8},
        "b": {"c": 1, "d": 9},
        "c": {"d": 2},
    }
    cost, path = shortest_path(graph, "s", "d")
    assert cost == 8
    assert path == ["s", "a", "b", "c", "d"]
    assert path_cost(graph, path) == cost


def test_grid_graph():
    graph = {}
    for r in range(5):
        for c in range(5):
            edges = {}
            if c < 4:
                edges[f"{r},{c + 1}"] = 1 + (r * c) % 3
            if r < 4:
                edges[f"{r + 1},{c}"] = 1 + (r + c) % 2
            graph[f"{r},{c}"] = edges
    cost, path = shortest_path(graph, "0,0", "4,4")
    assert path[0] == "0,0" and path[-1] == "4,4"
    assert path_cost(graph, path) == cost
    assert cost == distances(graph, "0,0")["4,4"]
    assert cost == 9


def test_graph_not_modified():
    graph = {"a": {"b": 1}, "b": {"c": 1}}
    shortest_path(graph, "a", "c")
    distances(graph, "a")
    assert graph == {"a": {"b": 1}, "b": {"c": 1}}


def test_distances_example():
    assert distances(G, "B") == {"B": 0, "C": 2, "D": 3}
    assert distances(G, "A") == {"A": 0, "B": 1, "C": 3, "D": 4}


def test_distances_excludes_unreachable_and_handles_sink():
    assert distances(G, "D") == {"D": 0}
    with pytest.raises(KeyError):
        distances(G, "nope")
