"""Small, strict readers of environment variables for `aihummer.settings`.

Every reader raises `ImproperlyConfigured` naming the variable and the rule it broke,
and accepts `NAME_FILE` (a path whose contents are the value) so secrets can come from
mounted files instead of the process environment.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

MIN_SECRET_KEY_LENGTH = 50
MIN_SECRET_KEY_DISTINCT = 20
# Membership roles, as aihummer.models.Membership.Role spells them (settings are read
# before models can be imported; a test keeps the two lists equal).
MEMBERSHIP_ROLES = ("viewer", "editor", "reviewer", "admin")
_WORKSPACE_SLUG = re.compile(r"^[a-z0-9_-]+$")
# Variables this version no longer reads, and why: set, they stop the process (an
# operator relying on one would otherwise be silently unprotected).
_TIME_LIMITS_IGNORED = (
    "Celery's time limits do nothing on the threads pool workers run. A turn is bounded by "
    "AIHUMMER_TURN_TIMEOUT_SEC, a step by its timeout_seconds, a run by AIHUMMER_RUN_TIMEOUT_SEC; unset it."
)
REMOVED_VARIABLES = dict.fromkeys(("CELERY_TASK_TIME_LIMIT", "CELERY_TASK_SOFT_TIME_LIMIT"), _TIME_LIMITS_IGNORED)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_N = TypeVar("_N", int, float)


def _shown(number: float) -> str:
    """A bound as an operator wrote it: 31536000, not 3.1536e+07; 0.5, not 0.500000."""
    return format(number, "g") if isinstance(number, float) else str(number)


class Env:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ

    def raw(self, name: str) -> str | None:
        """The value of `name`, or the contents of the file `name_FILE` names."""
        file_name = self.environ.get(f"{name}_FILE")
        if name in self.environ and file_name:
            raise ImproperlyConfigured(f"Set either {name} or {name}_FILE, not both.")
        if file_name:
            try:
                return Path(file_name).read_text().strip()
            except OSError as exc:
                raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name!r} ({exc.strerror}).") from exc
        return self.environ.get(name)

    def str(self, name: str, default: str = "") -> str:
        value = self.raw(name)
        return default if value is None else value.strip()

    def bool(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ImproperlyConfigured(f"{name} must be one of true/false/1/0/yes/no/on/off, not {value!r}.")

    def int(self, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
        return self._number(name, default, int, "an integer", minimum, maximum)

    def float(self, name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
        return self._number(name, default, float, "a number", minimum, maximum)

    def _number(
        self, name: str, default: _N, parse: Callable[[str], _N], kind: str, minimum: _N | None, maximum: _N | None
    ) -> _N:
        """`name` read with `parse` (int or float) and held to its bounds."""
        value = self.raw(name)
        if value is None or not value.strip():
            return default
        try:
            number = parse(value.strip())
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name} must be {kind}, not {value!r}.") from exc
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name} must be at least {_shown(minimum)}, not {_shown(number)}.")
        if maximum is not None and number > maximum:
            raise ImproperlyConfigured(f"{name} must be at most {_shown(maximum)}, not {_shown(number)}.")
        return number

    def list(self, name: str, default: list[str] | None = None) -> list[str]:
        value = self.raw(name)
        if value is None:
            return list(default or [])
        return [item.strip() for item in value.split(",") if item.strip()]

    def url(self, name: str) -> str:
        """An absolute http(s) base URL (`https://aihummer.example.com`, or under a path
        prefix), without a trailing slash; empty when unset."""
        value = self.str(name)
        if not value:
            return ""
        try:
            parts = urlsplit(value)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name} must be an http(s) URL, not {value!r} ({exc}).") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ImproperlyConfigured(f"{name} must be an absolute http(s) URL with a host, not {value!r}.")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ImproperlyConfigured(f"{name} must be a base URL: no query, fragment or user, not {value!r}.")
        return value.rstrip("/")

    def choice(self, name: str, choices: list[str], default: str) -> str:
        value = self.str(name, default)
        if value not in choices:
            raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
        return value


def parse_database_url(url: str, *, pool_max_size: int = 0) -> dict:
    """A Django DATABASES entry from `postgres://`, `postgresql://` or `sqlite:///` URLs."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        if not parts.path or parts.path == "/":
            raise ImproperlyConfigured("DATABASE_URL: a sqlite URL needs a path, e.g. sqlite:///var/db.sqlite3.")
        # sqlite:///relative/path and sqlite:////absolute/path, as dj-database-url reads them.
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": unquote(parts.path[1:])}
    if parts.scheme in {"postgres", "postgresql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL: a postgres URL needs a database name.")
        options: dict = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if pool_max_size:
            # Django's psycopg pool: connections are borrowed per request or task and
            # returned, so a worker never holds one across a slow provider call.
            options["pool"] = {"min_size": 1, "max_size": pool_max_size, "timeout": 10}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": 0,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL: unsupported scheme {parts.scheme!r}; use postgres://, postgresql:// or sqlite:///."
    )


def validate_vault_keys(keys: list[str]) -> list[str]:
    """Each key must be a Fernet key (32 url-safe base64 bytes); the first encrypts.

    Checked as `Fernet(key)` checks it (every process reads the settings; few load
    `cryptography`, which costs 11 ms to import)."""
    for index, key in enumerate(keys, start=1):
        try:
            decoded = base64.urlsafe_b64decode(key)
        except ValueError as exc:  # binascii.Error is one
            raise ImproperlyConfigured(_not_a_fernet_key(index)) from exc
        if len(decoded) != 32:
            raise ImproperlyConfigured(_not_a_fernet_key(index))
    return keys


def _not_a_fernet_key(index: int) -> str:
    return f"AIHUMMER_VAULT_KEYS: key #{index} is not a Fernet key (32 url-safe base64-encoded bytes)."


def production_problems(
    *,
    debug: bool,
    secret_key: str,
    vault_keys: list[str],
    allowed_hosts: list[str],
    database_url: str | None = None,
    broker_url: str | None = None,
    dev_secrets: Mapping[str, str] | None = None,
) -> list[str]:
    """Why a production process must refuse to start; empty when it may.

    `dev_secrets` are the development secrets found on this machine (if any): a
    production process reusing them would sign sessions and encrypt credentials with
    keys that sit in a plain file.
    """
    problems = []
    dev_secrets = dev_secrets or {}
    if debug:
        problems.append("DEBUG is on")
    problems.extend(_secret_key_problems(secret_key, dev_secrets.get("secret_key")))
    if not vault_keys:
        problems.append("AIHUMMER_VAULT_KEYS is empty")
    for index, key in enumerate(vault_keys, start=1):
        if dev_secrets.get("vault_key") and key == dev_secrets["vault_key"]:
            problems.append(f"AIHUMMER_VAULT_KEYS key #{index} is the development vault key (var/dev-secrets.json)")
    if not allowed_hosts:
        problems.append("ALLOWED_HOSTS is empty")
    elif any("*" in host for host in allowed_hosts):
        problems.append("ALLOWED_HOSTS contains a wildcard")
    if database_url is not None:
        if not database_url:
            problems.append("DATABASE_URL is not set (production runs on PostgreSQL, never the embedded SQLite)")
        elif urlsplit(database_url).scheme == "sqlite":
            problems.append("DATABASE_URL points to SQLite (production runs on PostgreSQL)")
    if broker_url is not None and not broker_url:
        problems.append(
            "CELERY_BROKER_URL is not set (without a broker, workflow runs and evidence would run inside web "
            "requests, with no heartbeat and no recovery)"
        )
    return problems


def _secret_key_problems(secret_key: str, dev_secret_key: str | None) -> list[str]:
    if not secret_key:
        return ["SECRET_KEY is not set"]
    if secret_key.startswith("django-insecure") or secret_key in {"changeme", "secret", "dev"}:
        return ["SECRET_KEY is a default value"]
    if dev_secret_key and secret_key == dev_secret_key:
        return ["SECRET_KEY is the development secret (var/dev-secrets.json)"]
    problems = []
    if len(secret_key) < MIN_SECRET_KEY_LENGTH:
        problems.append(f"SECRET_KEY is shorter than {MIN_SECRET_KEY_LENGTH} characters")
    # Length alone is no strength: 'changeme' * 8 is 64 characters of 7 kinds.
    distinct = len(set(secret_key))
    if distinct < MIN_SECRET_KEY_DISTINCT:
        problems.append(
            f"SECRET_KEY has only {distinct} distinct characters (at least {MIN_SECRET_KEY_DISTINCT}: "
            "generate one, e.g. python -c 'import secrets; print(secrets.token_urlsafe(64))')"
        )
    return problems


def read_dev_secrets(path: Path) -> dict[str, str]:
    """The development secrets file's contents, or {} when there is none (or it is unreadable)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def load_or_create_dev_secrets(path: Path) -> dict[str, str]:
    """Development only: a generated secret key and vault key kept across restarts.

    The file is git-ignored; losing it only loses the ability to decrypt credentials
    stored in the development database.
    """
    data: dict[str, str] = {}
    if path.exists():
        data = json.loads(path.read_text())
    missing = {
        "secret_key": lambda: secrets.token_urlsafe(64),
        # What `Fernet.generate_key()` returns, without importing cryptography at start.
        "vault_key": lambda: base64.urlsafe_b64encode(os.urandom(32)).decode(),
    }
    if any(key not in data for key in missing):
        for key, make in missing.items():
            data.setdefault(key, make())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
        path.chmod(0o600)
    return data


def parse_workspace_role(text: str) -> tuple[str, str] | None:
    """`"acme:reviewer"` → `("acme", "reviewer")`; None when either part is not valid."""
    workspace, sep, role = text.partition(":")
    if not sep or role not in MEMBERSHIP_ROLES or not _WORKSPACE_SLUG.match(workspace):
        return None
    return workspace, role


def parse_group_roles(text: str, *, variable: str = "AIHUMMER_OIDC_GROUP_ROLES") -> dict[str, list[tuple[str, str]]]:
    """The mapping `{"<group>": "<workspace>:<role>" | ["<workspace>:<role>", ...]}`."""
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{variable} must be a JSON object: {exc}.") from exc
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f'{variable} must be a JSON object like {{"<group>": "<workspace>:<role>"}}.')
    mapping: dict[str, list[tuple[str, str]]] = {}
    for group, targets in raw.items():
        targets = [targets] if isinstance(targets, str) else targets
        if not isinstance(targets, list) or not targets:
            raise ImproperlyConfigured(
                f"{variable}: group {group!r} must map to '<workspace>:<role>' or a list of them."
            )
        parsed = [parse_workspace_role(target) if isinstance(target, str) else None for target in targets]
        for target, result in zip(targets, parsed, strict=True):
            if result is None:
                raise ImproperlyConfigured(
                    f"{variable}: group {group!r} maps to {target!r}; use '<workspace>:<role>' with a role among "
                    f"{', '.join(MEMBERSHIP_ROLES)}."
                )
        mapping[group] = parsed
    return mapping
