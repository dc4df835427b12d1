"""Tools with effects outside (issue 30): `mail_send` and `http_request`.

Both are configured by the agent's tool settings (`AgentToolSettings`: the SMTP
account, whose password is a vault credential, and the hosts http_request may call)
and, by default, wait for a person (`agents.runtime.approvals`). `check()` runs when
the model makes the call, before any person sees it, and refuses what could never run
(a host off the allow-list, a private address) without connecting anywhere;
`perform()` runs the approved call with its ledger key (the mail's Message-ID, the
request's Idempotency-Key) and says what happened, for the model.

`perform()` calls `started()` immediately before the one network write after which the
receiver may act (the end of an e-mail's DATA, an HTTP request's first byte), and
nothing after the answer but reading it: a failure before `started()` is known not to
have acted (a ToolError), one after it without an answer is `OutcomeUnknown` (the
receiver may have acted; `agents.services.tool_approvals` asks a person).
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import smtplib
import socket
import ssl
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.mail import EmailMessage
from django.core.mail.backends.smtp import EmailBackend
from django.core.mail.message import sanitize_address
from django.core.validators import validate_email
from pydantic import BaseModel, Field, field_validator

from agents import vault
from agents.destinations import host_matches
from agents.runtime.tools import Tool, ToolError, TurnContext, _Arguments, register

if TYPE_CHECKING:
    from agents.models import Agent, AgentToolSettings

MAX_BODY_CHARS = 50_000


def tool_settings(agent: Agent) -> AgentToolSettings | None:
    try:
        return agent.tool_settings
    except ObjectDoesNotExist:
        return None


def allows_private(agent: Agent) -> bool:
    try:
        return agent.workspace.tool_policy.allow_private_addresses
    except ObjectDoesNotExist:
        return False


class OutcomeUnknown(ToolError):
    """The call was handed to the receiver (`started()` was called) and no answer came
    back: it may have acted. Never retried by itself."""


def _nothing() -> None:
    pass


class EffectTool(Tool):
    """A tool whose call acts outside: checked when called, performed once approved."""

    has_side_effects = True

    def check(self, agent: Agent, arguments: BaseModel) -> None:
        """Refuse (ToolError) what could never be carried out; connects nowhere."""

    def perform(
        self, *, agent: Agent, arguments: BaseModel, ledger_key: str, started: Callable[[], None] = _nothing
    ) -> str:
        raise NotImplementedError

    def confirmed(self, arguments: BaseModel, ledger_key: str, *, by: str) -> str:
        """What the model is told of a call whose answer was lost once a person said it
        was carried out."""
        raise NotImplementedError

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        # Only where the workspace lets it run without a person: no ledger to keep.
        self.check(context.agent, arguments)
        return self.perform(agent=context.agent, arguments=arguments, ledger_key=f"{context.turn.pk}-{time.time_ns()}")


# --- mail_send --------------------------------------------------------------------------
def _addresses(value: list[str]) -> list[str]:
    for address in value:
        try:
            validate_email(address)
        except ValidationError:
            raise ValueError(f"{address!r} is not an e-mail address") from None
    return value


@register
class MailSend(EffectTool):
    name = "mail_send"
    description = (
        "Send an e-mail from your configured account. A person reads exactly this message and approves it "
        "before it is sent."
    )

    class Arguments(_Arguments):
        to: list[str] = Field(min_length=1, max_length=20, description="Recipients' addresses.")
        cc: list[str] = Field(default_factory=list, max_length=20, description="Copy recipients' addresses.")
        subject: str = Field(min_length=1, max_length=200)
        body: str = Field(min_length=1, max_length=MAX_BODY_CHARS, description="Plain text.")

        _check_to = field_validator("to", "cc")(_addresses)

        @field_validator("subject")
        @classmethod
        def _one_line(cls, value: str) -> str:
            if "\n" in value or "\r" in value:
                raise ValueError("one line only")
            return value

    def check(self, agent: Agent, arguments: BaseModel) -> None:
        self._account(agent)

    def _account(self, agent: Agent) -> AgentToolSettings:
        settings_row = tool_settings(agent)
        if settings_row is None or not settings_row.smtp_host or not settings_row.mail_from:
            raise ToolError(
                f"mail_send is not configured for agent '{agent.key}': an admin sets its SMTP host and From address "
                "in the agent's tool settings."
            )
        return settings_row

    def message(self, agent: Agent, arguments: BaseModel, ledger_key: str) -> EmailMessage:
        """The e-mail exactly as it will be sent (also what a reviewer is shown)."""
        account = tool_settings(agent)
        return EmailMessage(
            subject=arguments.subject,
            body=arguments.body,
            from_email=account.mail_from if account else "",
            to=arguments.to,
            cc=arguments.cc,
            headers={"Message-ID": f"<{ledger_key}@aihummer>"},
        )

    def perform(
        self, *, agent: Agent, arguments: BaseModel, ledger_key: str, started: Callable[[], None] = _nothing
    ) -> str:
        account = self._account(agent)
        password = ""
        if account.smtp_password_id:
            credential = account.smtp_password
            if not credential.may_be_sent_to(account.smtp_host):
                raise ToolError(
                    f"Not sent: credential '{credential.key}' may not be sent to {account.smtp_host} "
                    "(its allowed hosts)."
                )
            password = vault.decrypt(credential.ciphertext)
        backend = EmailBackend(
            host=account.smtp_host,
            port=account.smtp_port,
            username=account.smtp_user or None,
            password=password or None,
            use_tls=account.smtp_security == account.SmtpSecurity.STARTTLS,
            use_ssl=account.smtp_security == account.SmtpSecurity.SSL,
            timeout=30,
            fail_silently=False,
        )
        message = self.message(agent, arguments, ledger_key)
        try:
            backend.open()
            _send_marked(backend.connection, message, started)
        except OutcomeUnknown:
            raise
        except (OSError, http.client.HTTPException) as exc:  # smtplib's errors are OSErrors
            raise ToolError(f"Not sent: the mail server answered {type(exc).__name__}: {exc}") from None
        finally:
            _hang_up(backend)
        recipients = ", ".join([*arguments.to, *arguments.cc])
        return f"Sent to {recipients} (Message-ID <{ledger_key}@aihummer>)."

    def confirmed(self, arguments: BaseModel, ledger_key: str, *, by: str) -> str:
        recipients = ", ".join([*arguments.to, *arguments.cc])
        return (
            f"Sent to {recipients} (Message-ID <{ledger_key}@aihummer>): the mail server's answer was lost, "
            f"and {by} confirmed the message was delivered."
        )


def _send_marked(connection: smtplib.SMTP, message: EmailMessage, started: Callable[[], None]) -> None:
    """`sendmail`, step by step, so that `started()` runs just before the end of DATA
    (the one write after which the server may take the message): the envelope and the
    DATA command before it are known to have delivered nothing when they fail."""
    encoding = message.encoding or "utf-8"
    sender = sanitize_address(message.from_email, encoding)
    recipients = [sanitize_address(address, encoding) for address in message.recipients()]
    content = message.message().as_bytes(linesep="\r\n")
    connection.ehlo_or_helo_if_needed()
    code, reply = connection.mail(sender)
    if code != 250:
        raise smtplib.SMTPSenderRefused(code, reply, sender)
    refused = {}
    for recipient in recipients:
        code, reply = connection.rcpt(recipient)
        if code not in (250, 251):
            refused[recipient] = (code, reply)
    if len(refused) == len(recipients):
        raise smtplib.SMTPRecipientsRefused(refused)
    code, reply = connection.docmd("data")
    if code != 354:
        raise smtplib.SMTPDataError(code, reply)
    body = re.sub(rb"(?m)^\.", b"..", content)  # a line starting with '.' is doubled (RFC 5321)
    if not body.endswith(b"\r\n"):
        body += b"\r\n"
    started()
    try:
        connection.send(body + b".\r\n")
        code, reply = connection.getreply()
    except (OSError, smtplib.SMTPException) as exc:
        raise OutcomeUnknown(
            f"The message was handed to the mail server and its answer never came ({type(exc).__name__}: {exc})."
        ) from None
    if code != 250:  # an answer: the server refused it
        raise smtplib.SMTPDataError(code, reply)


def _hang_up(backend: EmailBackend) -> None:
    # QUIT without waiting for its answer: once the message is accepted, nothing the
    # server says may stand between it and the record of the effect.
    connection, backend.connection = backend.connection, None
    if connection is None:
        return
    try:
        if connection.sock is not None:
            connection.putcmd("quit")
    except OSError:
        pass
    finally:
        connection.close()


# --- http_request -----------------------------------------------------------------------
@register
class HttpRequest(EffectTool):
    name = "http_request"
    description = (
        "Call an HTTP endpoint on one of your allowed hosts. A person approves the exact request before it is made."
    )

    class Arguments(_Arguments):
        method: Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] = "GET"
        url: str = Field(min_length=1, max_length=2000, description="http:// or https:// URL.")
        headers: dict[str, str] = Field(default_factory=dict, max_length=20)
        body: str | None = Field(None, max_length=MAX_BODY_CHARS)

    def check(self, agent: Agent, arguments: BaseModel) -> None:
        _, host, port, _, _ = self._destination(agent, arguments)
        self._address(agent, host, port)

    def _destination(self, agent: Agent, arguments: BaseModel) -> tuple[str, str, int, str, AgentToolSettings]:
        """(scheme, host, port, path) checked against the allow-list, or ToolError."""
        try:
            parts = urlsplit(arguments.url)
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            raise ToolError(f"Refused: {arguments.url!r} is not a valid URL.") from None
        if parts.scheme not in ("http", "https") or not host:
            raise ToolError("Refused: give an http:// or https:// URL with a host.")
        settings_row = tool_settings(agent)
        allowed = settings_row.http_allowed_hosts if settings_row else []
        if not host_matches(host, allowed):
            raise ToolError(
                f"Refused: {host} is not among the hosts this agent may call (tool settings: http_allowed_hosts)."
            )
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path, settings_row

    def _address(self, agent: Agent, host: str, port: int) -> str:
        """The one address to connect to, every resolved address checked first (a name
        that resolves to a private address is refused like that address)."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise ToolError(f"Refused: {host} does not resolve.") from None
        addresses = [info[4][0] for info in infos]
        if not allows_private(agent):
            for address in addresses:
                if not ipaddress.ip_address(address.split("%")[0]).is_global:
                    raise ToolError(
                        f"Refused: {host} is a private, loopback or link-local address ({address}); the workspace "
                        "does not allow those (tool policy: allow_private_addresses)."
                    )
        return addresses[0]

    def perform(
        self, *, agent: Agent, arguments: BaseModel, ledger_key: str, started: Callable[[], None] = _nothing
    ) -> str:
        scheme, host, port, path, settings_row = self._destination(agent, arguments)
        address = self._address(agent, host, port)
        timeout, limit = settings_row.http_timeout_seconds, settings_row.http_max_response_bytes
        connection = _pinned(scheme, host, port, address, timeout)
        # The host is the URL's (a model's Host header would point the server elsewhere).
        headers = {k: v for k, v in arguments.headers.items() if k.lower() != "host"} | {"Idempotency-Key": ledger_key}
        body = arguments.body.encode() if arguments.body is not None else None
        deadline = time.monotonic() + timeout
        try:
            try:
                connection.connect()  # before the mark: a refused connection sent nothing
            except OSError as exc:
                raise ToolError(f"The request to {host} failed: {type(exc).__name__}: {exc}") from None
            started()
            try:
                connection.request(arguments.method, path, body=body, headers=headers)
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                raise OutcomeUnknown(
                    f"The request was sent to {host} and its answer never came ({type(exc).__name__}: {exc})."
                ) from None
            try:
                data = _read_bounded(response, limit, deadline)
            except (OSError, http.client.HTTPException) as exc:  # answered: what it said is known
                data = f"[the response body could not be read: {type(exc).__name__}: {exc}]".encode()
        finally:
            connection.close()
        text = data[:limit].decode("utf-8", errors="replace")
        note = f"\n[response cut at {limit} bytes (http_max_response_bytes)]" if len(data) > limit else ""
        kind = response.getheader("Content-Type", "")
        return f"HTTP {response.status} {response.reason}\nContent-Type: {kind}\n\n{text}{note}"

    def confirmed(self, arguments: BaseModel, ledger_key: str, *, by: str) -> str:
        return (
            f"{arguments.method} {arguments.url} was made (Idempotency-Key {ledger_key}): its response was lost, "
            f"and {by} confirmed the request was carried out. What it answered is not known."
        )


def _read_bounded(response: http.client.HTTPResponse, limit: int, deadline: float) -> bytes:
    """At most `limit` + 1 bytes (one more says it was cut), within the deadline."""
    chunks, size = [], 0
    while size <= limit:
        if time.monotonic() > deadline:
            raise TimeoutError("the response took longer than http_timeout_seconds")
        chunk = response.read(min(65536, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _pinned(scheme: str, host: str, port: int, address: str, timeout: float) -> http.client.HTTPConnection:
    """A connection to `address` (checked) for `host`: no second lookup a changed DNS
    answer could turn to a private address."""
    if scheme == "https":
        return _PinnedHTTPS(host, port, timeout=timeout, context=ssl.create_default_context(), address=address)
    return _PinnedHTTP(host, port, timeout=timeout, address=address)


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, *args: object, address: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, *args: object, address: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
