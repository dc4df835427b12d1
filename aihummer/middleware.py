"""Around every request: its id (`X-Request-Id`, the client's or a new one), its log
context, its one log line (`aihummer.request`), its metrics and its trace span; the
API's 404 envelope for a `/v1/` path no route matches; and the desk's language."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.cache import patch_vary_headers

from aihummer import logging as logs
from aihummer import metrics, telemetry
from aihummer.api import not_found

REQUEST_ID_HEADER = "X-Request-Id"
# A client's id is kept only when it is short and plain, so it is safe in logs and headers.
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
# A path is the client's text: no control character may start a forged line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_LOGGED_PATH = 300
# Probes answer many times a minute: their lines only at DEBUG.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# The pages people read: the admin (the desk) and the SSO views that answer them.
DESK_PREFIXES = ("/admin/", "/oidc/")

request_logger = logging.getLogger("aihummer.request")


def route_of(request: HttpRequest) -> str:
    """The URL pattern's name (`v1:agent-detail`), bounded like the routes themselves;
    `unmatched` when no pattern took the request."""
    match = getattr(request, "resolver_match", None)
    return match.view_name if match is not None and match.view_name else "unmatched"


class RequestIdMiddleware:
    """Sets `request.request_id` and the log context, echoes the id on the response,
    and writes the request's one line: method, path, route, status and duration."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request.request_id = given if _CLIENT_ID.match(given) else uuid.uuid4().hex
        # A fresh context: nothing bound by an earlier request on this thread leaks in.
        tokens = logs.bind(request_id=request.request_id, task_id="", run_id="", workspace="")
        started = time.perf_counter()
        try:
            with telemetry.request_span(request) as span:
                response = self.get_response(request)
                route = route_of(request)
                span.done(route, response.status_code)
            response[REQUEST_ID_HEADER] = request.request_id
            seconds = time.perf_counter() - started
            _log_request(request, response.status_code, seconds * 1000)
            metrics.observe_request(request.method, route, response.status_code, seconds)
            return response
        finally:
            logs.unbind(tokens)


def _log_request(request: HttpRequest, status: int, duration_ms: float) -> None:
    path = _CONTROL.sub(lambda match: f"\\x{ord(match[0]):02x}", request.path[:MAX_LOGGED_PATH])
    if status >= 500:
        level = logging.ERROR
    elif status >= 400:
        level = logging.WARNING
    elif request.path in PROBE_PATHS:
        level = logging.DEBUG
    else:
        level = logging.INFO
    request_logger.log(
        level,
        "%s %s %d %.1f ms",
        request.method,
        path,
        status,
        duration_ms,
        extra={
            "method": request.method,
            "path": path,
            "route": route_of(request),
            "status": status,
            "duration_ms": round(duration_ms, 1),
        },
    )


class ApiNotFoundMiddleware:
    """Under `/v1/`, a 404 no API view answered (no such route) is the API's error
    envelope too: `handler404` gives it with DEBUG off, but with DEBUG on (the embedded
    default) Django answers its HTML debug page before any handler is asked."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith("/v1/")
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return not_found(request)
        return response


class DeskLanguageMiddleware:
    """The desk speaks its person's language: their profile's `language`, else their
    browser's (Accept-Language), else LANGUAGE_CODE. Everything else (REST API, MCP,
    probes) stays in LANGUAGE_CODE: its messages are read by programs and models, and
    a client's Accept-Language must not change an error text a script matches on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(DESK_PREFIXES):
            with translation.override(settings.LANGUAGE_CODE):
                return self.get_response(request)
        language = desk_language(request)
        with translation.override(language):
            request.LANGUAGE_CODE = language
            response = self.get_response(request)
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        response.headers.setdefault("Content-Language", language)
        return response


def desk_language(request: HttpRequest) -> str:
    # request.user is the admin's own lazy user: reading it here costs the page no query
    # (the admin loads it anyway), and none for a page without a session.
    user = request.user
    chosen = getattr(user, "language", "") if user.is_authenticated else ""
    return chosen or translation.get_language_from_request(request)
