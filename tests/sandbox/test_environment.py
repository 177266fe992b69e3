"""The environment contract's own types."""

from __future__ import annotations

from pathlib import Path

from reliabench.sandbox.environment import HOST, EnvironmentSpec


def test_a_spec_says_its_kind() -> None:
    assert HOST.kind == "host" and HOST.tests == "fresh" and HOST.user is None
    assert EnvironmentSpec(image="x").kind == "image"
    assert EnvironmentSpec(dockerfile=Path("environment/Dockerfile")).kind == "dockerfile"
