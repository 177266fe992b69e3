r"""The one reader of JSON Lines input: rollout records, replay files, importers, converters.

A JSONL file holds one JSON value per line. :func:`read_jsonl_lines` yields each non-blank
line's value with its 1-based line number, and turns every way a line can be bad into ONE
exception that names the file, the line and what was expected::

    runs.jsonl:7: malformed JSON (Expecting ',' delimiter at column 31)

What it accepts and refuses:

* lines end with ``\n``; a ``\r\n`` ending (Windows) is the same line, and blank lines
  (only spaces, tabs, ``\r``) are skipped without changing the numbering;
* a UTF-8 byte order mark at the start of the file is skipped (Windows editors write one);
* each line is decoded as UTF-8 on its own, so a bad byte is reported on its line;
* a line longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`) is refused without
  being read into memory whole;
* JSON that nests too deeply, or holds an integer of more than 4300 digits, is malformed
  JSON (:func:`reliabench.files.json_input.loads`), never a traceback;
* ``objects=True`` asks for a JSON object on every line;
* a ``.gz`` file is decompressed on the fly; ``-`` is standard input.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from reliabench.errors import InputError
from reliabench.files import json_input

__all__ = ["MAX_LINE_BYTES", "JsonLine", "read_jsonl_lines"]

MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""The longest line read (64 MiB): a longer one is refused before it is held in memory."""

_BOM: Final = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One non-blank line of a JSONL file, decoded.

    Attributes:
        path: The file as named in messages (``<stdin>`` for standard input).
        line: Its 1-based line number.
        value: The decoded JSON value (a ``dict`` when read with ``objects=True``).
    """

    path: str
    line: int
    value: Any

    def error(self, field: str | None, message: str, *,
              error: type[InputError] = InputError) -> InputError:
        """An error of class ``error`` pointing at this line and ``field``."""
        return error(self.path, message, line=self.line, field=field)


def read_jsonl_lines(
    source: str | Path | IO[str] | IO[bytes],
    *,
    error: type[InputError] = InputError,
    objects: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Generator[JsonLine, None, None]:
    r"""Yield every non-blank line of a JSONL file, decoded, with its line number.

    Args:
        source: A path (``.gz`` is decompressed; ``-`` is standard input) or an open
            stream, text or binary (named in messages by its ``name``, else ``<stream>``).
        error: The :class:`~reliabench.errors.InputError` subclass raised
            (``RecordError`` for records, ``ConfigError`` for agents' files).
        objects: Require a JSON object on every line.
        max_line_bytes: The longest line accepted, in bytes (characters for a text stream).

    Yields:
        One :class:`JsonLine` per non-blank line, in file order.

    Raises:
        InputError: (of class ``error``) ``file:line`` for a line that is not UTF-8, too
            long, not JSON, or not an object when ``objects`` is set; ``file`` alone when
            the file cannot be opened or read.

    Example:
        >>> import io
        >>> [(x.line, x.value) for x in read_jsonl_lines(io.StringIO('{"a": 1}\r\n\n[2]\n'))]
        [(1, {'a': 1}), (3, [2])]
    """
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int) or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be an integer >= 1, got {max_line_bytes!r}")
    if not isinstance(source, (str, Path)):
        name = str(getattr(source, "name", "<stream>"))
        yield from _read(source, name, error, objects, max_line_bytes)
        return
    if str(source) == "-":
        stdin: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)
        yield from _read(stdin, "<stdin>", error, objects, max_line_bytes)
        return
    path = Path(source)
    try:
        fh: IO[bytes] = (gzip.open(path, "rb") if path.name.endswith(".gz")  # type: ignore[assignment]  # noqa: SIM115
                         else path.open("rb"))
    except FileNotFoundError:
        raise error(path, "no such file") from None
    except IsADirectoryError:
        raise error(path, "is a directory, expected a JSONL file") from None
    except OSError as exc:
        raise error(path, f"cannot read the file ({exc.strerror or exc})") from None
    with fh:
        try:
            yield from _read(fh, str(path), error, objects, max_line_bytes)
        except IsADirectoryError:
            raise error(path, "is a directory, expected a JSONL file") from None
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise error(path, f"cannot read the file ({getattr(exc, 'strerror', None) or exc})") from None


def _read(fh: IO[Any], name: str, error: type[InputError], objects: bool,
          limit: int) -> Iterator[JsonLine]:
    lineno = 0
    while True:
        try:
            raw = fh.readline(limit + 1)
        except UnicodeDecodeError as exc:  # a text stream that is not UTF-8
            raise error(name, f"not UTF-8 text ({exc.reason})", line=lineno + 1) from None
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n" if isinstance(raw, bytes) else "\n"):
            unit = "bytes" if isinstance(raw, bytes) else "characters"
            raise error(name, f"line longer than {limit} {unit} (expected one JSON value per line)",
                        line=lineno)
        if isinstance(raw, bytes):
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(name, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)",
                            line=lineno) from None
        else:
            text = raw[1:] if lineno == 1 and raw.startswith("\ufeff") else raw
        if not text.strip():
            continue
        try:
            value = json_input.loads(text)
        except json.JSONDecodeError as exc:
            where = f" at column {exc.colno}" if exc.doc else ""
            raise error(name, f"malformed JSON ({exc.msg}{where})", line=lineno) from None
        if objects and not isinstance(value, dict):
            raise error(name, f"expected a JSON object, got {type(value).__name__}", line=lineno)
        yield JsonLine(name, lineno, value)

