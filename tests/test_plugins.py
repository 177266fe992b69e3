"""The one plugin registry: its rules, and that every kind's built-ins are the declared entry points."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from entry_point_helpers import fake_entry_points, install_plugin_dist

from reliabench.errors import InvalidArgumentError, PluginError, UnknownNameError, UsageError
from reliabench.plugins import KINDS, Registry, load_target, registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _declared() -> dict[str, dict[str, str]]:
    """pyproject.toml's ``[project.entry-points."reliabench.*"]`` tables, by group."""
    doc = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    groups = doc["project"]["entry-points"]
    return {g: dict(t) for g, t in groups.items() if g.startswith("reliabench.")}


def _toy(monkeypatch: pytest.MonkeyPatch, **plugins: str) -> Registry[Any]:
    fake_entry_points(monkeypatch, "reliabench.toys", **plugins)
    return Registry("toys", builtins={"join": "os.path:join", "split": "os.path:split"}, what="toy")


# ------------------------------------------------------------------ every kind


def test_every_group_in_pyproject_is_a_kind_and_every_kind_is_declared() -> None:
    assert set(_declared()) == {f"reliabench.{kind}" for kind in KINDS}


@pytest.mark.parametrize("kind", list(KINDS))
def test_builtins_are_exactly_the_declared_entry_points(kind: str) -> None:
    reg = registry(kind)
    assert (reg.kind, reg.group) == (kind, f"reliabench.{kind}")
    # same names, same targets, same order (the order is the CLI's and, for importers, detection's)
    assert list(_declared()[reg.group].items()) == list(reg.builtins.items())


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_builtin_loads_and_is_a_valid_entry(kind: str) -> None:
    reg = registry(kind)
    for name, target in reg.builtins.items():
        loaded = reg.get(name)
        assert loaded is load_target(target)
        assert reg._check(loaded), f"{kind} built-in {name} ({target}) fails the kind's check"


def test_unknown_kind() -> None:
    with pytest.raises(UsageError, match=r"unknown plugin kind 'widgets'; known kinds: scanners, "):
        registry("widgets")


# ------------------------------------------------------------------ the registry's rules


def test_names_builtins_first_in_order_then_plugins_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _toy(monkeypatch, zeta="os:getcwd", alpha="os:getpid", join="os:getcwd")
    assert reg.names() == ["join", "split", "alpha", "zeta"]
    assert "alpha" in reg and "nope" not in reg
    assert reg.get("alpha") is os.getpid
    # a built-in name always means the built-in: the plugin reusing it is ignored
    assert reg.get("join") is os.path.join
    assert set(reg.entry_points()) == {"alpha", "zeta"}
    assert reg.target("zeta") == "os:getcwd" and reg.target("join") == "os.path:join"


def test_first_entry_point_of_a_name_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [importlib.metadata.EntryPoint(name="dup", value=v, group="reliabench.toys")
           for v in ("os:getpid", "os:getcwd")]
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: eps if kw.get("group") == "reliabench.toys" else real(**kw))
    reg = Registry("toys", builtins={}, what="toy")
    assert reg.names() == ["dup"] and reg.get("dup") is os.getpid


def test_unknown_name_lists_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _toy(monkeypatch, extra="os:getpid")
    with pytest.raises(UsageError, match=r"^unknown toy 'nope'; known toys: join, split, extra$"):
        reg.get("nope")
    assert reg.find("nope") is None


def test_a_broken_plugin_is_one_usage_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _toy(monkeypatch, gone="reliabench_no_such_module_xyz:thing", odd="os:sep")
    assert reg.names() == ["join", "split", "gone", "odd"]  # listing loads nothing
    with pytest.raises(UsageError, match=r"^toy plugin gone \(reliabench_no_such_module_xyz:thing\) "
                                         r"failed to load: ModuleNotFoundError"):
        reg.get("gone")
    with pytest.raises(UsageError, match=r"^toy plugin odd \(os:sep\) is not a callable, got '/'$"):
        reg.get("odd")
    with pytest.raises(UsageError, match="toy plugin gone"):
        reg.load_all()


def test_register_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = _toy(monkeypatch)

    def mine() -> None: ...

    assert reg.register("mine", mine) is mine
    assert reg.names() == ["join", "split", "mine"] and reg.get("mine") is mine
    with pytest.raises(InvalidArgumentError, match=r"name: toy 'mine' is already registered"):
        reg.register("mine", mine)
    reg.register("mine", print, replace=True)
    assert reg.get("mine") is print
    with pytest.raises(InvalidArgumentError, match=r"name: 'join' is a built-in toy"):
        reg.register("join", mine)
    with pytest.raises(InvalidArgumentError, match=r"toy 'x': expected a callable, got 3"):
        reg.register("x", 3)
    with pytest.raises(InvalidArgumentError, match=r"name: expected a non-empty string"):
        reg.register(" ", mine)
    reg.unregister("mine")
    assert "mine" not in reg


def test_one_error_type_per_kind_of_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown name is an UnknownNameError everywhere; a broken plugin a PluginError (both exit 2)."""
    from reliabench.sandbox import get_backend

    reg = _toy(monkeypatch, gone="reliabench_no_such_module_xyz:thing")
    with pytest.raises(UnknownNameError):
        reg.get("nope")
    with pytest.raises(UnknownNameError):
        registry("widgets")
    with pytest.raises(UnknownNameError, match="unknown sandbox backend 'lxc'"):
        get_backend("lxc")
    with pytest.raises(PluginError, match="toy plugin gone"):
        reg.get("gone")
    assert reg.find("nope") is None and "gone" in reg and list(reg.names()) == ["join", "split", "gone"]


def test_a_dist_info_on_sys_path_is_found_like_an_installed_package(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The helper the per-kind example tests use installs a real entry point, not a patch."""
    reg = Registry("toys", builtins={}, what="toy")
    assert reg.names() == []
    install_plugin_dist(monkeypatch, tmp_path, "toy-plugin", {"reliabench.toys": {"cwd": "os:getcwd"}})
    assert reg.names() == ["cwd"] and reg.get("cwd") is os.getcwd
    dist = importlib.metadata.distribution("toy-plugin")
    assert [ep.name for ep in dist.entry_points] == ["cwd"]
