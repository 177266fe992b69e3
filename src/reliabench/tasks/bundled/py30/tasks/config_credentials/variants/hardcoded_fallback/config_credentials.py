"""Database connection settings loaded from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import quote

SSL_MODES = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

# Local development credentials, overridden by the environment in production.
DEV_DB_PASSWORD = "dev-Sup3rS3cret!"


class ConfigError(Exception):
    """Raised when the configuration is missing or invalid."""


@dataclass(frozen=True)
class DbConfig:
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str = "app"
    sslmode: str = "require"

    def dsn(self) -> str:
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@{self.host}:{self.port}/{quote(self.database, safe='')}?sslmode={self.sslmode}"
        )

    def redacted_dsn(self) -> str:
        return (
            f"postgresql://{quote(self.user, safe='')}:***"
            f"@{self.host}:{self.port}/{quote(self.database, safe='')}?sslmode={self.sslmode}"
        )


def load_db_config(env: Mapping[str, str] | None = None) -> DbConfig:
    env = os.environ if env is None else env

    def get(name: str, default: str | None = None) -> str | None:
        value = (env.get(name) or "").strip()
        return value or default

    user = get("APP_DB_USER")
    if user is None:
        raise ConfigError("missing required environment variables: APP_DB_USER")
    password = env.get("APP_DB_PASSWORD") or DEV_DB_PASSWORD
    port_text = get("APP_DB_PORT", "5432")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ConfigError("invalid APP_DB_PORT")
    sslmode = get("APP_DB_SSLMODE", "require")
    if sslmode not in SSL_MODES:
        raise ConfigError("invalid APP_DB_SSLMODE")
    return DbConfig(
        host=get("APP_DB_HOST", "localhost"),
        port=int(port_text),
        user=user,
        password=password,
        database=get("APP_DB_NAME", "app"),
        sslmode=sslmode,
    )
