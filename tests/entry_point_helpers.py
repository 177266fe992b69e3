"""Fake entry points for the plugin registries, patched in or installed as a dist-info."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

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


EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "plugins"
"""The worked plugin examples of docs/guide.md ("Adding a plugin"), one module per kind."""


def install_plugin_dist(monkeypatch: pytest.MonkeyPatch, site: Path, dist: str,
                        entry_points: dict[str, dict[str, str]], *, code: Path = EXAMPLES) -> None:
    """Install a fake third-party distribution for this test, as pip would lay it out.

    Writes ``site/<dist>-1.0.dist-info`` (``METADATA`` and ``entry_points.txt``) and puts
    ``site`` and ``code`` (where the plugin modules are) at the front of ``sys.path``, so
    ``importlib.metadata`` finds the entry points the ordinary way, without patching it.
    """
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n",
                                   encoding="utf-8")
    lines = []
    for group, targets in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {value}" for name, value in targets.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.syspath_prepend(str(site))
