"""Checking a preset: one tiny model call through the path the runtime takes (the
credential decrypted from the vault, a ModelRequest built from the preset, the
preset's provider adapter), answered with what worked or the mapped error."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from agents.models import Preset
from agents.redaction import Redactor
from agents.runtime.providers import complete, get_provider
from agents.runtime.providers.base import ModelRequest, ProviderError, Usage
from agents.services import preset_api_key
from aihummer.actors import Actor, Verb

CHECK_MESSAGE = "Reply with OK."
CHECK_SYSTEM_PROMPT = "This is a connectivity check."
# Enough for "OK" from any model, small enough to cost nothing. A reasoning model may
# spend it all on thinking and answer empty: the check still proves the preset works.
CHECK_MAX_OUTPUT_TOKENS = 16


@dataclass(frozen=True)
class PresetCheckResult:
    ok: bool
    provider_name: str
    model: str
    latency_ms: int = 0
    text: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    error_kind: str = ""
    error_message: str = ""


def preset_check(*, preset: Preset, actor: Actor) -> PresetCheckResult:
    """Send "Reply with OK." with `preset` and report the model's answer, latency and
    tokens, or the provider error's kind and message (a missing or unreadable credential
    is `not_configured`, an adapter's bug `internal`), within the preset's timeout.
    Running a model is the RUN right (SANDBOX for a sandbox preset, as for agent turns);
    nothing is written."""
    actor.require(Verb.SANDBOX if preset.is_sandbox else Verb.RUN, preset.workspace)
    base = PresetCheckResult(ok=False, provider_name=preset.provider_name, model=preset.model)
    # What the provider says back is shown: any secret of the workspace in it is not.
    redactor = Redactor.for_workspace(preset.workspace_id)
    try:
        provider = get_provider(preset.provider_name)  # imports the SDK: not part of the call's time
        request = _check_request(preset, preset_api_key(preset=preset))
    except ProviderError as exc:
        return replace(base, error_kind=exc.kind, error_message=exc.message)
    started = time.monotonic()
    try:
        response = complete(provider, request)
    except ProviderError as exc:
        message = redactor.text(exc.message)
        return replace(base, latency_ms=_since(started), error_kind=exc.kind, error_message=message)
    return replace(
        base,
        ok=True,
        latency_ms=_since(started),
        text=redactor.text(response.text),
        finish_reason=response.finish_reason,
        usage=response.usage,
    )


def _check_request(preset: Preset, api_key: str) -> ModelRequest:
    return ModelRequest.question(
        preset,
        system=CHECK_SYSTEM_PROMPT,
        text=CHECK_MESSAGE,
        max_output_tokens=min(preset.max_output_tokens or CHECK_MAX_OUTPUT_TOKENS, CHECK_MAX_OUTPUT_TOKENS),
        timeout_seconds=preset.timeout_seconds,
        stream=preset.streaming_enabled,
        api_key=api_key,
    )


def _since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
