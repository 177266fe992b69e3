"""Render user profiles as HTML snippets."""

from __future__ import annotations

from html import escape
from typing import Mapping

MAX_TAGS = 10
_ALLOWED_SCHEMES = ("http://", "https://")


def _text(profile: Mapping[str, object], key: str) -> str:
    value = profile.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value.strip()


def _clean_tags(raw: object) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise ValueError("tags must be a list of strings")
    tags: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            raise ValueError("tags must be a list of strings")
        tag = item.strip()
        if tag and tag not in tags:
            tags.append(tag)
        if len(tags) == MAX_TAGS:
            break
    return tags


def _is_web_url(url: str) -> bool:
    return url.lower().startswith(_ALLOWED_SCHEMES)


def render_profile(profile: Mapping[str, object]) -> str:
    """Return the HTML snippet for ``profile``."""
    name = _text(profile, "name")
    if not name:
        raise ValueError("name is required")
    bio = _text(profile, "bio").replace("\r\n", "\n")
    website = _text(profile, "website")
    tags = _clean_tags(profile.get("tags"))

    lines = ['<div class="profile">', f'  <h2 class="name">{escape(name)}</h2>']
    if bio:
        body = "<br>".join(escape(line) for line in bio.split("\n"))
        lines.append(f'  <p class="bio">{body}</p>')
    if website and _is_web_url(website):
        url = escape(website)
        lines.append(f'  <a class="website" href="{url}" rel="nofollow noopener">{url}</a>')
    if tags:
        items = "".join(f"<li>{escape(tag)}</li>" for tag in tags)
        lines.append(f'  <ul class="tags">{items}</ul>')
    lines.append("</div>")
    return "\n".join(lines)
