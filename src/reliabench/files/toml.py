"""Reading TOML configuration files with one-line errors (the stdlib ``tomllib`` or ``tomli``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from reliabench.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["TOMLDecodeError", "read_toml", "tomllib"]

TOMLDecodeError = tomllib.TOMLDecodeError


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """Read a TOML file; every failure is a ``ConfigError`` naming the file.

    Args:
        path: The file.
        what: What the file should be, for messages (``"an agents file"``).

    Raises:
        ConfigError: missing file, a directory, invalid TOML, or not UTF-8.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            return dict(tomllib.load(fh))
    except FileNotFoundError:
        raise ConfigError(p, f"no such file (expected {what})") from None
    except IsADirectoryError:
        raise ConfigError(p, f"is a directory (expected {what})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(p, f"invalid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(p, f"not UTF-8 ({exc})") from None
