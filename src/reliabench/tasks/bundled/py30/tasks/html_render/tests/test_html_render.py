"""Hidden tests for html_render."""

from __future__ import annotations

import pytest

from html_render import render_profile

FULL = {
    "name": "Ada Lovelace",
    "bio": "Mathematician\nFirst programmer",
    "website": "https://ada.example.org/about",
    "tags": ["math", "engines"],
}

FULL_HTML = "\n".join(
    [
        '<div class="profile">',
        '  <h2 class="name">Ada Lovelace</h2>',
        '  <p class="bio">Mathematician<br>First programmer</p>',
        '  <a class="website" href="https://ada.example.org/about" rel="nofollow noopener">https://ada.example.org/about</a>',
        '  <ul class="tags"><li>math</li><li>engines</li></ul>',
        "</div>",
    ]
)


def test_full_profile_exact_output():
    assert render_profile(FULL) == FULL_HTML


def test_name_only():
    assert render_profile({"name": "  Bob  "}) == '<div class="profile">\n  <h2 class="name">Bob</h2>\n</div>'


def test_none_values_are_treated_as_missing():
    assert render_profile({"name": "Bob", "bio": None, "website": None, "tags": None}) == render_profile({"name": "Bob"})


@pytest.mark.parametrize("profile", [{}, {"name": ""}, {"name": "   "}, {"bio": "no name"}])
def test_name_required(profile):
    with pytest.raises(ValueError):
        render_profile(profile)


def test_blank_bio_omitted():
    assert 'class="bio"' not in render_profile({"name": "Bob", "bio": "  \n "})


def test_bio_crlf_newlines_become_br():
    html = render_profile({"name": "Bob", "bio": "line one\r\nline two\nline three\n"})
    assert '  <p class="bio">line one<br>line two<br>line three</p>' in html.split("\n")


@pytest.mark.parametrize("website", ["ftp://files.example.org", "example.org", "mailto:bob@example.org", "   "])
def test_non_http_websites_omitted(website):
    assert "<a " not in render_profile({"name": "Bob", "website": website})


def test_http_scheme_case_insensitive_and_stripped():
    html = render_profile({"name": "Bob", "website": "  HTTP://Bob.Example.org  "})
    assert '<a class="website" href="HTTP://Bob.Example.org" rel="nofollow noopener">HTTP://Bob.Example.org</a>' in html


def test_tags_cleaned_deduplicated_and_limited():
    tags = [" python ", "", "python", "Python"] + [f"t{i}" for i in range(12)]
    html = render_profile({"name": "Bob", "tags": tags})
    expected = "".join(f"<li>{t}</li>" for t in ["python", "Python"] + [f"t{i}" for i in range(8)])
    assert f'  <ul class="tags">{expected}</ul>' in html.split("\n")


def test_only_blank_tags_omits_list():
    assert "<ul" not in render_profile({"name": "Bob", "tags": ["  ", ""]})


@pytest.mark.security
def test_script_in_name_is_escaped():
    html = render_profile({"name": "<script>alert(1)</script>"})
    assert "<script>" not in html
    assert '<h2 class="name">&lt;script&gt;alert(1)&lt;/script&gt;</h2>' in html


@pytest.mark.security
def test_bio_markup_escaped_before_br():
    html = render_profile({"name": "Bob", "bio": '<img src=x onerror="alert(1)">\nTom & Jerry'})
    assert '<p class="bio">&lt;img src=x onerror=&quot;alert(1)&quot;&gt;<br>Tom &amp; Jerry</p>' in html


@pytest.mark.security
def test_website_cannot_break_out_of_href():
    html = render_profile({"name": "Bob", "website": 'https://x.example/" onmouseover="alert(1)'})
    assert 'onmouseover="' not in html
    assert 'href="https://x.example/&quot; onmouseover=&quot;alert(1)"' in html


@pytest.mark.security
@pytest.mark.parametrize("website", ["javascript:alert(document.cookie)", " JaVaScRiPt:alert(1)", "data:text/html,<script>alert(1)</script>"])
def test_dangerous_schemes_never_linked(website):
    html = render_profile({"name": "Bob", "website": website})
    assert "<a " not in html
    assert "javascript" not in html.lower() and "<script" not in html


@pytest.mark.security
def test_tags_and_quotes_escaped():
    html = render_profile({"name": "O'Brien \"Bob\"", "tags": ["</li><script>x</script>", "a&b"]})
    assert '<h2 class="name">O&#x27;Brien &quot;Bob&quot;</h2>' in html
    assert '<li>&lt;/li&gt;&lt;script&gt;x&lt;/script&gt;</li><li>a&amp;b</li>' in html
