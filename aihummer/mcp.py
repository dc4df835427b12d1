"""The MCP server: every app's tools (`<app>/mcp.py`) assembled in one place, the
conventions they share, and the two transports.

- stdio: `manage.py mcp`, the API key in `AIHUMMER_API_KEY`;
- streamable HTTP: `/mcp` on the ASGI app (`aihummer/asgi.py`), `Authorization: Bearer
  <API key>`, refused with 401 before any session opens when the key is not live.

Conventions (issue 16, after the seed's Synapse tools): parameters are camelCase, lists
are comma-separated strings, structured inputs are JSON strings. A success is a JSON
object with `"status": "success"` and an ISO 8601 `"timestamp"`, sent as structured
content and as text; a failure is a tool error result (`isError`) whose body is
`{"status": "error", "error": "...", ...}`. `error_body` is the one mapping from service
exceptions to that body.

Every tool declares its success as a pydantic model (`ToolOutput`), published as the
tool's `outputSchema` (issue 31); each success is validated against it before it
leaves, so what the schema says is what clients get.

Tools are sync functions: the SDK runs them in worker threads, each with its own
database connection, opened and closed around every call like a Django request.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar, Literal, TypeVar
from urllib.parse import urlsplit

import anyio.from_thread
import pydantic
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ObjectDoesNotExist, PermissionDenied, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections, connections
from django.http.request import split_domain_port, validate_host
from django.utils import timezone
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from aihummer import __version__
from aihummer.actors import Actor, Verb
from aihummer.api import WORKSPACE_HEADER
from aihummer.exceptions import ApplicationError
from aihummer.jsonsafe import text_problem
from aihummer.links import public_link
from aihummer.models import API_KEY_PREFIX, ApiKey, User, Workspace
from aihummer.services import api_key_authenticate
from aihummer.sso.tokens import (
    IdentityProviderUnavailable,
    InsufficientScope,
    InvalidBearerToken,
    mcp_tokens_enabled,
    resource_metadata_url,
    user_from_bearer_token,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Each app's `mcp` module (or package) exposes `TOOLS`, a list of `@tool` functions. `workflows.mcp`
# joins this tuple with the workflow engine (list_workflows, update_workflow,
# delete_workflow); nothing else changes here.
TOOL_MODULES: tuple[str, ...] = ("agents.mcp", "workflows.mcp", "sandbox.mcp")

MCP_PATH = "/mcp"
SCOPE_PRINCIPAL = "aihummer.principal"
CLIENT_NAME_MAX_CHARS = 60
INSTRUCTIONS = """\
AiHummer: the control plane of this workspace's LLM agents.
Read before you change: list_agents, get_agent (profile, rendered prompt, live version,
open proposals), list_presets, list_models. Try an agent with run_agent_test and read a
call with inspect_agent_debug. Propose a new system prompt with update_agent_system_prompt:
by default the proposal waits for a person to approve it in the admin and the live agent
does not change until then. No tool approves or rejects: people decide.
Every answer has "status" ("success" or "error") and, on success, a "timestamp"."""


# --- what a tool returns --------------------------------------------------------------------
class Out(pydantic.BaseModel):
    """A part of a tool's answer: exactly these fields (the schema says
    `additionalProperties: false`, so a field a tool forgot to declare fails its tests)."""

    model_config = pydantic.ConfigDict(extra="forbid")


class ToolOutput(Out):
    """A tool's success: its own fields between `status` and `timestamp`."""

    status: Literal["success"]
    timestamp: datetime

    schema_cache: ClassVar[dict[type, dict]] = {}

    @classmethod
    def output_schema(cls) -> dict[str, Any]:
        """The tool's `outputSchema` (JSON Schema; nested parts under `$defs`)."""
        if cls not in ToolOutput.schema_cache:
            ToolOutput.schema_cache[cls] = cls.model_json_schema()
        return ToolOutput.schema_cache[cls]


# --- what a tool receives ---------------------------------------------------------------
@dataclass(frozen=True)
class Caller:
    """Who calls a tool: the API key's actor and the one workspace the key belongs to,
    where the client reached us (`site_url`, for links; empty over stdio and in-process)
    and the call's progress channel."""

    actor: Actor
    workspace: Workspace
    site_url: str = ""
    progress: Progress | None = None

    def link(self, path: str) -> str:
        """A link a client can hand to a person: absolute under AIHUMMER_PUBLIC_URL, or
        the address the client reached us at; a path over stdio when neither is known."""
        return public_link(path, base=self.site_url)


class Progress:
    """From a tool's worker thread, back to its client: progress notifications (sent
    only when the client asked for them with a progress token) and whether the client
    still waits for the answer."""

    def __init__(self, ctx: Context, tool_name: str) -> None:
        self.ctx = ctx
        self.tool_name = tool_name
        self.last: tuple[float, float | None] | None = None
        self.abandoned = False

    def report(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Notify `done` of `total` (repeats of the last figures are not sent again)."""
        if (done, total) == self.last:
            return
        self.last = (done, total)
        anyio.from_thread.run(self.ctx.report_progress, done, total, message)

    def check(self) -> None:
        """Raise the host task's cancellation when the client cancelled the call (or,
        over HTTP, went away): a tool that waits calls it between polls and stops
        waiting; what it waited on goes on."""
        try:
            anyio.from_thread.check_cancelled()
        except BaseException:  # the backend's cancellation class: not an Exception
            self.abandoned = True
            logger.info("MCP %s: the client cancelled the call or went away; stopped waiting", self.tool_name)
            raise


WAIT_POLL_SECONDS = 0.1  # how often a waiting tool looks whether its client still waits


def run_beside(work: Callable[[], T], *, progress: Progress | None, name: str) -> T:
    """`work()` on a thread of its own (its own database connection), the tool's thread
    waiting for it and checking between polls whether the client still waits: a
    cancelled call (or, over HTTP, a client gone) stops waiting at once and `work` goes
    on to its end, recorded as if the client had stayed."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        close_old_connections()
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome["error"] = exc
        finally:
            connections.close_all()  # this thread ends here: its connection with it
            done.set()

    threading.Thread(target=run, name=f"mcp-{name}", daemon=False).start()
    while not done.wait(WAIT_POLL_SECONDS):
        if progress is not None:
            progress.check()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool as an app declares it: `fn(caller, **parameters) -> dict`."""

    fn: Callable[..., dict]
    name: str
    title: str
    description: str
    output: type[ToolOutput]
    read_only: bool
    destructive: bool
    # Calling it again with the same arguments changes nothing more (read-only tools are).
    idempotent: bool
    # Service field name → the parameter a caller gave it as, for error messages
    # (snake_case fields become camelCase by default).
    parameter_names: Mapping[str, str] = field(default_factory=dict)
    # Parameters this tool refuses to take, with the reason (said instead of ignoring them).
    refused: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def parameters(self) -> list[inspect.Parameter]:
        """The tool's parameters: the function's, after the caller."""
        return list(inspect.signature(self.fn, eval_str=True).parameters.values())[1:]

    def parameter_for(self, service_field: str) -> str:
        if service_field in self.parameter_names:
            return self.parameter_names[service_field]
        head, *rest = service_field.split("_")
        return head + "".join(part.title() for part in rest)


def tool(
    *,
    title: str,
    output: type[ToolOutput],
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    parameter_names: Mapping[str, str] | None = None,
    refused: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., dict]], ToolSpec]:
    """Declare an MCP tool. The function's docstring is its description, its
    parameters (annotated with pydantic `Field`s) its JSON Schema, `output` the model of
    its success (its `outputSchema`); it returns the success payload (without `status`
    and `timestamp`) or raises what services raise."""

    def declare(fn: Callable[..., dict]) -> ToolSpec:
        return ToolSpec(
            fn=fn,
            name=fn.__name__,
            title=title,
            description=inspect.cleandoc(fn.__doc__ or ""),
            output=output,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent or read_only,
            parameter_names=dict(parameter_names or {}),
            refused=dict(refused or {}),
        )

    return declare


def comma_list(value: str | None) -> list[str]:
    """`"a, b,,c"` → `["a", "b", "c"]` (the convention for list parameters)."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


NOTHING_CHANGED = "Nothing changed: the values given are the current ones."


def differing(row: object, wanted: dict[str, object]) -> dict[str, object]:
    """The fields of `wanted` given (not None) and unlike `row`'s: what an update tool writes."""
    return {field: value for field, value in wanted.items() if value is not None and getattr(row, field) != value}


def saved_message(changed: list[str]) -> str:
    """What an update tool tells the model it wrote (by parameter name), or that nothing changed."""
    return f"Saved: {', '.join(changed)}." if changed else NOTHING_CHANGED


# --- results ------------------------------------------------------------------------------
def _result(body: dict, *, is_error: bool) -> CallToolResult:
    text = json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=json.loads(text), is_error=is_error
    )


def success(payload: dict, output: type[ToolOutput] | None = None) -> CallToolResult:
    """A success; checked against the tool's `outputSchema` when given (a mismatch is
    our bug: logged, and answered as an internal error rather than sent wrong)."""
    now = timezone.now().replace(microsecond=0).isoformat()
    result = _result({"status": "success", **payload, "timestamp": now}, is_error=False)
    if output is not None:
        try:
            output.model_validate(result.structured_content)
        except pydantic.ValidationError as exc:
            logger.error("MCP tool answer does not match its %s", output.__name__, exc_info=exc)
            return failure({"error": "Internal error (an answer did not match its outputSchema); it was logged."})
    return result


def failure(body: dict) -> CallToolResult:
    return _result({"status": "error", **body}, is_error=True)


def error_body(exc: BaseException, spec: ToolSpec | None = None) -> dict:
    """The one mapping from what services (and argument validation) raise to the
    body of a tool error: a message a model can act on, never a stack trace."""
    if isinstance(exc, pydantic.ValidationError):
        fields: dict[str, list[str]] = {}
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]) or "arguments"
            fields.setdefault(name, []).append(error["msg"])
        return {"error": _field_message(fields), "fields": fields}
    if isinstance(exc, ValidationError):
        if not hasattr(exc, "error_dict"):
            return {"error": " ".join(exc.messages)}
        fields = {}
        for name, messages in exc.message_dict.items():
            key = name if name == NON_FIELD_ERRORS or spec is None else spec.parameter_for(name)
            fields.setdefault(key, []).extend(messages)
        return {"error": _field_message(fields), "fields": fields}
    if isinstance(exc, ApplicationError):
        return {"error": exc.message, **exc.extra}
    if isinstance(exc, PermissionDenied):
        return {"error": str(exc) or "Permission denied."}
    if isinstance(exc, ObjectDoesNotExist):
        return {"error": str(exc)}
    logger.error("MCP tool %s failed unexpectedly", spec.name if spec else "?", exc_info=exc)
    return {"error": f"Internal error ({type(exc).__name__}); it was logged."}


def _field_message(fields: dict[str, list[str]]) -> str:
    return "; ".join(
        " ".join(messages) if name == NON_FIELD_ERRORS else f"{name}: {' '.join(messages)}"
        for name, messages in fields.items()
    )


# --- the server ---------------------------------------------------------------------------
class AiHummerMCP(MCPServer):
    """The SDK's server, with argument errors, unknown tools and unknown parameters
    answered in our error body like every other failure."""

    def __init__(self, *, api_key: str = "") -> None:
        super().__init__(name="aihummer", title="AiHummer", version=__version__, instructions=INSTRUCTIONS)
        # stdio and in-process only: the raw key, re-checked on every call so a key
        # revoked mid-session stops working at once. HTTP takes it from each request.
        self.api_key = api_key
        self.specs: dict[str, ToolSpec] = {}

    def add_spec(self, spec: ToolSpec) -> None:
        self.specs[spec.name] = spec
        self.add_tool(
            _sdk_function(spec),
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
            structured_output=False,
        )
        # The SDK decodes any string that looks like JSON before validating, for
        # clients that send lists as JSON text: `message='{"x": 1}'` would become an
        # object and `reason='null'` nothing. Every parameter here is a scalar (lists
        # are comma-separated, JSON inputs are strings the tool parses itself), so
        # what the caller sent is what the tool gets.
        # The output schema is published here and checked by `success` (the SDK checks
        # only a schema it derived from a return annotation).
        sdk_tool = self._tool_manager.get_tool(spec.name)
        metadata = sdk_tool.fn_metadata
        sdk_tool.fn_metadata = _LiteralArguments(
            **{name: getattr(metadata, name) for name in type(metadata).model_fields}
            | {"output_schema": spec.output.output_schema()}
        )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        spec = self.specs.get(name)
        if spec is None:
            return failure({"error": f"Unknown tool '{name}'. Known tools: {', '.join(sorted(self.specs))}."})
        refusal = _parameter_refusal(spec, arguments) or _text_refusal(arguments)
        if refusal:
            return failure(refusal)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, pydantic.ValidationError) else exc
            return failure(error_body(cause, spec))


class _LiteralArguments(FuncMetadata):
    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def _parameter_refusal(spec: ToolSpec, arguments: dict[str, Any]) -> dict | None:
    known = {parameter.name for parameter in spec.parameters}
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return None
    reasons = [spec.refused[name] for name in unknown if name in spec.refused]
    message = f"Unknown parameter {', '.join(map(repr, unknown))} for {spec.name}."
    if reasons:
        message += " " + " ".join(dict.fromkeys(reasons))
    return {"error": f"{message} It takes: {', '.join(sorted(known))}."}


def _text_refusal(arguments: dict[str, Any]) -> dict | None:
    # Every string parameter, whatever the tool: PostgreSQL stores no NUL and UTF-8
    # encodes no lone surrogate, so either would otherwise fail deep in a save.
    fields = {
        name: [f"{name} {problem}."]
        for name, value in arguments.items()
        if isinstance(value, str) and (problem := text_problem(value))
    }
    return {"error": _field_message(fields), "fields": fields} if fields else None


def _sdk_function(spec: ToolSpec) -> Callable[..., CallToolResult]:
    """The function the SDK registers: the tool's own parameters (its JSON Schema)
    plus the SDK's `Context`, returning a ready `CallToolResult`."""
    parameters = [parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY) for parameter in spec.parameters]
    context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)

    def call(ctx: Context, **arguments: Any) -> CallToolResult:
        return _run(spec, ctx, arguments)

    call.__name__ = call.__qualname__ = spec.name
    call.__doc__ = spec.description
    call.__signature__ = inspect.Signature([*parameters, context], return_annotation=CallToolResult)
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"ctx": Context, "return": CallToolResult}
    return call


def _run(spec: ToolSpec, ctx: Context, arguments: dict[str, Any]) -> CallToolResult:
    # A worker thread: its connection is opened and closed around the call, as
    # Django does around a request (CONN_MAX_AGE and the pool still apply).
    close_old_connections()
    try:
        payload = spec.fn(_caller(ctx, spec), **arguments)
    except Exception as exc:
        return failure(error_body(exc, spec))
    finally:
        close_old_connections()
    return success(payload, spec.output)


def _caller(ctx: Context, spec: ToolSpec) -> Caller:
    request = ctx.request_context.request
    site_url = ""
    if request is not None:
        principal = request.scope.get(SCOPE_PRINCIPAL)  # set by McpAuth for this very request
        site_url = str(request.base_url).rstrip("/")
    else:
        raw_key = getattr(ctx.mcp_server, "api_key", "")
        api_key = api_key_authenticate(raw_key) if raw_key else None
        principal = Principal(workspace=api_key.workspace, api_key=api_key) if api_key else None
    if principal is None:
        raise PermissionDenied("The API key is missing, unknown or revoked: ask a workspace admin for a live key.")
    return Caller(
        actor=principal.actor(client_name(ctx)),
        workspace=principal.workspace,
        site_url=site_url,
        progress=Progress(ctx, spec.name),
    )


def client_name(ctx: Context) -> str:
    """The client's name from the MCP handshake (`clientInfo.name`), tidied for a
    proposal's source: `mcp:<key name>/<client name>`."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    name = "".join(char if char.isprintable() and not char.isspace() else "-" for char in name.strip())
    return name[:CLIENT_NAME_MAX_CHARS]


def build_server(*, api_key: str = "", server_class: type[AiHummerMCP] = AiHummerMCP) -> AiHummerMCP:
    """The server with every app's tools. `api_key` is the caller's key for stdio and
    in-process use; over HTTP each request brings its own."""
    server = server_class(api_key=api_key)
    for module_name in TOOL_MODULES:
        for spec in importlib.import_module(module_name).TOOLS:
            server.add_spec(spec)
    return server


# --- streamable HTTP ------------------------------------------------------------------------
@dataclass(frozen=True)
class Principal:
    """Who an HTTP request to /mcp comes from: an API key (in its workspace), or a
    person signed in at the identity provider through OAuth (in the one workspace they
    belong to, or the one `X-Workspace` names)."""

    workspace: Workspace
    api_key: ApiKey | None = None
    user: User | None = None

    @property
    def client_id(self) -> str:
        # Binds each session to whoever opened it: the same key, or the same person in
        # the same workspace.
        return f"api-key-{self.api_key.pk}" if self.api_key else f"user-{self.user.pk}-ws-{self.workspace.pk}"

    def actor(self, client: str) -> Actor:
        if self.api_key is not None:
            return Actor.for_api_key(self.api_key, surface="mcp", client_name=client)
        return Actor.for_user(self.user, surface="mcp")


class Refusal(Exception):
    """A request /mcp does not serve: its status, OAuth error code and reason (and, for
    a token lacking scopes, the scopes to ask for)."""

    def __init__(self, status: int, error: str, reason: str, scope: str = "") -> None:
        super().__init__(reason)
        self.status, self.error, self.reason, self.scope = status, error, reason, scope


def _authenticate(raw_token: str, workspace_slug: str) -> Principal:
    """The principal of a bearer token: an API key (`ahk_…`), otherwise (when /mcp
    takes them) an access token from the identity provider, checked as the REST API
    checks its own (signature, issuer, expiry) but for /mcp's audience."""
    close_old_connections()
    try:
        if raw_token.startswith(f"{API_KEY_PREFIX}_") or not mcp_tokens_enabled():
            api_key = api_key_authenticate(raw_token)
            if api_key is None:
                raise Refusal(401, "invalid_token", "Invalid, unknown or revoked API key.")
            return Principal(workspace=api_key.workspace, api_key=api_key)
        try:
            user = user_from_bearer_token(raw_token, for_mcp=True)
        except InvalidBearerToken as exc:
            raise Refusal(401, "invalid_token", str(exc)) from None
        except InsufficientScope as exc:
            raise Refusal(403, "insufficient_scope", str(exc), scope=" ".join(settings.OIDC_MCP_SCOPES)) from None
        except IdentityProviderUnavailable as exc:
            raise Refusal(503, "temporarily_unavailable", f"{exc} Try again shortly.") from None
        return Principal(workspace=_workspace_of(Actor.for_user(user, surface="mcp"), workspace_slug), user=user)
    finally:
        close_old_connections()


def _workspace_of(actor: Actor, slug: str) -> Workspace:
    """A person's workspace for this session: the one named, or their only one (the
    REST API's rule, with the same header)."""
    if slug:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None or not actor.belongs_to(workspace):
            raise Refusal(404, "invalid_request", f"Unknown workspace '{slug}'.")
        return workspace
    workspace_ids = actor.workspace_ids(Verb.READ)
    if workspace_ids == []:
        raise Refusal(403, "insufficient_scope", "You are a member of no workspace: ask a workspace admin.")
    if workspace_ids is None or len(workspace_ids) != 1:
        raise Refusal(
            400, "invalid_request", f"Name the workspace in the {WORKSPACE_HEADER} header (you may use several)."
        )
    return Workspace.objects.get(pk=workspace_ids[0])


class McpAuth:
    """ASGI middleware in front of the MCP transport: no live credential, no session.

    A missing, unknown, revoked or expired credential is answered 401 before the SDK
    sees the request, on every request (so revoking a key ends its sessions too). With
    OAuth on (`OIDC_MCP_AUDIENCE`), the 401's `WWW-Authenticate` names the resource's
    metadata (RFC 9728) so a client can discover where to sign in. The principal is also
    given to the SDK as the request's user, which binds each session to whoever opened it.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.authenticate = sync_to_async(_authenticate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if refusal := _misdirected(scope):
            await _refuse(send, *refusal)
            return
        raw_token = _bearer_token(scope)
        if not raw_token:
            await _unauthorized(send, Refusal(401, "", _missing_credential()))
            return
        try:
            principal = await self.authenticate(raw_token, _header(scope, b"x-workspace"))
        except Refusal as refusal:
            await _unauthorized(send, refusal)
            return
        scopes = sorted(principal.api_key.scope_set) if principal.api_key else []
        token = AccessToken(token=principal.client_id, client_id=principal.client_id, scopes=scopes)
        user = AuthenticatedUser(token)
        scope = {**scope, SCOPE_PRINCIPAL: principal, "user": user, "auth": AuthCredentials(scopes)}
        await self.app(scope, receive, send)


class HostGuard:
    """ASGI middleware: only requests on a host Django serves, from an origin it
    trusts (see `_misdirected`); what McpAuth checks first, alone."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (refusal := _misdirected(scope)):
            await _refuse(send, *refusal)
            return
        await self.app(scope, receive, send)


def _missing_credential() -> str:
    if mcp_tokens_enabled():
        return "Send Authorization: Bearer <API key or access token>; sign in with OAuth (see resource_metadata)."
    return "Send Authorization: Bearer <API key>."


def _header(scope: Scope, wanted: bytes) -> str:
    return next((value.decode("latin-1").strip() for name, value in scope["headers"] if name == wanted), "")


def _bearer_token(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" else ""
    return ""


def _misdirected(scope: Scope) -> tuple[int, str] | None:
    """The DNS-rebinding guard, by Django's own rule: the Host one of ALLOWED_HOSTS (its
    port parsed, not a prefix match: the SDK's `host:*` pattern lets `localhost:1@evil`
    through), and an Origin, when sent, on such a host or in CSRF_TRUSTED_ORIGINS."""
    headers = {name: value.decode("latin-1") for name, value in scope["headers"] if name in (b"host", b"origin")}
    domain, _ = split_domain_port(headers.get(b"host", ""))
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return 421, "Invalid Host header"
    origin = headers.get(b"origin")
    if origin and origin not in settings.CSRF_TRUSTED_ORIGINS:
        try:
            netloc = urlsplit(origin).netloc
        except ValueError:
            netloc = ""
        domain, _ = split_domain_port(netloc)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return 403, "Invalid Origin header"
    return None


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _unauthorized(send: Send, refusal: Refusal) -> None:
    """A refused credential, the OAuth way (RFC 6750 §3): no `error` when none was
    sent; `resource_metadata` (RFC 9728 §5.1) when /mcp takes access tokens; a token
    lacking scopes is a 403 whose challenge names them (`scope`, what the MCP
    specification's step-up authorization reads)."""
    body = json.dumps({"error": refusal.error or "invalid_token", "error_description": refusal.reason}).encode()
    challenge = ['Bearer realm="aihummer"']
    if refusal.error:
        challenge += [f'error="{refusal.error}"', f'error_description="{_quoted(refusal.reason)}"']
    if refusal.scope:
        challenge.append(f'scope="{_quoted(refusal.scope)}"')
    if mcp_tokens_enabled():
        challenge.append(f'resource_metadata="{resource_metadata_url()}"')
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if refusal.status == 401 or refusal.scope:
        headers.append((b"www-authenticate", ", ".join(challenge).encode("latin-1", "replace")))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _quoted(text: str) -> str:
    # A quoted-string (RFC 9110 §5.6.4) of printable ASCII without quotes or backslashes.
    return "".join(char if " " <= char <= "~" and char not in '"\\' else "?" for char in text)


def transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection that accepts the hosts Django accepts."""
    hosts = [host for host in settings.ALLOWED_HOSTS if not host.startswith(".")]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts = [form for host in hosts for form in (host, f"{host}:*")]
    origins = [f"{scheme}://{host}" for host in allowed_hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        allowed_hosts=allowed_hosts, allowed_origins=[*origins, *settings.CSRF_TRUSTED_ORIGINS]
    )


def http_app() -> ASGIApp:
    """The streamable HTTP app at `/mcp` (its lifespan runs the session manager)."""
    app = build_server().streamable_http_app(streamable_http_path=MCP_PATH, transport_security=transport_security())
    return McpAuth(app)
