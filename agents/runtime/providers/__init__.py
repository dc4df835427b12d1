"""Model providers behind one interface (`agents.runtime.providers.base.Provider`).

The vendor adapters (`openai_compatible`, `anthropic`, `gemini`) each talk through
their vendor's official SDK and share the few rules of `common` (retries, status
kinds, redacted messages); this module picks the adapter and reports its failures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

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


def complete(provider: Provider, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
    """`provider.complete(request, on_delta)`, where any failure is a ProviderError: an
    adapter's bug is logged with its traceback and reported as `internal`, without it."""
    try:
        with telemetry.model_call(provider, request) as call:
            response = provider.complete(request, on_delta) if on_delta else provider.complete(request)
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
