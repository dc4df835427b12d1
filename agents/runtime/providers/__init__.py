"""Model providers behind one interface (`agents.runtime.providers.base.Provider`).

The vendor adapters (`openai_compatible`, `anthropic`, `gemini`) each talk through
their vendor's official SDK and share the few rules below: how many retries the SDK
may make, which kind an HTTP status maps to, and that an error message never carries
the API key.
"""

from __future__ import annotations

import logging

from django.conf import settings

from agents.runtime.debug import redact_text
from agents.runtime.providers.base import ModelRequest, ModelResponse, Provider, ProviderError
from aihummer import telemetry

logger = logging.getLogger(__name__)


def get_provider(name: str) -> Provider:
    """The adapter for `name`; imported lazily so an unused vendor SDK costs nothing.
    A missing SDK is a `not_configured` error, not a crash."""
    try:
        return _adapter(name)
    except ImportError as exc:
        raise ProviderError(
            ProviderError.NOT_CONFIGURED, f"The {name} adapter cannot load its SDK ({exc.name or exc})."
        ) from None


def complete(provider: Provider, request: ModelRequest) -> ModelResponse:
    """`provider.complete(request)`, where any failure is a ProviderError: an adapter's
    bug is logged with its traceback and reported as `internal`, without it."""
    try:
        with telemetry.model_call(provider, request) as call:
            response = provider.complete(request)
            call.done(response)
        return response
    except ProviderError:
        raise
    except Exception as exc:
        name = getattr(provider, "name", "?")
        logger.exception("Provider %s failed unexpectedly", name)
        raise ProviderError(
            ProviderError.INTERNAL, f"Internal error in the {name} adapter ({type(exc).__name__}); it was logged."
        ) from None


def _adapter(name: str) -> Provider:
    if name == "echo":
        from agents.runtime.providers.echo import EchoProvider

        return EchoProvider()
    if name == "openai":
        from agents.runtime.providers.openai_compatible import OpenAICompatibleProvider

        return OpenAICompatibleProvider()
    if name == "anthropic":
        from agents.runtime.providers.anthropic import AnthropicProvider

        return AnthropicProvider()
    if name == "gemini":
        from agents.runtime.providers.gemini import GeminiProvider

        return GeminiProvider()
    raise ProviderError(ProviderError.NOT_CONFIGURED, f"No adapter for provider '{name}' is installed.")


# --- shared by the vendor adapters ------------------------------------------------------
def max_retries() -> int:
    """Retries of a transient failure (429, 5xx, connection error) that the vendor SDK
    makes itself, with its own backoff; read at call time so tests can change it."""
    return settings.AIHUMMER_PROVIDER_MAX_RETRIES


def kind_for_status(status: int) -> str:
    """The ProviderError kind of an HTTP error status (vendor adapters refine 429 and 400)."""
    if status in (401, 403):
        return ProviderError.AUTH
    if status == 402:
        return ProviderError.QUOTA
    if status == 408:
        return ProviderError.TIMEOUT
    if status == 429:
        return ProviderError.RATE_LIMIT
    if status >= 500:
        return ProviderError.UNAVAILABLE
    return ProviderError.BAD_REQUEST


def provider_error(
    kind: str, message: object, request: ModelRequest, *, status_code: int | None = None
) -> ProviderError:
    """A ProviderError whose message is the provider's own words, with the API key (and
    anything shaped like a key) redacted: some vendors echo part of a rejected key."""
    text = redact_text(str(message or "").strip(), [request.api_key]) or f"HTTP {status_code}"
    return ProviderError(kind, text, status_code=status_code)


def timeout_error(request: ModelRequest, after: str = "") -> ProviderError:
    """The call ran out of its `timeout_seconds` (retries included)."""
    reason = f" (gave up retrying after {after})" if after else ""
    return ProviderError(ProviderError.TIMEOUT, f"No answer within {request.timeout_seconds:.3g} s{reason}.")


def require_api_key(request: ModelRequest) -> None:
    """Refuse before any network call when the runtime found no key to send."""
    if not request.api_key:
        raise ProviderError(ProviderError.AUTH, "No API key: set the preset's credential.")
