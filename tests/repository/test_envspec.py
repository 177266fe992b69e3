"""Environment specs: parsing, the hash the cache uses, refusing a Python this machine lacks."""

from __future__ import annotations

from reliabench.repository.envspec import RepoEnvSpec, find_python, parse_env_spec, python_refusal, spec_hash


def test_hash_covers_what_is_built_only() -> None:
    a = RepoEnvSpec(packages=("x==1",), install=("pip",), notes=("n",))
    assert spec_hash(a) == spec_hash(RepoEnvSpec(packages=("x==1",)))
    assert spec_hash(a) != spec_hash(RepoEnvSpec(packages=("x==2",)))
    assert spec_hash(a) != spec_hash(RepoEnvSpec(python="3.12", packages=("x==1",)))


def test_missing_python_is_refused_with_the_fix() -> None:
    assert find_python("3.11") is not None  # Debian 12's Python
    why = python_refusal(RepoEnvSpec(python="3.9"), "task t")
    assert why is not None and why.startswith("task t: python = '3.9'") and "python3.11" in why
    assert python_refusal(RepoEnvSpec(python="3.11"), "t") is None
    assert python_refusal(RepoEnvSpec(python="3.9", image="img"), "t") is None  # an image brings its own


def test_parse_round_trip_and_problems() -> None:
    spec = RepoEnvSpec(
        python="3.11",
        packages=("a==1",),
        install=("python", "-m", "pip"),
        requested_python="3.9",
        notes=("x",),
    )
    problems: list[str] = []
    assert parse_env_spec(spec.as_toml(), "W", problems) == spec and problems == []
    bad = {"python": 3, "packages": ["https://evil/x.whl"], "env": {"A": 1}, "surprise": True}
    assert parse_env_spec(bad, "W", problems) is None
    assert any("surprise: unknown key" in p for p in problems)
    assert any("python: expected" in p for p in problems)
    assert any("is not a requirement" in p for p in problems)
    assert any("env: expected a table of strings" in p for p in problems)
