"""Hidden tests for password_hashing (small iteration counts keep them fast)."""

from __future__ import annotations

import hashlib
import re

import pytest

from password_hashing import DEFAULT_ITERATIONS, hash_password, verify_password

FAST = 1000

KNOWN_SALT = "00112233445566778899aabbccddeeff"
KNOWN_VECTOR = (
    "pbkdf2_sha256$1000$" + KNOWN_SALT + "$dfb233c3b5065575ef404328c881a0cba71b7180f72298a2edc5ea5f3a4c02f9"
)
KNOWN_VECTOR_UNICODE = (
    "pbkdf2_sha256$1$" + KNOWN_SALT + "$963f7f8a4dbb0c6475f8d796c84d67d457b8b9eb3b7c243677722516f8fe0d12"
)


def test_correct_password_verifies():
    stored = hash_password("s3cret-Passw0rd", iterations=FAST)
    assert verify_password("s3cret-Passw0rd", stored) is True


def test_wrong_password_rejected():
    stored = hash_password("s3cret-Passw0rd", iterations=FAST)
    assert verify_password("s3cret-Passw0rd!", stored) is False


def test_verification_is_case_sensitive():
    stored = hash_password("Secret", iterations=FAST)
    assert verify_password("secret", stored) is False


def test_unicode_password_round_trip():
    stored = hash_password("pässwörd 🔑", iterations=FAST)
    assert verify_password("pässwörd 🔑", stored) is True
    assert verify_password("passwort 🔑", stored) is False


def test_stored_value_has_four_fields_and_records_iterations():
    stored = hash_password("hunter2", iterations=1234)
    assert isinstance(stored, str)
    parts = stored.split("$")
    assert len(parts) == 4
    assert parts[1] == "1234"
    assert "hunter2" not in stored
    assert verify_password("hunter2", hash_password("hunter2", iterations=1)) is True


def test_max_length_password_accepted():
    stored = hash_password("x" * 1024, iterations=FAST)
    assert verify_password("x" * 1024, stored) is True


@pytest.mark.parametrize("password", ["", "x" * 1025, b"bytes-password", None])
def test_hash_rejects_invalid_password(password):
    with pytest.raises(ValueError):
        hash_password(password, iterations=FAST)


@pytest.mark.parametrize("iterations", [0, -10, True, "1000"])
def test_hash_rejects_invalid_iterations(iterations):
    with pytest.raises(ValueError):
        hash_password("pw", iterations=iterations)


@pytest.mark.parametrize(
    "stored",
    [
        "",
        "not-a-hash",
        "pbkdf2_sha256$1000$" + KNOWN_SALT,
        "pbkdf2_sha256$abc$" + KNOWN_SALT + "$" + "00" * 32,
        "pbkdf2_sha256$0$" + KNOWN_SALT + "$" + "00" * 32,
        "pbkdf2_sha256$1000$zz$" + "00" * 32,
        None,
    ],
    ids=["empty", "garbage", "three-fields", "text-iterations", "zero-iterations", "bad-hex", "none"],
)
def test_malformed_stored_value_returns_false(stored):
    assert verify_password("pw", stored) is False


@pytest.mark.parametrize("password", ["", None, "x" * 1025])
def test_invalid_candidate_password_returns_false(password):
    stored = hash_password("pw", iterations=FAST)
    assert verify_password(password, stored) is False


@pytest.mark.security
def test_same_password_gets_different_salts():
    first = hash_password("same password", iterations=FAST)
    second = hash_password("same password", iterations=FAST)
    assert first != second
    assert first.split("$")[2] != second.split("$")[2]


@pytest.mark.security
def test_output_is_real_pbkdf2_sha256():
    stored = hash_password("correct horse", iterations=FAST)
    algorithm, iterations, salt_hex, key_hex = stored.split("$")
    assert algorithm == "pbkdf2_sha256"
    assert re.fullmatch(r"[0-9a-f]{32}", salt_hex)
    assert re.fullmatch(r"[0-9a-f]{64}", key_hex)
    expected = hashlib.pbkdf2_hmac("sha256", b"correct horse", bytes.fromhex(salt_hex), int(iterations))
    assert key_hex == expected.hex()


@pytest.mark.security
def test_known_pbkdf2_vectors_verify():
    assert verify_password("correct horse battery staple", KNOWN_VECTOR) is True
    assert verify_password("pässwörd", KNOWN_VECTOR_UNICODE) is True
    assert verify_password("Correct horse battery staple", KNOWN_VECTOR) is False


@pytest.mark.security
def test_default_work_factor():
    assert DEFAULT_ITERATIONS >= 600_000
    stored = hash_password("default cost")
    assert stored.split("$")[:2] == ["pbkdf2_sha256", str(DEFAULT_ITERATIONS)]
