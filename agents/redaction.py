"""Secrets out of every text a provider sends back, by value.

A model or an OpenAI-compatible server may echo the API key it was called with (or
any credential it was shown): the only safe rule is to replace the actual values of
the workspace's vault secrets wherever provider text is stored or shown — turns, debug
logs, try-it results, command output, log lines. Well-known key shapes are redacted
too, for secrets nobody told us about. `Redactor.for_workspace()` is built once per
turn or check and applied at each of those boundaries.

Stored text is also made storable: PostgreSQL refuses NUL in `text` and `jsonb`, so a
provider answering with one would otherwise crash the turn that records it.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery

if TYPE_CHECKING:
    from agents.runtime.providers.base import ModelResponse

REDACTED = "[redacted]"
# A shorter secret would garble ordinary words; no provider issues keys that short.
MIN_SECRET_CHARS = 8
# Shapes of well-known secrets, redacted even when nobody told us the value.
SECRET_PATTERNS = [
    re.compile(r"sk-[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic (sk-ant-...)
    re.compile(r"AIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"ahk_\d+_[A-Za-z0-9_-]{20,}"),  # our own API keys
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/-]{20,}=*"),
]
# Secrets in use in this process, so log lines (which know no workspace) are redacted
# by value too. Bounded: the most recently used first.
_IN_USE: OrderedDict[str, None] = OrderedDict()
_IN_USE_MAX = 1000


class Redactor:
    """Replaces a fixed set of secret values (and known key shapes) in text and JSON."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        unique = {secret for secret in secrets if isinstance(secret, str) and len(secret) >= MIN_SECRET_CHARS}
        # Longest first, so a secret containing another is replaced whole.
        self.secrets = sorted(unique, key=len, reverse=True)
        for secret in self.secrets:
            _IN_USE[secret] = None
            _IN_USE.move_to_end(secret)
        while len(_IN_USE) > _IN_USE_MAX:
            _IN_USE.popitem(last=False)

    @classmethod
    def for_workspace(cls, workspace_id: int) -> Redactor:
        """Every credential secret of the workspace (decrypted from the vault)."""
        from agents.models import Credential

        return cls.from_ciphertexts(
            list(Credential.objects.filter(workspace_id=workspace_id).values_list("ciphertext", flat=True))
        )

    @classmethod
    def from_ciphertexts(cls, ciphertexts: Iterable[str] | str | None) -> Redactor:
        """The secrets of vault ciphertexts: a list, or the comma-joined text
        `workspace_ciphertexts()` reads along with another query (Fernet tokens hold
        no comma)."""
        from agents import vault

        if isinstance(ciphertexts, str):
            ciphertexts = ciphertexts.split(",")
        secrets = []
        for ciphertext in filter(None, ciphertexts or ()):
            try:
                secrets.append(vault.decrypt(ciphertext))
            except vault.VaultError:
                continue  # a secret no key can open cannot be sent anywhere either
        return cls(secrets)

    def text(self, text: str, *, max_chars: int | None = None) -> str:
        """`text` with every secret replaced, NUL made storable, and, when `max_chars`
        is given, bounded with a note of what was cut."""
        if not text:
            return text
        text = redact_values(text, self.secrets)
        if max_chars is not None and len(text) > max_chars:
            text = f"{text[:max_chars]}… [{len(text) - max_chars} more characters not kept]"
        return text

    def value(self, value: object, *, max_chars: int | None = None) -> object:
        """`value` (JSON-like) with every string, and every key, redacted."""
        if isinstance(value, str):
            return self.text(value, max_chars=max_chars)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v, max_chars=max_chars) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item, max_chars=max_chars) for item in value]
        return value

    def debug(self, value: object) -> object:
        """For debug logs: redacted and each string bounded by AIHUMMER_DEBUG_MAX_CHARS."""
        return self.value(value, max_chars=settings.AIHUMMER_DEBUG_MAX_CHARS)


class _JoinedText(models.Aggregate):
    """The group's values joined by commas (PostgreSQL string_agg, SQLite group_concat)."""

    function = "STRING_AGG"
    template = "%(function)s(%(expressions)s, ',')"
    output_field = models.TextField()

    def as_sqlite(self, compiler: object, connection: object, **extra: object) -> tuple[str, list]:
        return super().as_sql(compiler, connection, function="GROUP_CONCAT", **extra)


def workspace_ciphertexts(workspace_field: str) -> Subquery:
    """An annotation: the ciphertexts of every credential of the row's workspace, so a
    turn reads its secrets in the query that reads its agent (no statement of its own)."""
    from agents.models import Credential

    joined = (
        Credential.objects.filter(workspace_id=OuterRef(workspace_field))
        .order_by()
        .values("workspace_id")
        .annotate(joined=_JoinedText("ciphertext"))
        .values("joined")
    )
    return Subquery(joined[:1], output_field=models.TextField())


# The end of a text that may be the start of a SECRET_PATTERNS shape still arriving
# (`sk-…`, `AIza…`, `ahk_…`, `Bearer …`, or the first letters of one).
_OPEN_TOKEN = re.compile(
    r"(?:(?i:b(?:e(?:a(?:r(?:e(?:r(?:\s+[A-Za-z0-9._~+/=-]*)?)?)?)?)?)?)"
    r"|s(?:k(?:-[A-Za-z0-9_-]*)?)?"
    r"|A(?:I(?:z(?:a[0-9A-Za-z_-]*)?)?)?"
    r"|a(?:h(?:k(?:_[0-9A-Za-z_-]*)?)?)?)\Z"
)


class DeltaRedactor:
    """Redacts a text that arrives in pieces (a streamed answer's deltas): each piece
    is emitted redacted, except a tail that may be the start of a secret split across
    pieces, held back until the next piece settles it (or `flush`, at the end). So no
    sequence of emitted pieces ever holds a secret, and together they are exactly the
    whole text redacted at once."""

    def __init__(self, redactor: Redactor, emit: Callable[[str], None]) -> None:
        self.redactor, self.emit, self.held = redactor, emit, ""

    def __call__(self, text: str) -> None:
        pending = self.held + text  # held back raw: a secret in it is not whole yet
        cut = self._safe_end(pending)
        self.held = pending[cut:]
        if cut:
            self.emit(self.redactor.text(pending[:cut]))

    def flush(self) -> None:
        if self.held:
            held, self.held = self.held, ""
            self.emit(self.redactor.text(held))

    def _safe_end(self, text: str) -> int:
        """Where the tail that might still grow into a secret starts, moved back to
        the start of any whole secret it would cut in two."""
        shape = _OPEN_TOKEN.search(text)
        cut = shape.start() if shape else len(text)
        for secret in self.redactor.secrets:
            for size in range(min(len(secret) - 1, len(text)), 0, -1):
                if text.endswith(secret[:size]):
                    cut = min(cut, len(text) - size)
                    break
        for secret in self.redactor.secrets:
            found = text.find(secret, max(0, cut - len(secret) + 1))
            if -1 < found < cut < found + len(secret):
                cut = found
        return cut


def redact_response(response: ModelResponse, secrets: Iterable[str]) -> ModelResponse:
    """What a provider answered, redacted before anything uses it: its text, its tool
    calls' arguments (an agent must not smuggle a key into a proposal or a child turn)
    and its raw body."""
    redactor = _Plain(secrets)
    calls = tuple(
        replace(
            call,
            arguments=redactor.value(call.arguments) if call.arguments is not None else None,
            raw_arguments=redactor.text(call.raw_arguments),
        )
        for call in response.tool_calls
    )
    return replace(response, text=redactor.text(response.text), tool_calls=calls, raw=redactor.value(response.raw))


def redact_values(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + REDACTED, text)
    return text.replace("\x00", "\ufffd")


class _Plain(Redactor):
    """A Redactor over secrets already registered (no second registration)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = list(secrets)


class RedactingFilter(logging.Filter):
    """A logging filter (on the handlers) that redacts the secrets in use in this
    process, and key shapes, from the message and the traceback of every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = list(_IN_USE)
        message = record.getMessage()
        redacted = redact_values(message, secrets)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_values(record.exc_text, secrets)
        return True
