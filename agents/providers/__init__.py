"""Model providers behind one interface (`agents.providers.base.Provider`)."""

from __future__ import annotations

from agents.providers.base import Provider, ProviderError


def get_provider(name: str) -> Provider:
    """The adapter for `name`; imported lazily so an unused vendor SDK costs nothing."""
    if name == "echo":
        from agents.providers.echo import EchoProvider

        return EchoProvider()
    raise ProviderError(ProviderError.NOT_CONFIGURED, f"No adapter for provider '{name}' is installed.")
