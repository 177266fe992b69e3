"""Render user profiles as HTML snippets."""

from __future__ import annotations

from typing import Mapping

MAX_TAGS = 10


def render_profile(profile: Mapping[str, object]) -> str:
    name = (profile.get("name") or "").strip()
    if not name:
        raise ValueError("name is required")
    bio = (profile.get("bio") or "").strip().replace("\r\n", "\n")
    website = (profile.get("website") or "").strip()
    tags = []
    for tag in profile.get("tags") or []:
        tag = tag.strip()
        if tag and tag not in tags and len(tags) < MAX_TAGS:
            tags.append(tag)

    html = f'<div class="profile">\n  <h2 class="name">{name}</h2>\n'
    if bio:
        html += f'  <p class="bio">{bio.replace(chr(10), "<br>")}</p>\n'
    if website.lower().startswith(("http://", "https://")):
        html += f'  <a class="website" href="{website}" rel="nofollow noopener">{website}</a>\n'
    if tags:
        html += '  <ul class="tags">' + "".join(f"<li>{t}</li>" for t in tags) + "</ul>\n"
    return html + "</div>"
