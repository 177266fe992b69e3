"""Password hashing and verification."""

from __future__ import annotations

import hashlib
import hmac
import secrets

DEFAULT_ITERATIONS = 600_000
ALGORITHM = "pbkdf2_sha256"
SALT_BYTES = 16
KEY_BYTES = 32
MAX_PASSWORD_LENGTH = 1024


def _valid_password(password: object) -> bool:
    return isinstance(password, str) and 0 < len(password) <= MAX_PASSWORD_LENGTH


def _derive(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations, dklen=KEY_BYTES)


def hash_password(password: str, *, iterations: int = DEFAULT_ITERATIONS) -> str:
    """Return ``pbkdf2_sha256$<iterations>$<salt_hex>$<hash_hex>`` for ``password``."""
    if not _valid_password(password):
        raise ValueError(f"password must be a string of 1 to {MAX_PASSWORD_LENGTH} characters")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError("iterations must be a positive integer")
    salt = secrets.token_bytes(SALT_BYTES)
    key = _derive(password, salt, iterations)
    return f"{ALGORITHM}${iterations}${salt.hex()}${key.hex()}"


def _parse(stored: object) -> tuple[int, bytes, bytes] | None:
    if not isinstance(stored, str):
        return None
    parts = stored.split("$")
    if len(parts) != 4 or parts[0] != ALGORITHM:
        return None
    iterations_text, salt_hex, key_hex = parts[1:]
    if not iterations_text.isdigit() or not iterations_text.isascii():
        return None
    iterations = int(iterations_text)
    if iterations < 1:
        return None
    try:
        salt = bytes.fromhex(salt_hex)
        key = bytes.fromhex(key_hex)
    except ValueError:
        return None
    if not salt or len(key) != KEY_BYTES:
        return None
    return iterations, salt, key


def verify_password(password: str, stored: str) -> bool:
    """Return whether ``password`` matches the ``stored`` hash string."""
    if not _valid_password(password):
        return False
    parsed = _parse(stored)
    if parsed is None:
        return False
    iterations, salt, expected = parsed
    return hmac.compare_digest(_derive(password, salt, iterations), expected)
