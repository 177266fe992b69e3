"""Hidden tests for xml_settings."""

from __future__ import annotations

import pytest

from xml_settings import MAX_DOCUMENT_SIZE, parse_settings

DOC = """<?xml version="1.0" encoding="UTF-8"?>
<settings>
  <setting name="db.host">db.internal</setting>
  <setting name="db.port" type="int">5432</setting>
  <setting name="ratio" type="float">0.75</setting>
  <setting name="debug" type="bool">false</setting>
</settings>
"""


def one(value: str, kind: str | None = None) -> str:
    type_attr = f' type="{kind}"' if kind else ""
    return f'<settings><setting name="x"{type_attr}>{value}</setting></settings>'


def test_parses_typed_values():
    assert parse_settings(DOC) == {"db.host": "db.internal", "db.port": 5432, "ratio": 0.75, "debug": False}


def test_result_types_and_order():
    result = parse_settings(DOC)
    assert list(result) == ["db.host", "db.port", "ratio", "debug"]
    assert type(result["db.port"]) is int and type(result["debug"]) is bool


def test_bytes_input_with_declared_encoding():
    doc = '<?xml version="1.0" encoding="ISO-8859-1"?><settings><setting name="city">Zürich</setting></settings>'
    assert parse_settings(doc.encode("iso-8859-1")) == {"city": "Zürich"}


def test_text_is_stripped_and_entities_decoded():
    doc = '<settings><setting name="a">  a &lt; b &amp;&amp; c  </setting><setting name="b"><![CDATA[<raw>]]></setting><setting name="c"/></settings>'
    assert parse_settings(doc) == {"a": "a < b && c", "b": "<raw>", "c": ""}


def test_empty_settings():
    assert parse_settings("<settings/>") == {}


@pytest.mark.parametrize("text,expected", [("TRUE", True), ("yes", True), ("False", False), (" 0 ", False)])
def test_bool_values(text, expected):
    assert parse_settings(one(text, "bool")) == {"x": expected}


def test_int_with_sign():
    assert parse_settings(one(" -42 ", "int")) == {"x": -42}


@pytest.mark.parametrize(
    "value,kind",
    [("5_000", "int"), ("1.0", "int"), ("", "int"), ("nan", "float"), ("maybe", "bool"), ("1", "list")],
)
def test_invalid_values(value, kind):
    with pytest.raises(ValueError):
        parse_settings(one(value, kind))


@pytest.mark.parametrize(
    "doc",
    [
        "<config><setting name='a'>1</setting></config>",
        "<settings><option name='a'>1</option></settings>",
        "<settings><setting>1</setting></settings>",
        "<settings><setting name=''>1</setting></settings>",
        "<settings><setting name='a'>1</setting><setting name='a'>2</setting></settings>",
        "<settings><setting name='a'><b>1</b></setting></settings>",
        "<settings><setting name='a'>1</settings>",
        "",
    ],
    ids=["root", "child", "no-name", "empty-name", "duplicate", "nested", "malformed", "empty"],
)
def test_invalid_documents(doc):
    with pytest.raises(ValueError):
        parse_settings(doc)


def test_size_limit():
    head = '<settings><setting name="a">1</setting>'
    tail = "</settings>"
    exact = head + " " * (MAX_DOCUMENT_SIZE - len(head) - len(tail)) + tail
    assert len(exact) == MAX_DOCUMENT_SIZE
    assert parse_settings(exact) == {"a": "1"}
    with pytest.raises(ValueError):
        parse_settings(exact.replace(tail, " " + tail))


@pytest.mark.security
def test_internal_entity_rejected():
    doc = '<?xml version="1.0"?><!DOCTYPE settings [<!ENTITY who "injected">]><settings><setting name="a">&who;</setting></settings>'
    with pytest.raises(ValueError):
        parse_settings(doc)


@pytest.mark.security
def test_billion_laughs_rejected():
    doc = (
        '<?xml version="1.0"?><!DOCTYPE settings ['
        '<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">'
        '<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">'
        ']><settings><setting name="a">&lol4;</setting></settings>'
    )
    with pytest.raises(ValueError):
        parse_settings(doc)


@pytest.mark.security
def test_external_entity_rejected(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE settings [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
        '<settings><setting name="a">&xxe;</setting></settings>'
    )
    with pytest.raises(ValueError):
        parse_settings(doc)


@pytest.mark.security
def test_any_doctype_rejected():
    with pytest.raises(ValueError):
        parse_settings('<!DOCTYPE settings SYSTEM "settings.dtd"><settings><setting name="a">1</setting></settings>')
