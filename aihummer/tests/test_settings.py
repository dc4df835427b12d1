import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from aihummer.env import Env, parse_database_url, validate_vault_keys

GOOD_KEY = "k7Hq2vXw9LmP4rTz8YcN1bFgJ6sDaE3uQoWiR5tVyZx0MnBh-_plenty"
GOOD_VAULT = "xpG3k1qU7p3wY8vEo2bI6cN0dT5rS9aL4mJhF1gKzQw="
PRODUCTION_OK = {
    "AIHUMMER_ENV": "production",
    "DEBUG": "false",
    "SECRET_KEY": GOOD_KEY,
    "AIHUMMER_VAULT_KEYS": GOOD_VAULT,
    "ALLOWED_HOSTS": "aihummer.example.com",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/aihummer",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
}


def start_django(environ: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION_OK} | environ
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_production_starts_when_everything_is_set():
    result = start_django(PRODUCTION_OK)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"DEBUG": "true"}, "DEBUG is on"),
        ({"SECRET_KEY": ""}, "SECRET_KEY is not set"),
        ({"SECRET_KEY": "django-insecure-" + GOOD_KEY}, "SECRET_KEY is a default value"),
        ({"SECRET_KEY": "short-but-random-9Xq"}, "SECRET_KEY is shorter than 50 characters"),
        ({"AIHUMMER_VAULT_KEYS": ""}, "AIHUMMER_VAULT_KEYS is empty"),
        ({"ALLOWED_HOSTS": "*"}, "ALLOWED_HOSTS contains a wildcard"),
        ({"ALLOWED_HOSTS": ".example.com,*.evil"}, "ALLOWED_HOSTS contains a wildcard"),
    ],
)
def test_production_refuses_each_unsafe_default_and_names_it(override, problem):
    result = start_django(PRODUCTION_OK | override)

    assert result.returncode != 0
    assert "Refusing to start in production: " in result.stderr
    assert problem in result.stderr


def test_production_lists_every_problem_at_once():
    result = start_django(PRODUCTION_OK | {"DEBUG": "1", "ALLOWED_HOSTS": "*", "AIHUMMER_VAULT_KEYS": ""})

    assert "DEBUG is on; AIHUMMER_VAULT_KEYS is empty; ALLOWED_HOSTS contains a wildcard." in result.stderr


def test_a_bad_vault_key_is_named_by_position():
    result = start_django(PRODUCTION_OK | {"AIHUMMER_VAULT_KEYS": f"{GOOD_VAULT},not-a-key"})

    assert "AIHUMMER_VAULT_KEYS: key #2 is not a Fernet key" in result.stderr


@pytest.mark.parametrize(
    "key",
    [
        GOOD_VAULT,
        GOOD_VAULT[:-4],  # 29 bytes
        GOOD_VAULT + "AAAA",  # 35 bytes
        "not-a-key",
        "A" * 43,  # padding missing
        "ü" * 44,
        "+" * 44,  # 33 bytes
        "",
    ],
)
def test_a_vault_key_is_accepted_exactly_when_fernet_accepts_it(key: str):
    # The settings check keys without importing cryptography; Fernet stays the judge.
    from cryptography.fernet import Fernet

    try:
        Fernet(key)
        fernet_accepts = True
    except ValueError:
        fernet_accepts = False
    try:
        validate_vault_keys([key])
        accepted = True
    except ImproperlyConfigured:
        accepted = False

    assert accepted is fernet_accepts


def test_secrets_can_come_from_files(tmp_path: Path):
    (tmp_path / "secret").write_text(GOOD_KEY + "\n")
    env = Env({"SECRET_KEY_FILE": str(tmp_path / "secret")})

    assert env.str("SECRET_KEY") == GOOD_KEY
    with pytest.raises(ImproperlyConfigured, match="Set either SECRET_KEY or SECRET_KEY_FILE"):
        Env({"SECRET_KEY": "x", "SECRET_KEY_FILE": str(tmp_path / "secret")}).str("SECRET_KEY")
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY_FILE: cannot read"):
        Env({"SECRET_KEY_FILE": str(tmp_path / "missing")}).str("SECRET_KEY")


@pytest.mark.parametrize(
    ("environ", "call", "message"),
    [
        ({"DEBUG": "maybe"}, lambda e: e.bool("DEBUG", False), "DEBUG must be one of true/false"),
        ({"N": "x"}, lambda e: e.int("N", 1), "N must be an integer, not 'x'"),
        ({"N": "9"}, lambda e: e.int("N", 1, maximum=4), "N must be at most 4, not 9"),
        ({"N": "0"}, lambda e: e.int("N", 1, minimum=31_536_000), "N must be at least 31536000, not 0"),
        ({"F": "1,5"}, lambda e: e.float("F", 1.0), "F must be a number, not '1,5'"),
        ({"F": "0.25"}, lambda e: e.float("F", 1.0, minimum=0.5), "F must be at least 0.5, not 0.25"),
        (
            {"AIHUMMER_ENV": "prod"},
            lambda e: e.choice("AIHUMMER_ENV", ["development", "production"], "development"),
            "AIHUMMER_ENV must be one of development, production, not 'prod'",
        ),
        ({"U": "aihummer.example.com"}, lambda e: e.url("U"), "U must be an absolute http.s. URL with a host"),
        ({"U": "ftp://h.example"}, lambda e: e.url("U"), "U must be an absolute http.s. URL with a host"),
        ({"U": "https://h.example/?x=1"}, lambda e: e.url("U"), "U must be a base URL: no query, fragment or user"),
        ({"U": "https://[::1"}, lambda e: e.url("U"), "U must be an http.s. URL, not"),
    ],
)
def test_bad_values_are_refused_with_the_variable_named(environ, call, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        call(Env(environ))


def test_a_public_url_is_kept_without_its_trailing_slash():
    assert Env({"U": " https://aihummer.example.com/desk/ "}).url("U") == "https://aihummer.example.com/desk"
    assert Env({}).url("U") == ""


def test_database_urls():
    postgres = parse_database_url("postgresql://u:p%40ss@db.internal:6543/app?sslmode=require", pool_max_size=5)
    sqlite = parse_database_url("sqlite:////srv/aihummer/db.sqlite3")

    assert (postgres["NAME"], postgres["USER"], postgres["PASSWORD"], postgres["HOST"], postgres["PORT"]) == (
        "app",
        "u",
        "p@ss",
        "db.internal",
        "6543",
    )
    assert postgres["OPTIONS"] == {"sslmode": "require", "pool": {"min_size": 1, "max_size": 5, "timeout": 10}}
    assert sqlite == {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/aihummer/db.sqlite3"}
    with pytest.raises(ImproperlyConfigured, match="unsupported scheme 'mysql'"):
        parse_database_url("mysql://x/y")


def test_development_keeps_its_generated_secrets_across_restarts():
    env = {"AIHUMMER_ENV": "development", "DATABASE_URL": "sqlite:///:memory:"}
    script = "from django.conf import settings as s; print(s.SECRET_KEY, s.AIHUMMER_VAULT_KEYS[0])"

    def run() -> str:
        environ = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "AIHUMMER_VAULT_KEYS")} | env
        command = [sys.executable, "-c", script]  # reading a setting loads the settings module, no app
        return subprocess.run(
            command, cwd=settings.BASE_DIR, env=environ, capture_output=True, text=True, check=True
        ).stdout

    first = run()
    assert run() == first
    assert len(first.split()[0]) >= 50


# --- Issue 10: weak production settings are refused, each named ----------------------
@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"SECRET_KEY": "changeme" * 8}, "SECRET_KEY has only 7 distinct characters (at least 20"),
        ({"SECRET_KEY": "abcdefghij" * 6}, "SECRET_KEY has only 10 distinct characters"),
        ({"DATABASE_URL": ""}, "DATABASE_URL is not set (production runs on PostgreSQL"),
        ({"DATABASE_URL": "sqlite:////srv/db.sqlite3"}, "DATABASE_URL points to SQLite"),
        # Issue 34: without a broker, runs would execute inside web requests.
        ({"CELERY_BROKER_URL": ""}, "CELERY_BROKER_URL is not set (without a broker, workflow runs"),
    ],
)
def test_production_refuses_weak_settings_and_names_them(override, problem):
    environ = PRODUCTION_OK | override
    for name in ("DATABASE_URL", "CELERY_BROKER_URL"):
        if not override.get(name, "x"):
            environ.pop(name)

    result = start_django(environ)

    assert result.returncode != 0
    assert problem in result.stderr


def test_production_refuses_the_development_secrets():
    development = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings as s; print(s.SECRET_KEY, s.AIHUMMER_VAULT_KEYS[0])",
        ],
        cwd=settings.BASE_DIR,
        env={k: v for k, v in os.environ.items() if k not in PRODUCTION_OK | {"SECRET_KEY": ""}}
        | {"AIHUMMER_ENV": "development", "DATABASE_URL": "sqlite:///:memory:"},
        capture_output=True,
        text=True,
        check=True,
    )
    dev_secret, dev_vault = development.stdout.split()

    result = start_django(
        PRODUCTION_OK | {"SECRET_KEY": dev_secret, "AIHUMMER_VAULT_KEYS": f"{GOOD_VAULT},{dev_vault}"}
    )

    assert "SECRET_KEY is the development secret (var/dev-secrets.json)" in result.stderr
    assert "AIHUMMER_VAULT_KEYS key #2 is the development vault key (var/dev-secrets.json)" in result.stderr


def test_check_deploy_passes_with_the_production_defaults():
    # The test environment's async escape hatch is not a production setting.
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION_OK and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env |= PRODUCTION_OK
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    # Only the preload opt-in remains: submitting a domain to browsers is hard to undo.
    assert re.findall(r"security\.W\d+", result.stderr + result.stdout) == ["security.W021"]


def test_production_redirects_to_https_behind_a_proxy_but_not_health_checks():
    script = (
        "import django; django.setup(); from django.test import Client; c = Client(); "
        "print(c.get('/admin/', headers={'host': 'aihummer.example.com'}).status_code, "
        "c.get('/admin/login/', headers={'host': 'aihummer.example.com', 'x-forwarded-proto': 'https'}).status_code, "
        "c.get('/healthz', headers={'host': 'aihummer.example.com'}).status_code)"
    )
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION_OK} | PRODUCTION_OK
    env |= {"SECURE_PROXY_SSL_HEADER": "true", "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres"}

    result = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, check=False
    )

    assert result.stdout.split() == ["301", "200", "200"], result.stderr[-2000:]


# --- Issue 34: no setting that does nothing ------------------------------------------
@pytest.mark.parametrize("name", ["CELERY_TASK_TIME_LIMIT", "CELERY_TASK_SOFT_TIME_LIMIT"])
@pytest.mark.parametrize("environment", ["production", "development"])
def test_celery_time_limits_are_refused_because_the_threads_pool_ignores_them(name, environment):
    environ = PRODUCTION_OK | {name: "960"}
    if environment == "development":
        environ |= {"AIHUMMER_ENV": "development", "DATABASE_URL": "sqlite:///:memory:"}

    result = start_django(environ)

    assert result.returncode != 0
    assert f"{name} is no longer read: Celery's time limits do nothing on the threads pool" in result.stderr
    assert "A turn is bounded by AIHUMMER_TURN_TIMEOUT_SEC" in result.stderr


def test_the_broker_visibility_timeout_outlasts_the_longest_turn():
    script = "from django.conf import settings as s; print(s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])"
    environ = PRODUCTION_OK | {"AIHUMMER_TURN_TIMEOUT_SEC": "1200"}
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION_OK} | environ
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, check=False
    )

    assert result.stdout.strip() == "2400", result.stderr
