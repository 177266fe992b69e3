"""Database connection settings loaded from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import quote

SSL_MODES = frozenset({"disable", "allow", "prefer", "require", "verify-ca", "verify-full"})
DEFAULTS = {
    "APP_DB_HOST": "localhost",
    "APP_DB_PORT": "5432",
    "APP_DB_NAME": "app",
    "APP_DB_SSLMODE": "require",
}
REQUIRED = ("APP_DB_USER", "APP_DB_PASSWORD")
_REDACTED = "***"


class ConfigError(Exception):
    """Raised when the configuration is missing or invalid."""


@dataclass(frozen=True)
class DbConfig:
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str
    sslmode: str

    def _url(self, password: str) -> str:
        return (
            f"postgresql://{quote(self.user, safe='')}:{password}@{self.host}:{self.port}"
            f"/{quote(self.database, safe='')}?sslmode={self.sslmode}"
        )

    def dsn(self) -> str:
        """Return the libpq connection URL."""
        return self._url(quote(self.password, safe=""))

    def redacted_dsn(self) -> str:
        """Return the connection URL with the password replaced by ``***``."""
        return self._url(_REDACTED)


def _lookup(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name)
    if raw is None:
        return None
    value = raw if name == "APP_DB_PASSWORD" else raw.strip()
    return value or None


def _parse_port(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ConfigError("APP_DB_PORT must be a decimal port number")
    port = int(text)
    if port < 1 or port > 65535:
        raise ConfigError("APP_DB_PORT must be between 1 and 65535")
    return port


def load_db_config(env: Mapping[str, str] | None = None) -> DbConfig:
    """Build a :class:`DbConfig` from ``env`` (default: ``os.environ``)."""
    source: Mapping[str, str] = os.environ if env is None else env
    missing = [name for name in REQUIRED if _lookup(source, name) is None]
    if missing:
        raise ConfigError("missing required environment variables: " + ", ".join(missing))

    def setting(name: str) -> str:
        return _lookup(source, name) or DEFAULTS[name]

    sslmode = setting("APP_DB_SSLMODE")
    if sslmode not in SSL_MODES:
        raise ConfigError(f"APP_DB_SSLMODE must be one of: {', '.join(sorted(SSL_MODES))}")
    return DbConfig(
        host=setting("APP_DB_HOST"),
        port=_parse_port(setting("APP_DB_PORT")),
        user=str(_lookup(source, "APP_DB_USER")),
        password=str(_lookup(source, "APP_DB_PASSWORD")),
        database=setting("APP_DB_NAME"),
        sslmode=sslmode,
    )
