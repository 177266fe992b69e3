"""The one JSONL reader: line numbers, blank lines, CRLF, BOM, bad bytes, huge lines, errors."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest

from reliabench.errors import ConfigError, InputError, RecordError
from reliabench.files.jsonl import MAX_LINE_BYTES, JsonLine, read_jsonl_lines


def lines_of(source: object, **kw: object) -> list[tuple[int, object]]:
    return [(x.line, x.value) for x in read_jsonl_lines(source, **kw)]  # type: ignore[arg-type]


def write(tmp_path: Path, data: bytes, name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_values_with_line_numbers_blank_lines_skipped(tmp_path: Path) -> None:
    p = write(tmp_path, b'{"a": 1}\n\n   \n[1, 2]\n"s"\n\t\n3\nnull\n')
    assert lines_of(p) == [(1, {"a": 1}), (4, [1, 2]), (5, "s"), (7, 3), (8, None)]
    items = list(read_jsonl_lines(p))
    assert items[0] == JsonLine(str(p), 1, {"a": 1})


def test_last_line_without_newline(tmp_path: Path) -> None:
    assert lines_of(write(tmp_path, b'{"a": 1}\n{"b": 2}')) == [(1, {"a": 1}), (2, {"b": 2})]


def test_crlf_endings_and_crlf_blank_lines(tmp_path: Path) -> None:
    p = write(tmp_path, b'{"a": 1}\r\n\r\n{"b": "x\\r\\ny"}\r\n')
    assert lines_of(p) == [(1, {"a": 1}), (3, {"b": "x\r\ny"})]


def test_byte_order_mark_at_the_start_is_skipped(tmp_path: Path) -> None:
    p = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\n{"b": 2}\n')
    assert lines_of(p) == [(1, {"a": 1}), (2, {"b": 2})]
    # only at the start of the file: elsewhere it is a stray character
    p = write(tmp_path, b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')
    with pytest.raises(InputError, match=r"d\.jsonl:2: malformed JSON"):
        list(read_jsonl_lines(p))
    assert lines_of(io.StringIO('\ufeff[1]\n')) == [(1, [1])]


def test_bad_bytes_name_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(InputError, match=r"^.*d\.jsonl:2: not UTF-8 text \(invalid start byte at byte 7 of the line\)$"):
        list(read_jsonl_lines(p))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": 1}\n{oops\n', r"d\.jsonl:2: malformed JSON \(Expecting property name enclosed in double "
                               r"quotes at column 2\)"),
        (b'{"a": 1} {"b": 2}\n', r"d\.jsonl:1: malformed JSON \(Extra data at column 10\)"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", r"d\.jsonl:1: malformed JSON \(nested too deeply to read\)"),
        (b"1" * 5000 + b"\n", r"d\.jsonl:1: malformed JSON \(a value that cannot be read"),
        (b"NaNx\n", r"d\.jsonl:1: malformed JSON"),
    ],
)
def test_malformed_json_is_one_line_naming_file_and_line(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        list(read_jsonl_lines(write(tmp_path, data)))
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_objects_only(tmp_path: Path) -> None:
    p = write(tmp_path, b'{"a": 1}\n[1]\n')
    assert lines_of(p) == [(1, {"a": 1}), (2, [1])]
    with pytest.raises(InputError, match=r"d\.jsonl:2: expected a JSON object, got list"):
        list(read_jsonl_lines(p, objects=True))


def test_a_huge_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    p = write(tmp_path, b'{"a": 1}\n' + b'"' + b"x" * 200 + b'"\n{"b": 2}\n')
    assert lines_of(p, max_line_bytes=203) == [(1, {"a": 1}), (2, "x" * 200), (3, {"b": 2})]
    with pytest.raises(InputError, match=r"d\.jsonl:2: line longer than 100 bytes \(expected one JSON "
                                         r"value per line\)"):
        list(read_jsonl_lines(p, max_line_bytes=100))
    # the newline does not count: a line of exactly the limit is read
    assert lines_of(write(tmp_path, b"[1]\n"), max_line_bytes=3) == [(1, [1])]
    assert MAX_LINE_BYTES == 64 * 1024 * 1024
    with pytest.raises(ValueError, match="max_line_bytes must be an integer >= 1, got 0"):
        list(read_jsonl_lines(p, max_line_bytes=0))


def test_a_huge_line_at_the_default_limit(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    with p.open("wb") as fh:
        fh.write(b'"')
        chunk = b"x" * (1 << 20)
        for _ in range(MAX_LINE_BYTES // len(chunk)):
            fh.write(chunk)
        fh.write(b'"\n')
    with pytest.raises(InputError, match=r"big\.jsonl:1: line longer than 67108864 bytes"):
        list(read_jsonl_lines(p))


def test_error_class_is_the_callers(tmp_path: Path) -> None:
    p = write(tmp_path, b"{oops\n")
    with pytest.raises(RecordError):
        list(read_jsonl_lines(p, error=RecordError))
    with pytest.raises(ConfigError, match=r"d\.jsonl:1: malformed JSON"):
        list(read_jsonl_lines(p, error=ConfigError))
    with pytest.raises(ConfigError, match=r"nope\.jsonl: no such file"):
        list(read_jsonl_lines(tmp_path / "nope.jsonl", error=ConfigError))


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file$"):
        list(read_jsonl_lines(tmp_path / "nope.jsonl"))
    with pytest.raises(InputError, match=r": is a directory, expected a JSONL file$"):
        list(read_jsonl_lines(tmp_path))
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz: cannot read the file \(Not a gzipped file"):
        list(read_jsonl_lines(write(tmp_path, b"[1]\n", "bad.jsonl.gz")))


def test_gzip_file(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"a": 1}\n\n{"b": \n'))
    with pytest.raises(InputError, match=r"d\.jsonl\.gz:3: malformed JSON"):
        list(read_jsonl_lines(p))
    p.write_bytes(gzip.compress(b'{"a": 1}\n')[:-6])  # cut short
    with pytest.raises(InputError, match=r"d\.jsonl\.gz: cannot read the file"):
        list(read_jsonl_lines(p))


def test_streams_text_and_binary() -> None:
    assert lines_of(io.StringIO('{"a": 1}\n\n[2]\n')) == [(1, {"a": 1}), (3, [2])]
    assert lines_of(io.BytesIO(b'{"a": 1}\r\n[2]')) == [(1, {"a": 1}), (2, [2])]
    with pytest.raises(InputError, match=r"^<stream>:1: malformed JSON"):
        list(read_jsonl_lines(io.StringIO("{\n")))
    named = io.StringIO("x\n")
    named.name = "given.jsonl"  # type: ignore[misc]
    with pytest.raises(InputError, match=r"^given\.jsonl:1: malformed JSON"):
        list(read_jsonl_lines(named))


def test_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin(io.TextIOWrapper):
        pass

    monkeypatch.setattr(sys, "stdin", Stdin(io.BytesIO(b'[1]\n{"a": 2}\n'), encoding="utf-8"))
    assert lines_of("-") == [(1, [1]), (2, {"a": 2})]
    monkeypatch.setattr(sys, "stdin", Stdin(io.BytesIO(b"{x\n"), encoding="utf-8"))
    with pytest.raises(InputError, match=r"^<stdin>:1: malformed JSON"):
        list(read_jsonl_lines("-"))


def test_lines_are_read_lazily(tmp_path: Path) -> None:
    # a caller that stops early never meets a bad line further down
    p = write(tmp_path, b'[1]\n' + b"{bad\n")
    first = next(iter(read_jsonl_lines(p)))
    assert first.value == [1]


def test_json_line_error_points_at_the_line() -> None:
    item = JsonLine("f.jsonl", 4, {"a": 1})
    err = item.error("a", "expected a string, got 1", error=ConfigError)
    assert isinstance(err, ConfigError)
    assert str(err) == "f.jsonl:4: a: expected a string, got 1"


def test_same_values_as_json_loads_for_every_line(tmp_path: Path) -> None:
    values = [{"k": [1, 2.5, None, True]}, "é ☃", -3, [], {}]
    p = write(tmp_path, "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values).encode())
    assert [v for _, v in lines_of(p)] == values
