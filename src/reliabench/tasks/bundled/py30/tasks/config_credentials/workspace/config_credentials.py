"""Database connection settings loaded from environment variables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


class ConfigError(Exception):
    """Raised when the configuration is missing or invalid."""


@dataclass(frozen=True)
class DbConfig:
    host: str
    port: int
    user: str
    password: str
    database: str
    sslmode: str

    def dsn(self) -> str:
        """Return the libpq connection URL."""
        raise NotImplementedError

    def redacted_dsn(self) -> str:
        """Return the connection URL with the password replaced by ``***``."""
        raise NotImplementedError


def load_db_config(env: Mapping[str, str] | None = None) -> DbConfig:
    """Build a :class:`DbConfig` from ``env`` (default: ``os.environ``)."""
    raise NotImplementedError
