"""The v1 REST API's foundation: the error envelope, the base view (workspace, actor,
body limit, idempotency keys, audit), cursor pagination, throttles, and the root
endpoints (who am I).

Every error, whatever raised it, answers `{"error": {"code", "message", "fields"}}`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, JsonResponse
from django.utils import timezone
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView, set_rollback
from rest_framework.viewsets import GenericViewSet

from aihummer import logging as logs
from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.jsonsafe import UNSTORABLE
from aihummer.models import ApiAuditEntry, IdempotencyKey, Workspace

WORKSPACE_HEADER = "X-Workspace"
IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_TTL = timedelta(hours=24)
_PATH_MESSAGE = re.compile(r"^\$(\S*): (.*)$", re.DOTALL)
_IF_MATCH = re.compile(r'^\s*(?:W/)?"?([0-9]{1,9})"?\s*$')
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_WORKSPACE_SLUG = re.compile(r"^[a-z0-9_-]{1,50}$")


# --- the error envelope ---------------------------------------------------------------
class PayloadTooLarge(drf_exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


class IdempotentReplay(Exception):
    """Raised instead of running a view: this POST was already answered."""

    def __init__(self, record: IdempotencyKey) -> None:
        self.record = record


def error_response(status_code: int, code: str, message: str, fields: dict | None = None, **extra: object) -> Response:
    return Response({"error": {"code": code, "message": message, "fields": fields or {}, **extra}}, status=status_code)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """The one mapping from what services and DRF raise to the error envelope."""
    set_rollback()
    if isinstance(exc, DjangoValidationError):
        # A service's rule refused a request the schema accepts: 422, not the schema's 400.
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return _invalid(detail, status.HTTP_422_UNPROCESSABLE_ENTITY, "refused")
    if isinstance(exc, drf_exceptions.ValidationError):
        return _invalid(exc.detail)
    if isinstance(exc, ApplicationError):
        return error_response(exc.status_code, _code_of(exc), exc.message, **exc.extra)
    if isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    if not isinstance(exc, drf_exceptions.APIException):
        return None  # a bug: let Django log it as one
    response = error_response(exc.status_code, _drf_code(exc), _text(exc.detail))
    if getattr(exc, "auth_header", None):
        response["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        response["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    return response


def _invalid(detail: object, status_code: int = status.HTTP_400_BAD_REQUEST, code: str = "invalid") -> Response:
    fields = flatten_errors(detail)
    first_path, first_messages = next(iter(fields.items()), ("", ["Invalid input."]))
    message = first_messages[0] if first_path == "non_field_errors" else f"{first_path}: {first_messages[0]}"
    more = sum(len(messages) for messages in fields.values()) - 1
    if more > 0:
        message += f" (and {more} more)"
    return error_response(status_code, code, message, fields)


def flatten_errors(detail: object, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer or service errors as `{json path: [messages]}`: `sections[2].key`.

    A service message led by its own path (`$.children.max_depth: must be…`) is filed
    under that path, so a nested field reads the same from a serializer or a service.
    """
    errors: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            # A ListField's errors come keyed by index: `tags[2]`, not `tags.2`.
            path = f"{prefix}[{key}]" if isinstance(key, int) else (f"{prefix}.{key}" if prefix else key)
            for sub, messages in flatten_errors(value, path).items():
                errors.setdefault(sub, []).extend(messages)
    elif isinstance(detail, list) and any(isinstance(item, dict | list) for item in detail):
        for index, item in enumerate(detail):
            for sub, messages in flatten_errors(item, f"{prefix}[{index}]").items():
                errors.setdefault(sub, []).extend(messages)
    else:
        for message in detail if isinstance(detail, list) else [detail]:
            path, text = _split_path(prefix or "non_field_errors", str(message))
            errors.setdefault(path, []).append(text)
    return errors


def _split_path(field: str, message: str) -> tuple[str, str]:
    match = _PATH_MESSAGE.match(message)
    if match is None:
        return field, message
    return match[1].lstrip(".") or field, match[2]


def _code_of(exc: ApplicationError) -> str:
    if type(exc) is ApplicationError:
        return "conflict"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


def _drf_code(exc: drf_exceptions.APIException) -> str:
    codes = exc.get_codes()
    return codes if isinstance(codes, str) else exc.default_code


def _text(detail: object) -> str:
    if isinstance(detail, list):
        return " ".join(map(str, detail))
    if isinstance(detail, dict):
        return " ".join(_text(value) for value in detail.values())
    return str(detail)


class InputSerializer(serializers.Serializer):
    """A request body. A field it does not know is refused, not ignored: a misspelt
    field would otherwise pass as a change that did nothing. `any_of_required` names
    fields of which a body must give at least one (a PATCH that changes nothing),
    `one_of_required` fields of which it must give exactly one; the schema says all
    three (`additionalProperties: false`, `anyOf` / `oneOf` of `required`)."""

    refuses_unknown_fields = True
    any_of_required: tuple[str, ...] = ()
    one_of_required: tuple[str, ...] = ()

    def to_internal_value(self, data: object) -> dict:
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields or self.fields[name].read_only]
            if unknown:
                known = ", ".join(name for name, field in self.fields.items() if not field.read_only)
                raise serializers.ValidationError(
                    {name: [f"Unknown field; the fields are: {known}."] for name in unknown}
                )
            self._require_given(data)
        return super().to_internal_value(data)

    def _require_given(self, data: Mapping) -> None:
        if self.any_of_required and not any(name in data for name in self.any_of_required):
            message = f"Name at least one of: {', '.join(self.any_of_required)}."
            raise serializers.ValidationError({"non_field_errors": [message]})
        if self.one_of_required and sum(name in data for name in self.one_of_required) != 1:
            message = f"Give exactly one of: {', '.join(self.one_of_required)}."
            raise serializers.ValidationError({"non_field_errors": [message]})


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(serializers.JSONField):
    """A free-form JSON object (checked by the service it is given to)."""

    def to_internal_value(self, data: object) -> dict:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return data


class ErrorSerializer(serializers.Serializer):
    """The envelope of every error answer (documented on every operation)."""

    class Body(serializers.Serializer):
        code = serializers.CharField(help_text="Stable, machine-readable: invalid, not_found, stale_proposal…")
        message = serializers.CharField(help_text="What went wrong and what to do next, for a person.")
        fields = serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            help_text="Per JSON path of the request (e.g. `sections[2].key`), its problems; empty otherwise.",
        )

    error = Body()


# --- request helpers ------------------------------------------------------------------
def if_match_version(request: Request) -> int | None:
    """The live version number the caller's change is based on (`If-Match: "3"`), or None."""
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    match = _IF_MATCH.match(raw)  # sent empty, it is malformed: the schema's pattern says so
    if match is None:
        raise drf_exceptions.ValidationError(
            {"If-Match": ['Give the live version number the change is based on, e.g. If-Match: "3".']}
        )
    return int(match[1])


def workspace_header(request: Request) -> str:
    """The `X-Workspace` slug, "" when not sent. Sent, it must be a slug on every route
    and for keys too, as the schema says: an empty or malformed header is a mistake
    worth naming, not a header to ignore."""
    slug = request.headers.get(WORKSPACE_HEADER)
    if slug is None:
        return ""
    if not _WORKSPACE_SLUG.match(slug.strip()):
        raise drf_exceptions.ValidationError(
            {WORKSPACE_HEADER: ["Give a workspace slug: 1 to 50 characters among a-z, 0-9, _ and -."]}
        )
    return slug.strip()


def request_workspace(request: Request) -> Workspace:
    """The workspace a request works in: an API key's own, or for a person the one named
    by `X-Workspace` (optional when they belong to exactly one)."""
    actor: Actor = request.auth
    slug = workspace_header(request)
    if actor.kind == Actor.API_KEY:
        workspace = actor.api_key.workspace
        if slug and slug != workspace.slug:
            raise NotFound(f"Unknown workspace '{slug}'.")
        return workspace
    if slug:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None or not actor.belongs_to(workspace):
            raise NotFound(f"Unknown workspace '{slug}'.")
        return workspace
    workspace_ids = actor.workspace_ids(Verb.READ)
    if workspace_ids is None or len(workspace_ids) != 1:
        raise drf_exceptions.ValidationError(
            {WORKSPACE_HEADER: ["Name the workspace in the X-Workspace header (you may use several)."]}
        )
    return Workspace.objects.get(pk=workspace_ids[0])


def _actor_owner(actor: Actor) -> str:
    if actor.kind == Actor.API_KEY:
        return f"api_key:{actor.api_key.pk}"
    return f"user:{actor.user.pk}"


# --- pagination -----------------------------------------------------------------------
class ApiCursorPagination(CursorPagination):
    """Cursor pages: a page's rows never shift while rows are added elsewhere.

    `?ordering=` takes one of the view's `ordering_fields` (with `-` for descending).
    """

    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200
    ordering = "pk"

    def get_page_size(self, request: Request) -> int:
        # DRF falls back to the default on a bad `limit`; the schema promises 1 to 200.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        # At most 3 digits before int(): Python refuses to convert 4 301 digits (a 500).
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and 1 <= int(raw) <= self.max_page_size):
            raise drf_exceptions.ValidationError({"limit": [f"Give a whole number from 1 to {self.max_page_size}."]})
        return int(raw)

    def get_ordering(self, request: Request, queryset: object, view: object) -> tuple[str, ...]:
        self._model = queryset.model  # what a cursor's position is checked against
        allowed = getattr(view, "ordering_fields", ())
        requested = request.query_params.get("ordering")
        if requested is None:
            ordering = getattr(view, "ordering", self.ordering)
            return (ordering,) if isinstance(ordering, str) else tuple(ordering)
        if requested.lstrip("-") not in allowed:
            choices = ", ".join(allowed) or "none"
            raise drf_exceptions.ValidationError({"ordering": [f"Order by one of: {choices} (prefix - to reverse)."]})
        return (requested,)

    def decode_cursor(self, request: Request) -> object:
        try:
            cursor = super().decode_cursor(request)
        except drf_exceptions.NotFound:
            raise self._invalid_cursor() from None
        if cursor is not None and cursor.position is not None and not self._valid_position(cursor.position):
            # A forged position ('abc' for an id, a bad date, NUL) would reach the
            # query and fail there: a 500 instead of this 400.
            raise self._invalid_cursor()
        return cursor

    def _valid_position(self, position: str) -> bool:
        name = self.ordering[0].lstrip("-")
        field = self._model._meta.pk if name == "pk" else self._model._meta.get_field(name)
        if UNSTORABLE.search(position):
            return False
        try:
            field.run_validators(field.to_python(position))
        except (DjangoValidationError, ValueError, TypeError, OverflowError):
            return False
        return True

    @staticmethod
    def _invalid_cursor() -> DjangoValidationError:
        # The schema cannot tell our cursors from any other string: a 422, like a service's refusal.
        return DjangoValidationError({"cursor": ["Invalid cursor: follow the next or previous link of a page."]})

    def get_schema_operation_parameters(self, view: object) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] |= {"minimum": 1, "maximum": self.max_page_size, "default": self.page_size}
        allowed = getattr(view, "ordering_fields", ())
        if allowed:
            choices = [choice for field in allowed for choice in (field, f"-{field}")]
            parameters.append(
                {
                    "name": "ordering",
                    "required": False,
                    "in": "query",
                    "description": "Sort order; `-` reverses.",
                    "schema": {"type": "string", "enum": choices},
                }
            )
        return parameters


# --- throttles ------------------------------------------------------------------------
class _PerMinuteThrottle(SimpleRateThrottle):
    setting = ""

    def get_rate(self) -> str | None:
        # Read on each request (not at import), so settings overrides apply; 0 disables.
        per_minute = getattr(settings, self.setting)
        return f"{per_minute}/min" if per_minute else None


class ApiKeyRateThrottle(_PerMinuteThrottle):
    """Requests per minute of one API key."""

    scope = "api_key"
    setting = "AIHUMMER_API_RATE_PER_KEY"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        actor = request.auth
        if not isinstance(actor, Actor) or actor.kind != Actor.API_KEY:
            return None
        return self.cache_format % {"scope": self.scope, "ident": actor.api_key.pk}


class PersonRateThrottle(_PerMinuteThrottle):
    """Requests per minute of one person, through a session or any key they own."""

    scope = "person"
    setting = "AIHUMMER_API_RATE_PER_USER"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        actor = request.auth
        person = actor.person if isinstance(actor, Actor) else None
        if person is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": person.pk}


# --- the base views -------------------------------------------------------------------
class ApiMixin:
    """What every v1 endpoint does around its handler: the body limit, the actor and
    its workspace, idempotent POSTs, and an audit entry for every write."""

    throttle_classes = (ApiKeyRateThrottle, PersonRateThrottle)
    # No OPTIONS introspection: the OpenAPI document describes every endpoint.
    metadata_class = None
    _idempotency: IdempotencyKey | None = None
    _workspace: Workspace | None = None

    @property
    def actor(self) -> Actor:
        return self.request.auth

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            self._workspace = request_workspace(self.request)
            logs.bind(workspace=self._workspace.slug)  # the request middleware resets it
        return self._workspace

    def initial(self, request: Request, *args: object, **kwargs: object) -> None:
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isascii() and length.isdigit() and int(length) > settings.AIHUMMER_API_MAX_BODY_BYTES:
            raise PayloadTooLarge(f"The request body is over {settings.AIHUMMER_API_MAX_BODY_BYTES} bytes.")
        if request.method == "POST" and IDEMPOTENCY_HEADER in request.headers:
            # Read the raw body now, before a session's CSRF check parses it: Django
            # keeps it then, and the request hash needs it after.
            request._request.body  # noqa: B018
        super().initial(request, *args, **kwargs)
        workspace_header(request)  # checked on routes that need no workspace too (/v1/me)
        if request.method == "POST" and IDEMPOTENCY_HEADER in request.headers:
            self._idempotency = self._idempotency_claim(request, request.headers[IDEMPOTENCY_HEADER])
        if request.method not in SAFE_METHODS:
            self._handle_in_one_transaction(request.method.lower())

    def _handle_in_one_transaction(self, method: str) -> None:
        # A write and every check after it are one transaction: a refusal raised once
        # the service has written (a re-read the caller may not make, a later step)
        # leaves nothing behind. DRF looks the handler up after `initial`, so it gets
        # the wrapped one. Handlers that wait on a model call opt out
        # (`outside_transaction`): no transaction is ever held across a provider call.
        handler = getattr(self, method, None)
        if handler is not None and not getattr(handler, "outside_transaction", False):
            setattr(self, method, transaction.atomic(handler))

    def _idempotency_claim(self, request: Request, key: str) -> IdempotencyKey:
        if not _IDEMPOTENCY_KEY.match(key):
            raise drf_exceptions.ValidationError(
                {IDEMPOTENCY_HEADER: ["Use 1 to 255 printable ASCII characters, no spaces."]}
            )
        owner = _actor_owner(self.actor)
        # The workspace is part of the request: one person's same body sent for another
        # workspace is another request, never a replay of the first one's answer.
        parts = [request.method, request.path, str(self.workspace.pk)]
        digest = hashlib.sha256(b"\n".join([*(part.encode() for part in parts), request.body])).hexdigest()
        IdempotencyKey.objects.filter(owner=owner, key=key, created_at__lt=timezone.now() - IDEMPOTENCY_TTL).delete()
        try:
            # Its own transaction, committed now: a concurrent retry with the same key
            # sees the claim and waits for the answer instead of applying it twice.
            with transaction.atomic():
                return IdempotencyKey.objects.create(owner=owner, key=key, request_hash=digest)
        except IntegrityError:
            existing = IdempotencyKey.objects.filter(owner=owner, key=key).first()
        if existing is None or existing.status_code is None:
            raise IdempotencyKeyInProgress(
                f"A request with Idempotency-Key '{key}' is still running; retry in a moment."
            ) from None
        if existing.request_hash != digest:
            raise IdempotencyKeyReused(
                f"Idempotency-Key '{key}' was used for a different request; use a new key for a new request."
            )
        raise IdempotentReplay(existing)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, IdempotentReplay):
            record = exc.record
            response = Response(record.response_body, status=record.status_code)
            if record.location:
                response["Location"] = record.location
            response["Idempotent-Replayed"] = "true"
            return response
        return super().handle_exception(exc)

    def raise_uncaught_exception(self, exc: Exception) -> None:
        self._idempotency_release()
        super().raise_uncaught_exception(exc)

    def _idempotency_release(self) -> None:
        if self._idempotency is not None:
            self._idempotency.delete()
            self._idempotency = None

    def finalize_response(self, request: Request, response: Response, *args: object, **kwargs: object) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if self._idempotency is not None:
            if 200 <= response.status_code < 300:
                # Only successes are kept: a refused request changed nothing, so a
                # corrected retry with the same key runs anew.
                self._idempotency.status_code = response.status_code
                self._idempotency.response_body = response.data
                self._idempotency.location = response.get("Location", "")
                self._idempotency.save(update_fields=["status_code", "response_body", "location"])
            else:
                self._idempotency_release()
        actor = getattr(request, "_auth", None)
        if request.method not in SAFE_METHODS and isinstance(actor, Actor):
            ApiAuditEntry.objects.create(
                request_id=getattr(request._request, "request_id", ""),
                workspace=self._workspace,
                actor_source=actor.source,
                person=actor.person,
                method=request.method,
                path=request.get_full_path()[:500],
                status_code=response.status_code,
            )
        return response


def outside_transaction(handler: Callable) -> Callable:
    """Mark a write handler that must not run inside one transaction (it calls a
    model: its turn writes as it goes, and no lock may wait on a provider)."""
    handler.outside_transaction = True
    return handler


class IdempotencyKeyInProgress(ApplicationError):
    """Another request with the same key has not finished."""


class IdempotencyKeyReused(ApplicationError):
    """The key was used before for another request."""

    status_code = 422


class AdminViewSet(ApiMixin, GenericViewSet):
    """Base of the `/v1/admin/...` resources."""

    pagination_class = ApiCursorPagination


# --- root endpoints -------------------------------------------------------------------
class MeApi(ApiMixin, APIView):
    """Who is calling: an API key (its workspace, name and scopes) or a person, through
    a session or the identity provider's token (their workspaces and roles)."""

    class KeyOutputSerializer(serializers.Serializer):
        source = serializers.CharField()
        workspace = serializers.CharField()
        key = serializers.CharField()
        scopes = serializers.ListField(child=serializers.CharField())
        owner = serializers.CharField(allow_null=True)

    class PersonOutputSerializer(serializers.Serializer):
        class MembershipSerializer(serializers.Serializer):
            workspace = serializers.CharField(source="workspace.slug")
            role = serializers.CharField()

        source = serializers.CharField()
        username = serializers.CharField()
        email = serializers.CharField(allow_blank=True)
        memberships = MembershipSerializer(many=True)

    @extend_schema(
        responses=PolymorphicProxySerializer(
            component_name="Me",
            serializers=[KeyOutputSerializer, PersonOutputSerializer],
            resource_type_field_name=None,
        )
    )
    def get(self, request: Request) -> Response:
        actor = self.actor
        if actor.kind == Actor.USER:
            user = actor.user
            data = {
                "source": actor.source,
                "username": user.get_username(),
                "email": user.email,
                "memberships": user.memberships.select_related("workspace").order_by("workspace__slug"),
            }
            return Response(self.PersonOutputSerializer(data).data)
        api_key = actor.api_key
        data = {
            "source": actor.source,
            "workspace": api_key.workspace.slug,
            "key": api_key.name,
            "scopes": sorted(api_key.scope_set),
            "owner": api_key.owner.get_username() if api_key.owner else None,
        }
        return Response(self.KeyOutputSerializer(data).data)


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """No route: the API's envelope under /v1/, Django's page elsewhere."""
    if request.path.startswith("/v1/"):
        body = {"error": {"code": "not_found", "message": f"No endpoint at {request.path}.", "fields": {}}}
        return JsonResponse(body, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)
