"""What a debug log may hold: secrets redacted, bodies bounded."""

from __future__ import annotations

import re

from django.conf import settings

REDACTED = "[redacted]"
# Shapes of well-known secrets, redacted even when nobody told us the value.
SECRET_PATTERNS = [
    re.compile(r"sk-[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic (sk-ant-...)
    re.compile(r"AIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"ahk_\d+_[A-Za-z0-9_-]{20,}"),  # our own API keys
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/-]{20,}=*"),
]


def redact_text(text: str, secrets: list[str], *, bound: bool = True) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + REDACTED, text)
    limit = settings.AIHUMMER_DEBUG_MAX_CHARS
    if bound and len(text) > limit:
        text = f"{text[:limit]}… [{len(text) - limit} more characters not kept]"
    return text


def redact(value: object, secrets: list[str]) -> object:
    """`value` (JSON-like) with every string redacted and bounded."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value
