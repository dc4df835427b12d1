"""Model providers behind one interface (`agents.runtime.providers.base.Provider`).

The vendor adapters (`openai_compatible`, `anthropic`, `gemini`) each talk through
their vendor's official SDK and share the few rules of `shared.py`: how many retries
the SDK may make, which kind an HTTP status maps to, and that an error message never
carries the API key.
"""

from __future__ import annotations

from agents.runtime.providers.base import Provider, ProviderError


def get_provider(name: str) -> Provider:
    """The adapter for `name`; imported lazily so an unused vendor SDK costs nothing.
    A missing SDK is a `not_configured` error, not a crash."""
    try:
        return _adapter(name)
    except ImportError as exc:
        raise ProviderError(
            ProviderError.NOT_CONFIGURED, f"The {name} adapter cannot load its SDK ({exc.name or exc})."
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
