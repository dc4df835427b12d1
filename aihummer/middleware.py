"""Request ids: every response carries `X-Request-Id`, the client's or a new one."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-Id"
# A client's id is kept only when it is short and plain, so it is safe in logs and headers.
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")

current_request_id: ContextVar[str] = ContextVar("current_request_id", default="")


class RequestIdMiddleware:
    """Sets `request.request_id` (and `current_request_id` for code without the
    request), and echoes it on the response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request.request_id = given if _CLIENT_ID.match(given) else uuid.uuid4().hex
        token = current_request_id.set(request.request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response[REQUEST_ID_HEADER] = request.request_id
        return response
