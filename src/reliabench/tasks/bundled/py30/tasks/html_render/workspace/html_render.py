"""Render user profiles as HTML snippets."""

from __future__ import annotations

from typing import Mapping

MAX_TAGS = 10


def render_profile(profile: Mapping[str, object]) -> str:
    """Return the HTML snippet for ``profile``."""
    raise NotImplementedError
