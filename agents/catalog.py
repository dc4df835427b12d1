"""The model catalog: providers, their models, limits and list prices.

The data ships as `agents/catalog.json`. `settings.AIHUMMER_MODEL_CATALOG_EXTRA` may name a
JSON file of the same shape whose models are added to (or, by name, replace) those of a
built-in provider. Providers themselves are code (one adapter each), so an extension file
cannot add one. Both files are validated strictly; a mistake raises `ImproperlyConfigured`
naming the file, the provider and the model.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.signals import setting_changed
from django.dispatch import receiver

CATALOG_PATH = Path(__file__).with_name("catalog.json")
SCHEMA = 1
PROVIDER_NAMES = ("openai", "anthropic", "gemini", "echo")

_MICRO_USD = Decimal("0.000001")
_TOKENS_PER_MTOK = Decimal(1_000_000)
# The JSON type of each model key; Decimal means a price written as a string ("0.40"),
# so it loads exactly instead of through a binary float.
_MODEL_FIELDS: dict[str, type] = {
    "name": str,
    "label": str,
    "context_window": int,
    "max_output_tokens": int,
    "streaming": bool,
    "tools": bool,
    "vision": bool,
    "input_per_mtok": Decimal,
    "output_per_mtok": Decimal,
    "cached_input_per_mtok": Decimal,
}
# Optional model keys (None when absent).
_OPTIONAL_MODEL_FIELDS: dict[str, type] = {"cache_write_per_mtok": Decimal}


@dataclass(frozen=True)
class ModelInfo:
    provider: str
    name: str
    label: str
    context_window: int
    max_output_tokens: int
    streaming: bool
    tools: bool
    vision: bool
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal
    # What writing a token to the provider's cache costs (Anthropic: 1.25x input); None:
    # the input price.
    cache_write_per_mtok: Decimal | None = None


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    label: str
    accepts_base_url: bool
    models: tuple[ModelInfo, ...]


# --- Reading and validating ------------------------------------------------------------


def _read_json(path: Path, *, setting: str = "") -> Any:
    prefix = f"{setting}: " if setting else ""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImproperlyConfigured(f"{prefix}cannot read {str(path)!r} ({exc.strerror}).") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"{prefix}{path} is not valid JSON ({exc}).") from exc


def _mapping(value: Any, where: str, *, required: set[str], optional: frozenset[str] = frozenset()) -> dict:
    """`value` as a JSON object holding every required key and nothing unknown (typos fail)."""
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{where}: expected an object, not {type(value).__name__}.")
    missing = sorted(required - value.keys())
    if missing:
        raise ImproperlyConfigured(f"{where}: missing {', '.join(repr(k) for k in missing)}.")
    unknown = sorted(value.keys() - required - optional)
    if unknown:
        raise ImproperlyConfigured(f"{where}: unknown key {', '.join(repr(k) for k in unknown)}.")
    return value


def _field(value: Any, key: str, kind: type, where: str) -> Any:
    """One model value, checked against its JSON type."""
    if kind is str and isinstance(value, str) and value.strip():
        return value
    # bool is a subclass of int: `true` must not pass as a token count.
    if kind is int and isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if kind is bool and isinstance(value, bool):
        return value
    if kind is Decimal and isinstance(value, str):
        try:
            price = Decimal(value)
        except InvalidOperation:
            price = None
        if price is not None and price.is_finite():
            if price < 0:
                raise ImproperlyConfigured(f"{where}: {key} must be at least 0, not {value!r}.")
            return price
    expected = {
        str: "a non-empty string",
        int: "a positive integer",
        bool: "true or false",
        Decimal: 'a price in a string, such as "0.40"',
    }[kind]
    raise ImproperlyConfigured(f"{where}: {key} must be {expected}, not {json.dumps(value)}.")


def _parse_model(raw: Any, *, provider: str, index: int, source: str) -> ModelInfo:
    name = raw.get("name") if isinstance(raw, dict) else None
    label = repr(name) if isinstance(name, str) and name.strip() else f"#{index + 1}"
    where = f"{source}: provider {provider!r}, model {label}"
    values = _mapping(raw, where, required=set(_MODEL_FIELDS), optional=frozenset(_OPTIONAL_MODEL_FIELDS))
    fields = {key: _field(values[key], key, kind, where) for key, kind in _MODEL_FIELDS.items()}
    for key, kind in _OPTIONAL_MODEL_FIELDS.items():
        if key in values:
            fields[key] = _field(values[key], key, kind, where)
    if fields["max_output_tokens"] > fields["context_window"]:
        raise ImproperlyConfigured(
            f"{where}: max_output_tokens ({fields['max_output_tokens']}) "
            f"exceeds context_window ({fields['context_window']})."
        )
    return ModelInfo(provider=provider, **fields)


def _parse_models(raw: Any, *, provider: str, source: str) -> tuple[ModelInfo, ...]:
    if not isinstance(raw, list):
        raise ImproperlyConfigured(f"{source}: provider {provider!r}: models must be a list.")
    models = tuple(_parse_model(item, provider=provider, index=i, source=source) for i, item in enumerate(raw))
    seen: set[str] = set()
    for model in models:
        if model.name in seen:
            raise ImproperlyConfigured(f"{source}: provider {provider!r}, model {model.name!r}: listed twice.")
        seen.add(model.name)
    return models


def _parse_providers(data: Any, source: str) -> dict[str, Any]:
    """The `providers` object of a catalog document, after checking the envelope."""
    root = _mapping(data, source, required={"schema", "providers"}, optional=frozenset({"notes"}))
    if root["schema"] != SCHEMA:
        raise ImproperlyConfigured(f"{source}: schema must be {SCHEMA}, not {json.dumps(root['schema'])}.")
    if not isinstance(root["providers"], dict):
        raise ImproperlyConfigured(f"{source}: providers must be an object.")
    return root["providers"]


@functools.cache
def _shipped() -> dict[str, ProviderInfo]:
    """The built-in catalog alone: what `provider_choices` uses, so it never depends on settings."""
    source = str(CATALOG_PATH)
    raw_providers = _parse_providers(_read_json(CATALOG_PATH), source)
    if set(raw_providers) != set(PROVIDER_NAMES):
        raise ImproperlyConfigured(f"{source}: providers must be exactly {', '.join(PROVIDER_NAMES)}.")
    catalog = {}
    for name in PROVIDER_NAMES:
        where = f"{source}: provider {name!r}"
        raw = _mapping(raw_providers[name], where, required={"label", "accepts_base_url", "models"})
        catalog[name] = ProviderInfo(
            name=name,
            label=_field(raw["label"], "label", str, where),
            accepts_base_url=_field(raw["accepts_base_url"], "accepts_base_url", bool, where),
            models=_parse_models(raw["models"], provider=name, source=source),
        )
    return catalog


def _extension_path(value: str) -> Path:
    path = Path(value)
    # Relative to the project, so the web process and the workers read the same file.
    return path if path.is_absolute() else Path(settings.BASE_DIR) / path


def _merge(base: ProviderInfo, extra: tuple[ModelInfo, ...]) -> ProviderInfo:
    replacements = {model.name: model for model in extra}
    kept = [replacements.pop(model.name, model) for model in base.models]
    return ProviderInfo(
        name=base.name,
        label=base.label,
        accepts_base_url=base.accepts_base_url,
        models=(*kept, *(model for model in extra if model.name in replacements)),
    )


def _apply_extension(catalog: dict[str, ProviderInfo], path: Path) -> dict[str, ProviderInfo]:
    source = str(path)
    raw_providers = _parse_providers(_read_json(path, setting="AIHUMMER_MODEL_CATALOG_EXTRA"), source)
    merged = dict(catalog)
    for name, raw in raw_providers.items():
        if name not in catalog:
            raise ImproperlyConfigured(
                f"{source}: provider {name!r} is not built in; an extension file can only add models "
                f"to {', '.join(PROVIDER_NAMES)} (a provider needs an adapter, which is code)."
            )
        # Labels and base-URL support describe the adapter, and labels feed model choices.
        values = _mapping(raw, f"{source}: provider {name!r}", required={"models"})
        merged[name] = _merge(catalog[name], _parse_models(values["models"], provider=name, source=source))
    return merged


# --- Public API ------------------------------------------------------------------------


@functools.cache
def load_catalog() -> dict[str, ProviderInfo]:
    """Every provider, in `PROVIDER_NAMES` order: the shipped file plus the extension file.

    Cached for the process; the setting is read on the first call, never at import.
    """
    catalog = _shipped()
    extra = settings.AIHUMMER_MODEL_CATALOG_EXTRA
    return _apply_extension(catalog, _extension_path(extra)) if extra else dict(catalog)


def clear_catalog_cache() -> None:
    """Forget the loaded catalog, so the next call re-reads the setting and the files."""
    load_catalog.cache_clear()
    _shipped.cache_clear()


@receiver(setting_changed)
def _forget_catalog_when_the_setting_changes(*, setting: str, **kwargs: Any) -> None:
    # override_settings and pytest-django's `settings` fixture send this signal.
    if setting == "AIHUMMER_MODEL_CATALOG_EXTRA":
        clear_catalog_cache()


def providers() -> list[ProviderInfo]:
    """Every provider, in `PROVIDER_NAMES` order."""
    return list(load_catalog().values())


def provider_choices() -> list[tuple[str, str]]:
    """`(name, label)` for each built-in provider, for a Django `choices=`.

    Built from the shipped file only, so migrations never depend on an extension file.
    """
    return [(info.name, info.label) for info in _shipped().values()]


def get_model(provider: str, model: str) -> ModelInfo | None:
    """The catalog entry for `model` of `provider`, or None when either is unknown."""
    info = load_catalog().get(provider)
    return next((m for m in info.models if m.name == model), None) if info else None


def model_names(provider: str) -> list[str]:
    """The model names of `provider` in catalog order; empty for an unknown provider."""
    info = load_catalog().get(provider)
    return [m.name for m in info.models] if info else []


def validate_model(provider: str, model: str, *, base_url: str = "") -> ModelInfo | None:
    """The catalog entry for `model`, or a field `ValidationError` saying what to choose.

    With a base URL (an OpenAI-compatible server such as Ollama or vLLM) any model name is
    accepted, and None is returned when the catalog does not know it.
    """
    catalog = load_catalog()
    info = catalog.get(provider)
    if info is None:
        message = f"Unknown provider {provider!r}; choose one of: {', '.join(catalog)}."
        raise ValidationError({"provider_name": [message]})
    if base_url.strip() and not info.accepts_base_url:
        takers = " and ".join(p.name for p in catalog.values() if p.accepts_base_url)
        raise ValidationError({"base_url": [f"Only the {takers} provider takes a base URL."]})
    if not model.strip():
        raise ValidationError({"model": ["A model name is required."]})
    found = get_model(provider, model)
    if found is None and not base_url.strip():
        message = (
            f"Unknown model {model!r} for provider {provider!r}; choose one of: {', '.join(model_names(provider))}."
        )
        raise ValidationError({"model": [message]})
    return found


def _or(price: Decimal | None, default: Decimal) -> Decimal:
    return default if price is None else price


def cost_usd(
    info: ModelInfo | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
    cache_write_input_tokens: int = 0,
) -> Decimal:
    """The list price of one call in USD, to the millionth of a dollar (half up).

    `input_tokens` counts every prompt token, cached ones included (as OpenAI and Gemini
    report them); `cached_input_tokens` is the part served from the provider's cache and
    is charged at the cached price, `cache_write_input_tokens` the part written to it,
    charged at the cache-write price. An unknown model on a custom server costs 0.
    """
    if min(input_tokens, output_tokens, cached_input_tokens, cache_write_input_tokens) < 0:
        raise ValueError("Token counts cannot be negative.")
    if cached_input_tokens + cache_write_input_tokens > input_tokens:
        raise ValueError(
            f"cached_input_tokens ({cached_input_tokens}) and cache_write_input_tokens ({cache_write_input_tokens}) "
            f"exceed input_tokens ({input_tokens})."
        )
    if info is None:
        return Decimal(0).quantize(_MICRO_USD)
    tokens_times_price = (
        (input_tokens - cached_input_tokens - cache_write_input_tokens) * info.input_per_mtok
        + cached_input_tokens * info.cached_input_per_mtok
        + cache_write_input_tokens * _or(info.cache_write_per_mtok, info.input_per_mtok)
        + output_tokens * info.output_per_mtok
    )
    return (tokens_times_price / _TOKENS_PER_MTOK).quantize(_MICRO_USD, rounding=ROUND_HALF_UP)
