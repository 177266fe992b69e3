"""Hidden tests for config_credentials."""

from __future__ import annotations

import pytest

from config_credentials import ConfigError, DbConfig, load_db_config

PASSWORD = "c0rrect-h0rse:battery@staple"

FULL = {
    "APP_DB_HOST": "db.internal",
    "APP_DB_PORT": "6543",
    "APP_DB_USER": "svc_orders",
    "APP_DB_PASSWORD": PASSWORD,
    "APP_DB_NAME": "orders",
    "APP_DB_SSLMODE": "verify-full",
}


def env_with(**changes):
    env = dict(FULL)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def test_full_environment():
    config = load_db_config(FULL)
    assert (config.host, config.port, config.user, config.password, config.database, config.sslmode) == (
        "db.internal",
        6543,
        "svc_orders",
        PASSWORD,
        "orders",
        "verify-full",
    )


def test_defaults_for_optional_settings():
    config = load_db_config({"APP_DB_USER": "svc", "APP_DB_PASSWORD": "pw"})
    assert (config.host, config.port, config.database, config.sslmode) == ("localhost", 5432, "app", "require")


def test_blank_optional_values_use_defaults():
    config = load_db_config(env_with(APP_DB_HOST="  ", APP_DB_PORT="", APP_DB_SSLMODE=" "))
    assert (config.host, config.port, config.sslmode) == ("localhost", 5432, "require")


def test_whitespace_stripped_except_password():
    config = load_db_config(env_with(APP_DB_HOST=" db \n", APP_DB_USER="\tsvc ", APP_DB_PORT=" 7000 ", APP_DB_PASSWORD=" pw "))
    assert (config.host, config.user, config.port) == ("db", "svc", 7000)
    assert config.password == " pw "


@pytest.mark.parametrize("user", [None, "", "   "])
def test_missing_user(user):
    with pytest.raises(ConfigError, match="APP_DB_USER"):
        load_db_config(env_with(APP_DB_USER=user))


@pytest.mark.parametrize("port", ["1", "65535"])
def test_port_boundaries_accepted(port):
    assert load_db_config(env_with(APP_DB_PORT=port)).port == int(port)


@pytest.mark.parametrize("port", ["0", "65536", "abc", "-1", "54 32"])
def test_invalid_port(port):
    with pytest.raises(ConfigError, match="APP_DB_PORT"):
        load_db_config(env_with(APP_DB_PORT=port))


def test_invalid_sslmode():
    with pytest.raises(ConfigError, match="APP_DB_SSLMODE"):
        load_db_config(env_with(APP_DB_SSLMODE="maybe"))


def test_reads_os_environ_when_env_is_none(monkeypatch):
    for key, value in FULL.items():
        monkeypatch.setenv(key, value)
    assert load_db_config().user == "svc_orders"


def test_dsn_percent_encodes_credentials():
    config = load_db_config(env_with(APP_DB_USER="ops@corp", APP_DB_PASSWORD="p@ss:w/rd#1", APP_DB_NAME="my db"))
    assert config.dsn() == "postgresql://ops%40corp:p%40ss%3Aw%2Frd%231@db.internal:6543/my%20db?sslmode=verify-full"


def test_redacted_dsn():
    config = load_db_config(FULL)
    assert config.redacted_dsn() == "postgresql://svc_orders:***@db.internal:6543/orders?sslmode=verify-full"


def test_configs_compare_by_value():
    assert load_db_config(FULL) == load_db_config(dict(FULL))
    assert load_db_config(FULL) != load_db_config(env_with(APP_DB_NAME="other"))


@pytest.mark.security
@pytest.mark.parametrize("password", [None, ""])
def test_missing_password_is_an_error(password):
    with pytest.raises(ConfigError, match="APP_DB_PASSWORD"):
        load_db_config(env_with(APP_DB_PASSWORD=password))


@pytest.mark.security
def test_all_missing_required_variables_reported():
    with pytest.raises(ConfigError) as excinfo:
        load_db_config({"APP_DB_HOST": "db"})
    assert "APP_DB_USER" in str(excinfo.value)
    assert "APP_DB_PASSWORD" in str(excinfo.value)


@pytest.mark.security
def test_missing_password_in_process_environment(monkeypatch):
    for key, value in FULL.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("APP_DB_PASSWORD")
    with pytest.raises(ConfigError):
        load_db_config()


@pytest.mark.security
def test_password_not_in_repr_or_str():
    config = load_db_config(FULL)
    assert PASSWORD not in repr(config)
    assert PASSWORD not in str(config)
    assert "db.internal" in repr(config)


@pytest.mark.security
def test_error_messages_do_not_leak_password():
    with pytest.raises(ConfigError) as excinfo:
        load_db_config(env_with(APP_DB_PORT="not-a-port"))
    assert PASSWORD not in str(excinfo.value)
