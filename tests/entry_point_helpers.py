"""Fake entry points for the plugin registries (scanners, sandbox backends)."""

from __future__ import annotations

import importlib.metadata

import pytest


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, group: str, **targets: str) -> None:
    """Make ``importlib.metadata.entry_points(group=group)`` return exactly ``targets``."""
    eps = [importlib.metadata.EntryPoint(name=n, value=v, group=group) for n, v in targets.items()]
    real = importlib.metadata.entry_points

    def fake(**kwargs: object) -> object:
        if kwargs.get("group") == group:
            return eps
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)
