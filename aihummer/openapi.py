"""The OpenAPI document's conventions, applied to every operation at once: the error
envelope on every error status an operation can answer, the request headers the
foundation reads, and the two ways to authenticate."""

from __future__ import annotations

import re

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

# Header names are repeated here rather than imported: aihummer.api uses extend_schema at
# import time, which loads this module (the schema class) first.
WORKSPACE_HEADER = "X-Workspace"
IDEMPOTENCY_HEADER = "Idempotency-Key"

ERROR_DESCRIPTIONS = {
    "400": "The request breaks this schema: `fields` maps each JSON path to its problems.",
    "401": "No credentials, or an invalid or revoked API key.",
    "403": "Authenticated, but the role or scope is missing; the message names it.",
    "404": "No such row in this workspace (another workspace's row answers the same).",
    "409": "The current state refuses it: already decided, stale, identical to live, in use…",
    "412": "If-Match named a live version that is no longer live: re-read and retry.",
    "413": "The request body is too large.",
    "415": "Send JSON (Content-Type: application/json).",
    "422": "The schema allows it but a rule refuses it (`fields` says where): an unknown preset or credential, "
    "a key already taken, a cursor this API did not give, an Idempotency-Key used for another request…",
    "429": "Too many requests: wait for Retry-After seconds.",
}
READ_ERRORS = ("400", "401", "403", "404", "422", "429")
WRITE_ERRORS = (*READ_ERRORS, "409", "413", "415")

IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    description='The live version number the change is based on, e.g. `"3"`; 412 when the agent moved on.',
    pattern=r'^(\*|(W/)?"?[0-9]{1,9}"?)$',
)


def openapi_schema_of(json_schema: dict) -> dict:
    """A JSON Schema (pydantic's, draft 2020-12) as an OpenAPI 3.0 schema object: its
    `$defs` inlined, `const` as a one-value `enum`, `anyOf [X, null]` as a nullable X."""
    definitions = json_schema.get("$defs", {})

    def convert(node: object) -> object:
        if isinstance(node, list):
            return [convert(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return convert({**definitions[node["$ref"].rsplit("/", 1)[-1]], **_without(node, "$ref")})
        converted = {key: convert(value) for key, value in node.items() if key != "$defs"}
        if "const" in converted:
            converted["enum"] = [converted.pop("const")]
        choices = converted.get("anyOf", [])
        if {"type": "null"} in choices:
            others = [choice for choice in choices if choice != {"type": "null"}]
            del converted["anyOf"]
            converted |= (others[0] if len(others) == 1 else {"anyOf": others}) | {"nullable": True}
        return converted

    return convert(json_schema)


def _without(node: dict, key: str) -> dict:
    return {k: v for k, v in node.items() if k != key}


# What an operation without a docstring of its own does, by its viewset action.
ACTION_VERBS = {
    "list": "List",
    "retrieve": "Get one of the",
    "create": "Create one of the",
    "partial_update": "Change one of the",
    "update": "Replace one of the",
    "destroy": "Delete one of the",
}
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.DOTALL)


class AutoSchema(BaseAutoSchema):
    def get_tags(self) -> list[str]:
        # One tag per resource, named after its route (`agent-section` → "agent sections").
        basename = getattr(self.view, "basename", None)
        return [f"{basename.replace('-', ' ')}s"] if basename else [self._tokenize_path()[-1]]

    def get_summary(self) -> str:
        """The first sentence of the operation's own docstring, else what its action does."""
        action = getattr(self.view, "action", None) or self.method.lower()
        doc = " ".join((getattr(getattr(self.view, action, None), "__doc__", None) or "").split())
        match = _FIRST_SENTENCE.match(doc)
        if match:
            return match[1].rstrip(".")
        verb = ACTION_VERBS.get(action, action.replace("_", " ").capitalize())
        return f"{verb} {self.get_tags()[0]}"

    def get_override_parameters(self) -> list:
        parameters = [
            OpenApiParameter(
                WORKSPACE_HEADER,
                str,
                OpenApiParameter.HEADER,
                description="The workspace's slug (sessions of people in several workspaces; keys have one).",
                pattern=r"^[a-z0-9_-]{1,50}$",
            )
        ]
        if self.method == "POST":
            parameters.append(
                OpenApiParameter(
                    IDEMPOTENCY_HEADER,
                    str,
                    OpenApiParameter.HEADER,
                    description="Retry-safe POST: the same key and body within 24 h replays the first answer.",
                    pattern=r"^[\x21-\x7e]{1,255}$",
                )
            )
        if self._takes_if_match():
            parameters.append(IF_MATCH)
        return parameters

    def _map_basic_serializer(self, serializer: object, direction: str) -> dict:
        # A request body says what `aihummer.api.InputSerializer` enforces.
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request" or not getattr(serializer, "refuses_unknown_fields", False):
            return schema
        schema["additionalProperties"] = False
        if serializer.any_of_required:
            schema["anyOf"] = [{"required": [name]} for name in serializer.any_of_required]
        if serializer.one_of_required:
            schema["oneOf"] = [{"required": [name]} for name in serializer.one_of_required]
        return schema

    def _get_request_for_media_type(self, serializer: object, direction: str = "request") -> tuple:
        schema, required = super()._get_request_for_media_type(serializer, direction)
        # A body that must name one of its fields is no body to leave out.
        must_name = getattr(serializer, "any_of_required", ()) or getattr(serializer, "one_of_required", ())
        return schema, required or bool(must_name)

    def _takes_if_match(self) -> bool:
        # Views list the actions that check If-Match (`if_match_actions`).
        action = getattr(self.view, "action", None)
        return self.method != "GET" and action in getattr(self.view, "if_match_actions", ())

    def _get_response_bodies(self, direction: str = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        codes = READ_ERRORS if self.method == "GET" else WRITE_ERRORS
        if self._takes_if_match():
            codes = (*codes, "412")
        from aihummer.api import ErrorSerializer

        for code in codes:
            if code not in responses:
                error = OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
                responses[code] = self._get_response_for_code(error, code, direction=direction)
        return responses


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "aihummer.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "ahk_<id>_<secret>",
            "description": "An API key of one workspace, with scopes read, write, publish, vouch.",
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "aihummer.auth.SessionActorAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "A person's admin session; writes need the X-CSRFToken header.",
        }


class OidcBearerScheme(OpenApiAuthenticationExtension):
    target_class = "aihummer.auth.OidcBearerAuthentication"
    name = "oidcBearer"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "An access token of the OpenID provider (single sign-on): the person and their roles.",
        }
