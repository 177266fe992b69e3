import pytest

from topo_sort import CycleError, levels, topo_sort

EXAMPLE = {"app": ["lib", "utils"], "lib": ["utils"], "docs": []}


def assert_valid_order(deps, order):
    position = {node: i for i, node in enumerate(order)}
    for node, requirements in deps.items():
        for requirement in requirements:
            assert position[requirement] < position[node], (requirement, node)


def assert_valid_cycle(deps, cycle):
    assert len(cycle) >= 2
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1
    for a, b in zip(cycle, cycle[1:]):
        assert b in deps.get(a, ()), (a, b)
    assert cycle[0] == min(cycle)


def test_example_order():
    assert topo_sort(EXAMPLE) == ["docs", "utils", "lib", "app"]


def test_empty():
    assert topo_sort({}) == []
    assert levels({}) == []


def test_independent_nodes_sorted():
    assert topo_sort({"c": [], "a": [], "b": []}) == ["a", "b", "c"]


def test_dependency_only_nodes_are_included():
    assert topo_sort({"a": ["z"]}) == ["z", "a"]


def test_chain():
    assert topo_sort({"d": ["c"], "c": ["b"], "b": ["a"]}) == ["a", "b", "c", "d"]


def test_tie_break_uses_smallest_ready_node_each_step():
    deps = {"b": ["z"], "y": [], "z": []}
    # y and z are ready; y goes first, then z, which makes b ready
    assert topo_sort(deps) == ["y", "z", "b"]
    deps2 = {"a": ["m"], "m": [], "n": []}
    # after m is placed, a becomes ready and beats n
    assert topo_sort(deps2) == ["m", "a", "n"]


def test_diamond():
    deps = {"top": ["left", "right"], "left": ["base"], "right": ["base"]}
    assert topo_sort(deps) == ["base", "left", "right", "top"]


def test_larger_graph_is_valid_and_complete():
    deps = {
        "deploy": ["test", "build"], "test": ["build", "lint"], "build": ["compile", "assets"],
        "compile": ["fetch"], "assets": ["fetch"], "lint": [], "fetch": [], "notify": ["deploy"],
    }
    order = topo_sort(deps)
    assert sorted(order) == sorted(set(deps) | {d for v in deps.values() for d in v})
    assert_valid_order(deps, order)
    assert order == ["fetch", "assets", "compile", "build", "lint", "test", "deploy", "notify"]


def test_duplicates_and_input_not_mutated():
    deps = {"a": ["b", "b"], "b": []}
    snapshot = {k: list(v) for k, v in deps.items()}
    assert topo_sort(deps) == ["b", "a"]
    assert levels(deps) == [["b"], ["a"]]
    assert deps == snapshot


def test_accepts_sets_and_tuples():
    assert topo_sort({"a": {"c", "b"}, "b": ("c",)}) == ["c", "b", "a"]


def test_levels_example():
    assert levels(EXAMPLE) == [["docs", "utils"], ["lib"], ["app"]]


def test_levels_use_deepest_dependency():
    deps = {"d": ["a", "c"], "c": ["b"], "b": ["a"], "e": ["a"]}
    assert levels(deps) == [["a"], ["b", "e"], ["c"], ["d"]]


def test_simple_cycle():
    with pytest.raises(CycleError) as info:
        topo_sort({"b": ["c"], "c": ["a"], "a": ["b"]})
    assert info.value.cycle == ["a", "b", "c", "a"]
    assert str(info.value) == "cycle detected: a -> b -> c -> a"


def test_cycle_error_is_value_error():
    with pytest.raises(ValueError):
        topo_sort({"x": ["y"], "y": ["x"]})


def test_self_dependency():
    with pytest.raises(CycleError) as info:
        topo_sort({"a": ["a"], "b": []})
    assert info.value.cycle == ["a", "a"]


def test_cycle_rotated_to_smallest_and_excludes_tail():
    deps = {"a": ["z"], "z": ["m"], "m": ["n"], "n": ["z"], "free": []}
    with pytest.raises(CycleError) as info:
        topo_sort(deps)
    assert info.value.cycle == ["m", "n", "z", "m"]


def test_cycle_in_larger_graph_is_genuine():
    deps = {"a": ["b"], "b": ["c", "x"], "c": ["d"], "d": ["b", "e"], "e": [], "x": [], "y": ["a"]}
    with pytest.raises(CycleError) as info:
        topo_sort(deps)
    assert_valid_cycle(deps, info.value.cycle)
    assert set(info.value.cycle) == {"b", "c", "d"}


def test_levels_detects_cycle():
    with pytest.raises(CycleError) as info:
        levels({"a": ["b"], "b": ["a"], "c": []})
    assert info.value.cycle == ["a", "b", "a"]
