"""The rules every vendor adapter shares: how many retries the SDK may make, which kind
an HTTP status maps to, and that an error message never carries the API key. Apart from
the package's `__init__` (which picks the adapters) so an adapter imports no module that
imports it back."""

from __future__ import annotations

from django.conf import settings

from agents.runtime.debug import redact_text
from agents.runtime.providers.base import ModelRequest, ProviderError


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


def unreachable_error(request: ModelRequest, vendor_api: str, cause: object = None) -> ProviderError:
    """No connection to the preset's server (its base URL, else `vendor_api`), and why
    when the SDK says."""
    why = f" ({cause})" if cause else ""
    return provider_error(ProviderError.UNAVAILABLE, f"Cannot reach {request.base_url or vendor_api}{why}.", request)


def require_api_key(request: ModelRequest) -> None:
    """Refuse before any network call when the runtime found no key to send."""
    if not request.api_key:
        raise ProviderError(ProviderError.AUTH, "No API key: set the preset's credential.")
