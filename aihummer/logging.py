"""One log format for every process (web, worker, beat, commands).

Each line carries its time (UTC), level, logger, and the context it was written in:
the request id, the Celery task id, the workflow run id and the workspace, whichever
apply. Text by default; one JSON object per line with `AIHUMMER_LOG_JSON=1`.

The context lives in context variables: the request middleware, the Celery signals
(`aihummer.celery`) and a few services `bind` it; the handler's `ContextFilter` copies
it onto each record, so any `logger.info(...)` carries it without being passed.

Requests are logged once, by the request middleware (`aihummer.request`): Django's own
"Not Found"/"Bad Request" warnings for the same response are dropped (`OncePerResponse`),
and the recipe's servers run without their own access log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

CONTEXT_FIELDS = ("request_id", "task_id", "run_id", "workspace")
_CONTEXT: dict[str, ContextVar[str]] = {name: ContextVar(f"log_{name}", default="") for name in CONTEXT_FIELDS}


def bind(**fields: object) -> dict[str, Token]:
    """Add fields to the log context of this request or task; returns the tokens
    `unbind` takes to restore what was there before."""
    return {name: _CONTEXT[name].set(str(value) if value is not None else "") for name, value in fields.items()}


def unbind(tokens: dict[str, Token]) -> None:
    for name, token in tokens.items():
        _CONTEXT[name].reset(token)


@contextmanager
def log_context(**fields: object) -> Iterator[None]:
    tokens = bind(**fields)
    try:
        yield
    finally:
        unbind(tokens)


def context_value(name: str) -> str:
    return _CONTEXT[name].get()


class ContextFilter(logging.Filter):
    """Copies the log context onto each record (a field given with `extra=` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _CONTEXT.items():
            if not getattr(record, name, ""):
                setattr(record, name, var.get())
        return True


class OncePerResponse(logging.Filter):
    """On `django.request`: drop the 4xx warnings, which the request middleware's line
    already says (with the request id); keep 5xx errors, which carry the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "status_code", 500) >= 500


def _utc_time(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class TextFormatter(logging.Formatter):
    """`2026-12-01T19:50:00.123Z WARNING aihummer.request [request_id=… workspace=acme] GET … 404 3 ms`"""

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{name}={value}" for name in CONTEXT_FIELDS if (value := getattr(record, name, "")))
        line = f"{_utc_time(record)} {record.levelname} {record.name} "
        line += f"[{context}] " if context else ""
        line += record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(_JsonFormatter):
    """One JSON object per line: time, level, logger, message, the context fields that
    are set, and any `extra=` fields (method, path, status, duration_ms…)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("fmt", ["levelname", "name", "message"])
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger", "exc_info": "exception"})
        # Django attaches the request object to its records: not data for a log line.
        kwargs.setdefault("reserved_attrs", [*_RESERVED, "request", "server_time", "color_message"])
        super().__init__(*args, **kwargs)

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict: dict) -> None:
        log_data["time"] = _utc_time(record)
        super().add_fields(log_data, record, message_dict)
        for name in CONTEXT_FIELDS:
            if not log_data.get(name):
                log_data.pop(name, None)


_RESERVED = [
    "args",
    "asctime",
    "created",
    "exc_info",
    "exc_text",
    "filename",
    "funcName",
    "levelno",
    "lineno",
    "module",
    "msecs",
    "msg",
    "pathname",
    "process",
    "processName",
    "relativeCreated",
    "stack_info",
    "taskName",
    "thread",
    "threadName",
]


def logging_config(*, json: bool, level: str) -> dict:
    """The `dictConfig` of every process: settings.LOGGING, and gunicorn's own lines
    (`deploy/gunicorn.conf.py`) so the server's messages read like the app's."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": "aihummer.logging.ContextFilter"},
            # Secrets in use are redacted by value from every line (agents.redaction).
            "redact_secrets": {"()": "agents.redaction.RedactingFilter"},
            "once_per_response": {"()": "aihummer.logging.OncePerResponse"},
        },
        "formatters": {"line": {"()": f"aihummer.logging.{'JsonFormatter' if json else 'TextFormatter'}"}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "filters": ["context", "redact_secrets"],
                "formatter": "line",
            }
        },
        "loggers": {
            "django.request": {"filters": ["once_per_response"]},
            # The development server's own access lines: the request middleware's say it.
            "django.server": {"handlers": [], "propagate": False},
            # The servers' own access lines, likewise; their other messages keep our
            # handler (uvicorn's worker under gunicorn copies gunicorn.error's handlers).
            "uvicorn.access": {"handlers": [], "propagate": False},
            "gunicorn.access": {"handlers": [], "propagate": False},
            "uvicorn.error": {"handlers": ["console"], "propagate": False},
            "gunicorn.error": {"handlers": ["console"], "propagate": False},
        },
        "root": {"handlers": ["console"], "level": level},
    }
