"""AiHummer settings: environment variables only (see README, "Configuration").

`AIHUMMER_ENV=development` (the default) runs on an embedded SQLite database with
generated secrets kept in `var/dev-secrets.json`; `AIHUMMER_ENV=production` refuses to
start until every unsafe default has been replaced, and says which.
"""

import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from aihummer.env import (
    REMOVED_VARIABLES,
    Env,
    load_or_create_dev_secrets,
    parse_database_url,
    parse_group_roles,
    production_problems,
    read_dev_secrets,
    validate_vault_keys,
)
from aihummer.logging import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
env = Env()

AIHUMMER_ENV = env.choice("AIHUMMER_ENV", ["development", "production"], default="development")
IS_PRODUCTION = AIHUMMER_ENV == "production"
DEBUG = env.bool("DEBUG", default=not IS_PRODUCTION)

if IS_PRODUCTION:
    SECRET_KEY = env.str("SECRET_KEY")
    AIHUMMER_VAULT_KEYS = validate_vault_keys(env.list("AIHUMMER_VAULT_KEYS"))
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")
    _problems = production_problems(
        debug=DEBUG,
        secret_key=SECRET_KEY,
        vault_keys=AIHUMMER_VAULT_KEYS,
        allowed_hosts=ALLOWED_HOSTS,
        database_url=env.str("DATABASE_URL"),
        broker_url=env.str("CELERY_BROKER_URL"),
        dev_secrets=read_dev_secrets(BASE_DIR / "var" / "dev-secrets.json"),
    )
    if _problems:
        raise ImproperlyConfigured("Refusing to start in production: " + "; ".join(_problems) + ".")
else:
    _dev_secrets = load_or_create_dev_secrets(BASE_DIR / "var" / "dev-secrets.json")
    SECRET_KEY = env.str("SECRET_KEY") or _dev_secrets["secret_key"]
    AIHUMMER_VAULT_KEYS = validate_vault_keys(env.list("AIHUMMER_VAULT_KEYS") or [_dev_secrets["vault_key"]])
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])

CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS")
# Where people reach this server (https://aihummer.example.com): links handed to programs
# (review pages in MCP and REST answers) are absolute under it, over stdio too. Unset:
# MCP over HTTP uses the request's address; stdio and REST answer paths.
AIHUMMER_PUBLIC_URL = env.url("AIHUMMER_PUBLIC_URL")

INSTALLED_APPS = [
    "aihummer.apps.AiHummerAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "aihummer.apps.AiHummerConfig",
    "sandbox",
    "agents",
    "workflows",
]

MIDDLEWARE = [
    "aihummer.middleware.RequestIdMiddleware",
    "aihummer.middleware.ApiNotFoundMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "aihummer.sso.middleware.SessionRefresh",
    # After authentication: the desk speaks its user's language (profile, then browser).
    "aihummer.middleware.DeskLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "aihummer.urls"
WSGI_APPLICATION = "aihummer.wsgi.application"
ASGI_APPLICATION = "aihummer.asgi.application"
AUTH_USER_MODEL = "aihummer.User"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ----------------------------------------------------------------------
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", 10 if IS_PRODUCTION else 0, minimum=0, maximum=200)
DATABASES = {
    "default": parse_database_url(
        env.str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"),
        pool_max_size=DATABASE_POOL_MAX_SIZE,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Authentication ----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "admin:login"

# Single sign-on with OpenID Connect (aihummer/sso/, README "Single sign-on"): enabled
# when the client id is set. The routes under /oidc/ and the session refresh
# middleware are always installed and read these settings at each request.
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_RP_CLIENT_SECRET")
OIDC_OP_ISSUER = env.str("OIDC_OP_ISSUER")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT")  # optional: claims then come from the ID token alone
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT")
OIDC_OP_LOGOUT_ENDPOINT = env.str("OIDC_OP_LOGOUT_ENDPOINT")  # the provider's end_session_endpoint, optional
OIDC_RP_SIGN_ALGO = env.choice("OIDC_RP_SIGN_ALGO", ["RS256", "ES256", "HS256"], default="RS256")
OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", "openid email profile")
OIDC_API_AUDIENCE = env.str("OIDC_API_AUDIENCE")  # bearer access tokens on /v1/ are accepted when set
# The canonical URL of /mcp (e.g. https://aihummer.example.com/mcp): when set, /mcp takes
# the provider's access tokens issued for it (RFC 8707) and publishes its RFC 9728 metadata.
OIDC_MCP_AUDIENCE = env.str("OIDC_MCP_AUDIENCE")
# The scopes such a token must carry (its `scope` or `scp` claim), published as the
# metadata's `scopes_supported`; empty: none checked.
OIDC_MCP_SCOPES = env.list("OIDC_MCP_SCOPES", ["mcp"])
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env.int("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", 15 * 60, minimum=30)
# Clocks of the provider and of this server disagree a little: a token is still taken this
# long past its expiry (and before its issue time).
OIDC_CLOCK_LEEWAY_SECONDS = env.int("OIDC_CLOCK_LEEWAY_SECONDS", 30, minimum=0, maximum=300)
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of RP-initiated logout
OIDC_TIMEOUT = 10
# Machine surfaces are never redirected to a login page by SessionRefresh.
OIDC_EXEMPT_URLS = [
    re.compile(r"^/v1/"),
    re.compile(r"^/mcp"),
    re.compile(r"^/\.well-known/"),
    re.compile(r"^/(healthz|readyz|metrics)$"),
]
OIDC_OP_LOGOUT_URL_METHOD = "aihummer.sso.views.provider_logout_url"
LOGIN_REDIRECT_URL = "admin:index"
LOGIN_REDIRECT_URL_FAILURE = "admin:login"
AIHUMMER_OIDC_ROLES_CLAIM = env.str("AIHUMMER_OIDC_ROLES_CLAIM", "groups")
AIHUMMER_OIDC_GROUP_ROLES = parse_group_roles(env.str("AIHUMMER_OIDC_GROUP_ROLES"))
AIHUMMER_OIDC_LINK_VERIFIED_EMAIL = env.bool("AIHUMMER_OIDC_LINK_VERIFIED_EMAIL", False)
AIHUMMER_LOCAL_LOGIN = env.bool("AIHUMMER_LOCAL_LOGIN", True)
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
if OIDC_ENABLED:
    _missing = [
        name
        for name in (
            "OIDC_RP_CLIENT_SECRET",
            "OIDC_OP_ISSUER",
            "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT",
        )
        if not globals()[name]
    ]
    if (OIDC_RP_SIGN_ALGO != "HS256" or OIDC_API_AUDIENCE or OIDC_MCP_AUDIENCE) and not OIDC_OP_JWKS_ENDPOINT:
        _missing.append("OIDC_OP_JWKS_ENDPOINT")
    if _missing:
        raise ImproperlyConfigured(f"OIDC_RP_CLIENT_ID is set but {', '.join(_missing)} is not.")
elif not AIHUMMER_LOCAL_LOGIN:
    raise ImproperlyConfigured(
        "AIHUMMER_LOCAL_LOGIN=false needs single sign-on (OIDC_RP_CLIENT_ID): nobody could log in."
    )
AUTHENTICATION_BACKENDS = [
    *(["aihummer.sso.backend.OidcBackend"] if OIDC_ENABLED else []),
    *(["django.contrib.auth.backends.ModelBackend"] if AIHUMMER_LOCAL_LOGIN else []),
]

# --- Security ----------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
# Production defaults satisfy `manage.py check --deploy`; each can be turned off from
# the environment (e.g. SECURE_SSL_REDIRECT=false when the proxy already redirects).
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", IS_PRODUCTION)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", IS_PRODUCTION)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", IS_PRODUCTION)
# Load balancers probe over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31_536_000 if IS_PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", IS_PRODUCTION)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env.bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- I18n, static, mail ------------------------------------------------------------
# The REST API, MCP and the logs speak English; the desk (admin, SSO pages) speaks the
# person's language: their profile's choice, else the browser's (DeskLanguageMiddleware).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))

EMAIL_BACKEND = env.str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", "localhost")
EMAIL_PORT = env.int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", False)
# A mail server that does not answer must not hold a request (or a worker) for long.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", 10, minimum=1, maximum=300)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", "aihummer@localhost")

DEFAULT_EXCEPTION_REPORTER_FILTER = "aihummer.error_reports.AlwaysSafeExceptionReporterFilter"

# One line format for web, workers and beat (aihummer/logging.py): time, level, logger,
# request/task/run ids and workspace; JSON lines with AIHUMMER_LOG_JSON=1.
AIHUMMER_LOG_JSON = env.bool("AIHUMMER_LOG_JSON", False)
LOG_LEVEL = env.str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(f"LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not {LOG_LEVEL!r}.")
LOGGING = logging_config(json=AIHUMMER_LOG_JSON, level=LOG_LEVEL)
# Prometheus (aihummer/metrics.py): /metrics answers a scraper holding this token (404
# while unset); a worker serves its own counters on this port (0: none), on an
# internal address (that port has no token).
AIHUMMER_METRICS_TOKEN = env.str("AIHUMMER_METRICS_TOKEN")
AIHUMMER_WORKER_METRICS_PORT = env.int("AIHUMMER_WORKER_METRICS_PORT", 0, minimum=0, maximum=65535)
AIHUMMER_WORKER_METRICS_ADDR = env.str("AIHUMMER_WORKER_METRICS_ADDR", "127.0.0.1")
# OpenTelemetry traces (aihummer/telemetry.py), exported over OTLP/HTTP: on when an
# endpoint is set; the exporter reads its other OTEL_* variables itself.
AIHUMMER_TRACING = bool(env.str("OTEL_EXPORTER_OTLP_ENDPOINT") or env.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", "aihummer")

# --- Celery ------------------------------------------------------------------------
# Empty: no broker; `aihummer.tasks.enqueue` then runs tasks inline in the process.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# No Celery time limits: the threads pool the recipe runs ignores them. Work is bounded
# where it happens instead: a model call by its preset's timeout, a turn by
# AIHUMMER_TURN_TIMEOUT_SEC, a step by its timeout_seconds, a run by
# AIHUMMER_RUN_TIMEOUT_SEC; mails by EMAIL_TIMEOUT. Setting a removed variable stops
# the process rather than be silently ignored.
for _name, _why in REMOVED_VARIABLES.items():
    if env.raw(_name) is not None:
        raise ImproperlyConfigured(f"{_name} is no longer read: {_why}")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers log through LOGGING like every other process (aihummer.celery).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Product -----------------------------------------------------------------------
AIHUMMER_SUBAGENT_MAX_DEPTH = env.int("AIHUMMER_SUBAGENT_MAX_DEPTH", 2, minimum=0, maximum=4)
AIHUMMER_SUBAGENT_TIMEOUT_SEC = env.int("AIHUMMER_SUBAGENT_TIMEOUT_SEC", 600, minimum=1, maximum=48 * 3600)
# A running child's place in its execution tree lapses after this unless its process
# renews it (every third of it): a killed process's places stop counting (agents.runtime.tree).
AIHUMMER_TREE_PLACE_LEASE_SEC = env.int("AIHUMMER_TREE_PLACE_LEASE_SEC", 30, minimum=1, maximum=3600)
AIHUMMER_MODEL_CATALOG_EXTRA = env.str("AIHUMMER_MODEL_CATALOG_EXTRA")  # path to a JSON file of extra models
AIHUMMER_TURN_TIMEOUT_SEC = env.int("AIHUMMER_TURN_TIMEOUT_SEC", 900, minimum=1, maximum=48 * 3600)
# Redis re-delivers a task left unacknowledged this long (a step task is acknowledged
# after its turn, acks_late): longer than the longest turn, so a live worker's step is
# not delivered twice. A duplicate would find the step claimed and return; a dead
# worker's step is recovered through its lease long before this (workflows.execution).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 2 * AIHUMMER_TURN_TIMEOUT_SEC}
AIHUMMER_DEBUG_MAX_CHARS = env.int("AIHUMMER_DEBUG_MAX_CHARS", 20_000, minimum=1_000, maximum=1_000_000)
# Workflows: a running step's lease (renewed by its heartbeat) and a run's wall-clock limit.
AIHUMMER_STEP_LEASE_SEC = env.int("AIHUMMER_STEP_LEASE_SEC", 60, minimum=1, maximum=3600)
AIHUMMER_RUN_TIMEOUT_SEC = env.int("AIHUMMER_RUN_TIMEOUT_SEC", 6 * 3600, minimum=1, maximum=7 * 24 * 3600)
# Attempts a step gets back when the worker running it dies, beyond its own `retries`.
AIHUMMER_STEP_RECOVERIES = env.int("AIHUMMER_STEP_RECOVERIES", 2, minimum=0, maximum=10)
# First backoff before retrying a transient failure; doubled on each attempt.
AIHUMMER_STEP_RETRY_BACKOFF_SEC = env.float("AIHUMMER_STEP_RETRY_BACKOFF_SEC", 2.0, minimum=0.0, maximum=600.0)
# Approvals of tool calls (issue 30): how long a worker holds an approved call's effect
# (an SMTP or HTTP exchange, bounded by its own timeout) before the sweep may take it back.
AIHUMMER_APPROVAL_EFFECT_LEASE_SEC = env.int("AIHUMMER_APPROVAL_EFFECT_LEASE_SEC", 120, minimum=1, maximum=3600)
# How often beat looks for expired leases, stalled steps and runs past their limit.
AIHUMMER_REVIVE_INTERVAL_SEC = env.float("AIHUMMER_REVIVE_INTERVAL_SEC", 15.0, minimum=0.1, maximum=3600.0)
# Sandbox rows (issue 17) older than this many seconds are deleted by beat's sweep
# (`sandbox-sweep` in CELERY_BEAT_SCHEDULE), every AIHUMMER_SANDBOX_SWEEP_INTERVAL_SEC.
AIHUMMER_SANDBOX_TTL = env.int("AIHUMMER_SANDBOX_TTL", 24 * 3600, minimum=1, maximum=365 * 24 * 3600)
AIHUMMER_SANDBOX_SWEEP_INTERVAL_SEC = env.int(
    "AIHUMMER_SANDBOX_SWEEP_INTERVAL_SEC", 15 * 60, minimum=1, maximum=24 * 3600
)
# How often beat puts live the approved versions whose scheduled time came (issue 33):
# a scheduled go-live happens at most this late.
AIHUMMER_GO_LIVE_INTERVAL_SEC = env.float("AIHUMMER_GO_LIVE_INTERVAL_SEC", 30.0, minimum=0.5, maximum=3600.0)
# Exactly one `celery -A aihummer beat` runs this schedule.
CELERY_BEAT_SCHEDULE = {
    "prompt-versions-go-live": {
        "task": "agents.prompt_versions_go_live_due",
        "schedule": AIHUMMER_GO_LIVE_INTERVAL_SEC,
    },
    "workflow-runs-revive": {"task": "workflows.workflow_runs_revive", "schedule": AIHUMMER_REVIVE_INTERVAL_SEC},
    "sandbox-sweep": {"task": "sandbox.sandbox_sweep", "schedule": AIHUMMER_SANDBOX_SWEEP_INTERVAL_SEC},
    # A turn cannot outlive AIHUMMER_TURN_TIMEOUT_SEC: looking once a minute is plenty.
    "agent-turns-abandon": {"task": "agents.agent_turns_abandon", "schedule": 60.0},
    # Expired approval requests, and carrying out a dead worker left (issue 30).
    "approval-requests-sweep": {"task": "agents.approval_requests_sweep", "schedule": AIHUMMER_REVIVE_INTERVAL_SEC},
}
AIHUMMER_PROVIDER_MAX_RETRIES = env.int("AIHUMMER_PROVIDER_MAX_RETRIES", 2, minimum=0, maximum=10)
# Evidence: saved test cases per agent, and how many of their turns run at once per proposal.
AIHUMMER_MAX_TEST_CASES = env.int("AIHUMMER_MAX_TEST_CASES", 30, minimum=1, maximum=500)
AIHUMMER_EVIDENCE_CONCURRENCY = env.int("AIHUMMER_EVIDENCE_CONCURRENCY", 4, minimum=1, maximum=32)
# Bounds on what an agent is told (checked by agents.snapshot when a snapshot is validated).
AIHUMMER_MAX_SECTIONS = env.int("AIHUMMER_MAX_SECTIONS", 40, minimum=1, maximum=500)
AIHUMMER_MAX_SKILLS = env.int("AIHUMMER_MAX_SKILLS", 30, minimum=0, maximum=500)
AIHUMMER_MAX_TEXT_CHARS = env.int("AIHUMMER_MAX_TEXT_CHARS", 20_000, minimum=100, maximum=1_000_000)
AIHUMMER_MAX_SNAPSHOT_CHARS = env.int("AIHUMMER_MAX_SNAPSHOT_CHARS", 200_000, minimum=1_000, maximum=10_000_000)

# Demo data after the tenancy (`seed_demo`): each app's seeders, in dependency order
# (agents, then workflows), each called with the aihummer.demo.DemoContext.
AIHUMMER_DEMO_SEEDERS = [
    "agents.demo.seed_agents",
    "agents.demo.seed_test_cases",
    "agents.demo.seed_proposals",
    "workflows.demo.seed_workflows",
]

# Historical records are shown, never reverted: a revert would bypass the services.
SIMPLE_HISTORY_REVERT_DISABLED = True

# --- REST API ----------------------------------------------------------------------
# Requests per minute, per API key and per person (0: unlimited); counted in the cache,
# so several web processes share the count only with CACHE_URL set.
AIHUMMER_API_RATE_PER_KEY = env.int("AIHUMMER_API_RATE_PER_KEY", 600, minimum=0)
AIHUMMER_API_RATE_PER_USER = env.int("AIHUMMER_API_RATE_PER_USER", 1200, minimum=0)
AIHUMMER_API_MAX_BODY_BYTES = env.int("AIHUMMER_API_MAX_BODY_BYTES", 1_048_576, minimum=1024)
CACHE_URL = env.str("CACHE_URL")
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "aihummer.auth.ApiKeyAuthentication",
        "aihummer.auth.OidcBearerAuthentication",
        "aihummer.auth.SessionActorAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["aihummer.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "aihummer.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "aihummer.api.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AiHummer API",
    "DESCRIPTION": (
        "Manage agents, their prompts and the approval queue. Errors always answer "
        '`{"error": {"code", "message", "fields"}}`: a 400 (`invalid`) when the request breaks this schema, '
        "a 422 (`refused`) when the schema allows it but a rule refuses it. Strings are text without NUL "
        "characters or lone surrogates; a body names only the fields its schema lists. Changes to what an agent "
        "is told answer 202 with the pending version unless applied directly (`mode: live`, publish right)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "VersionStatusEnum": "agents.models.PromptVersion.Status",
        "TurnStatusEnum": "agents.models.AgentTurn.Status",
        "RunStatusEnum": "workflows.models.RunStatus",
        "StepStatusEnum": "workflows.models.StepStatus",
    },
}
