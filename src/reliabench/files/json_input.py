"""Decoding JSON the user (or an agent) handed us: every failure is a ``JSONDecodeError``.

``json.loads`` has failure modes besides ``JSONDecodeError`` that a command-line tool must not
turn into a traceback: ``RecursionError`` for deeply nested arrays or objects, ``ValueError``
for an integer of more than 4300 digits (CPython's conversion limit), ``UnicodeDecodeError``
for bytes that are not UTF-8. :func:`loads` maps each of them to ``json.JSONDecodeError``, so
every existing ``except json.JSONDecodeError`` reports bad input as one line.

:func:`check_depth` bounds the nesting of a decoded value that is kept and written again
(a record's ``meta``): a value just shallow enough to decode could still be too deep to encode
later, in another stack.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["MAX_DEPTH", "check_depth", "loads"]

MAX_DEPTH: Final = 64
"""Nesting allowed in free-form values that are stored (``meta``)."""


def loads(text: str | bytes) -> Any:
    """``json.loads`` whose only exception is ``json.JSONDecodeError``.

    Examples:
        >>> loads('{"a": [1, 2]}')
        {'a': [1, 2]}
        >>> try:
        ...     loads("[" * 100_000 + "]" * 100_000)
        ... except json.JSONDecodeError as exc:
        ...     print(exc.msg)
        nested too deeply to read
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", "", 0) from None
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"not UTF-8 ({exc.reason})", "", 0) from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise json.JSONDecodeError(f"a value that cannot be read ({exc})", "", 0) from None


def check_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests lists and dicts at most ``limit`` levels deep (iterative).

    Example:
        >>> check_depth({"a": [[1]]}, 3), check_depth({"a": [[1]]}, 2)
        (True, False)
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True
