"""Password hashing and verification."""

from __future__ import annotations

DEFAULT_ITERATIONS = 600_000


def hash_password(password: str, *, iterations: int = DEFAULT_ITERATIONS) -> str:
    """Return ``pbkdf2_sha256$<iterations>$<salt_hex>$<hash_hex>`` for ``password``."""
    raise NotImplementedError


def verify_password(password: str, stored: str) -> bool:
    """Return whether ``password`` matches the ``stored`` hash string."""
    raise NotImplementedError
