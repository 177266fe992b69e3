"""Render user profiles as HTML snippets."""

from __future__ import annotations

import html
from typing import Mapping

MAX_TAGS = 10


def _e(value: str) -> str:
    # Escape markup characters; quotes are harmless in text.
    return html.escape(value, quote=False)


def render_profile(profile: Mapping[str, object]) -> str:
    name = str(profile.get("name") or "").strip()
    if not name:
        raise ValueError("name is required")
    bio = str(profile.get("bio") or "").strip().replace("\r\n", "\n")
    website = str(profile.get("website") or "").strip()
    seen: list[str] = []
    for tag in profile.get("tags") or []:
        tag = tag.strip()
        if tag and tag not in seen:
            seen.append(tag)
    tags = seen[:MAX_TAGS]

    out = ['<div class="profile">', f'  <h2 class="name">{_e(name)}</h2>']
    if bio:
        out.append('  <p class="bio">' + "<br>".join(_e(part) for part in bio.split("\n")) + "</p>")
    if website[:8].lower().startswith(("http://", "https://")):
        out.append(f'  <a class="website" href="{_e(website)}" rel="nofollow noopener">{_e(website)}</a>')
    if tags:
        out.append('  <ul class="tags">' + "".join(f"<li>{_e(t)}</li>" for t in tags) + "</ul>")
    out.append("</div>")
    return "\n".join(out)
