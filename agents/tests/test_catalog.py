import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from agents.catalog import (
    PROVIDER_NAMES,
    ModelInfo,
    clear_catalog_cache,
    cost_usd,
    get_model,
    load_catalog,
    model_names,
    provider_choices,
    providers,
    validate_model,
)

OPENAI_MODELS = "gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini, o4-mini, gpt-5, gpt-5-mini"
PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")


def a_model(name: str, **overrides: object) -> dict:
    return {
        "name": name,
        "label": name.title(),
        "context_window": 32_768,
        "max_output_tokens": 4_096,
        "streaming": True,
        "tools": True,
        "vision": False,
        "input_per_mtok": "1.00",
        "output_per_mtok": "2.00",
        "cached_input_per_mtok": "0.50",
    } | overrides


@pytest.fixture(autouse=True)
def shipped_catalog(settings):
    """Each test starts from the shipped file alone, whatever the environment says, and leaves no cache."""
    settings.AIHUMMER_MODEL_CATALOG_EXTRA = ""
    clear_catalog_cache()
    yield
    clear_catalog_cache()


@pytest.fixture
def extension(settings, tmp_path: Path):
    """Write an extension file and point the setting at it."""
    path = tmp_path / "extra-models.json"

    def write(document: object) -> Path:
        path.write_text(document if isinstance(document, str) else json.dumps(document))
        settings.AIHUMMER_MODEL_CATALOG_EXTRA = str(path)
        clear_catalog_cache()
        return path

    return write


def error_messages(excinfo: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return excinfo.value.message_dict


# --- The shipped catalog ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("gemini", "gemini-2.5-flash"),
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-4.1-mini"),
        ("echo", "echo-1"),
    ],
)
def test_the_required_models_are_shipped_with_positive_limits(provider, model):
    info = get_model(provider, model)

    assert info is not None
    assert (info.provider, info.name) == (provider, model)
    assert 0 < info.max_output_tokens <= info.context_window


def test_every_shipped_price_is_an_exact_non_negative_decimal_and_echo_is_free():
    models = [model for provider in providers() for model in provider.models]
    echo = get_model("echo", "echo-1")

    assert len(models) == 17
    for model in models:
        for field in PRICE_FIELDS:
            price = getattr(model, field)
            assert isinstance(price, Decimal), (model.name, field)
            assert price >= 0, (model.name, field)
    assert get_model("openai", "gpt-4.1-mini").input_per_mtok == Decimal("0.40")
    assert [getattr(echo, field) for field in PRICE_FIELDS] == [Decimal(0)] * 3
    assert (echo.context_window, echo.max_output_tokens, echo.streaming, echo.tools, echo.vision) == (
        1_000_000,
        100_000,
        True,
        True,
        False,
    )


def test_provider_choices_are_the_built_in_providers_in_a_fixed_order():
    assert provider_choices() == [
        ("openai", "OpenAI (or any OpenAI-compatible server by base URL)"),
        ("anthropic", "Anthropic"),
        ("gemini", "Google Gemini"),
        ("echo", "Echo (offline test provider)"),
    ]
    assert [provider.name for provider in providers()] == list(PROVIDER_NAMES)


def test_only_openai_accepts_a_base_url():
    assert [provider.name for provider in providers() if provider.accepts_base_url] == ["openai"]


def test_model_names_follow_the_catalog_order_and_an_unknown_provider_has_none():
    assert ", ".join(model_names("openai")) == OPENAI_MODELS
    assert model_names("mistral") == []
    assert get_model("mistral", "gpt-4.1") is None


# --- validate_model --------------------------------------------------------------------


def test_a_known_model_validates_to_its_catalog_entry():
    assert validate_model("anthropic", "claude-sonnet-4-5") == get_model("anthropic", "claude-sonnet-4-5")


def test_unknown_model_lists_the_providers_models():
    with pytest.raises(ValidationError) as excinfo:
        validate_model("openai", "gpt-9")

    assert error_messages(excinfo) == {
        "model": [f"Unknown model 'gpt-9' for provider 'openai'; choose one of: {OPENAI_MODELS}."]
    }


def test_a_model_of_another_provider_is_unknown():
    with pytest.raises(ValidationError) as excinfo:
        validate_model("echo", "gpt-4.1")

    assert error_messages(excinfo) == {"model": ["Unknown model 'gpt-4.1' for provider 'echo'; choose one of: echo-1."]}


def test_unknown_provider_lists_the_built_in_providers():
    with pytest.raises(ValidationError) as excinfo:
        validate_model("x", "gpt-4.1")

    assert error_messages(excinfo) == {
        "provider_name": ["Unknown provider 'x'; choose one of: openai, anthropic, gemini, echo."]
    }


def test_a_base_url_lets_openai_take_any_model_name():
    assert validate_model("openai", "llama3.1:8b", base_url="http://127.0.0.1:11434/v1") is None
    assert validate_model("openai", "gpt-4o", base_url="http://vllm.internal/v1") == get_model("openai", "gpt-4o")


@pytest.mark.parametrize("base_url", ["", "http://127.0.0.1:11434/v1"])
def test_an_empty_model_name_is_refused_with_or_without_a_base_url(base_url):
    with pytest.raises(ValidationError) as excinfo:
        validate_model("openai", "  ", base_url=base_url)

    assert error_messages(excinfo) == {"model": ["A model name is required."]}


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "echo"])
def test_a_base_url_is_refused_for_providers_that_do_not_take_one(provider):
    with pytest.raises(ValidationError) as excinfo:
        validate_model(provider, model_names(provider)[0], base_url="http://127.0.0.1:8000")

    assert error_messages(excinfo) == {"base_url": ["Only the openai provider takes a base URL."]}


# --- cost_usd --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ({"input_tokens": 1_000_000, "output_tokens": 0}, Decimal("0.400000")),
        ({"input_tokens": 0, "output_tokens": 1_000_000}, Decimal("1.600000")),
        # 600k uncached at 0.40 + 400k cached at 0.10 + 10k output at 1.60.
        ({"input_tokens": 1_000_000, "output_tokens": 10_000, "cached_input_tokens": 400_000}, Decimal("0.296000")),
        ({"input_tokens": 1, "output_tokens": 1}, Decimal("0.000002")),  # 0.0000004 + 0.0000016
        ({"input_tokens": 0, "output_tokens": 0}, Decimal("0.000000")),
    ],
)
def test_cost_prices_uncached_cached_and_output_tokens_exactly(tokens, expected):
    cost = cost_usd(get_model("openai", "gpt-4.1-mini"), **tokens)

    assert cost == expected
    assert cost.as_tuple().exponent == -6


def test_cost_rounds_half_a_millionth_up():
    nano = get_model("openai", "gpt-4.1-nano")  # cached input at 0.025 per million

    assert cost_usd(nano, input_tokens=20, output_tokens=0, cached_input_tokens=20) == Decimal("0.000001")


def test_an_unknown_model_and_the_echo_model_cost_nothing():
    assert cost_usd(None, input_tokens=5_000, output_tokens=5_000) == Decimal("0")
    assert cost_usd(get_model("echo", "echo-1"), input_tokens=10**9, output_tokens=10**6) == Decimal("0")


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (
            {"input_tokens": 10, "output_tokens": 0, "cached_input_tokens": 11},
            r"cached_input_tokens \(11\) and cache_write_input_tokens \(0\) exceed input_tokens \(10\)",
        ),
        ({"input_tokens": -1, "output_tokens": 0}, "Token counts cannot be negative"),
    ],
)
def test_cost_refuses_impossible_token_counts(tokens, message):
    with pytest.raises(ValueError, match=message):
        cost_usd(get_model("openai", "gpt-4o"), **tokens)


# --- The extension file ----------------------------------------------------------------


def test_an_extension_file_adds_models_and_replaces_by_name(extension):
    extension(
        {
            "schema": 1,
            "providers": {
                "openai": {"models": [a_model("gpt-4o", input_per_mtok="2.00"), a_model("gpt-oss-120b")]},
                "gemini": {"models": [a_model("gemini-3-pro-preview")]},
            },
        }
    )

    assert model_names("openai") == [*OPENAI_MODELS.split(", "), "gpt-oss-120b"]
    assert get_model("openai", "gpt-4o").input_per_mtok == Decimal("2.00")
    assert get_model("gemini", "gemini-3-pro-preview") == ModelInfo(
        provider="gemini",
        name="gemini-3-pro-preview",
        label="Gemini-3-Pro-Preview",
        context_window=32_768,
        max_output_tokens=4_096,
        streaming=True,
        tools=True,
        vision=False,
        input_per_mtok=Decimal("1.00"),
        output_per_mtok=Decimal("2.00"),
        cached_input_per_mtok=Decimal("0.50"),
    )
    assert validate_model("openai", "gpt-oss-120b").name == "gpt-oss-120b"
    assert model_names("anthropic") == [
        "claude-sonnet-4-5",
        "claude-opus-4-1",
        "claude-haiku-4-5",
        "claude-3-5-haiku-latest",
    ]


def test_the_extension_is_read_when_first_used_and_forgotten_when_the_setting_changes(extension, settings):
    extension({"schema": 1, "providers": {"echo": {"models": [a_model("echo-2")]}}})
    assert model_names("echo") == ["echo-1", "echo-2"]

    settings.AIHUMMER_MODEL_CATALOG_EXTRA = ""

    assert model_names("echo") == ["echo-1"]


def test_provider_choices_do_not_depend_on_the_extension(extension):
    before = provider_choices()
    extension({"schema": 1, "providers": {"openai": {"models": [a_model("local")]}}})

    assert provider_choices() == before


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"providers": {}}, "missing 'schema'"),
        ({"schema": 2, "providers": {}}, "schema must be 1, not 2"),
        ({"schema": 1, "providers": {}, "provider": {}}, "unknown key 'provider'"),
        (
            {"schema": 1, "providers": {"mistral": {"models": []}}},
            "provider 'mistral' is not built in; an extension file can only add models to openai, anthropic, gemini",
        ),
        (
            {"schema": 1, "providers": {"openai": {"label": "Mine", "models": []}}},
            "provider 'openai': unknown key 'label'",
        ),
        ({"schema": 1, "providers": {"openai": {"models": {}}}}, "provider 'openai': models must be a list"),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", input_per_mtok="-0.01")]}}},
            "provider 'openai', model 'x': input_per_mtok must be at least 0, not '-0.01'",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", output_per_mtok=0.4)]}}},
            "provider 'openai', model 'x': output_per_mtok must be a price in a string, such as \"0.40\", not 0.4",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", cached_input_per_mtok="cheap")]}}},
            "model 'x': cached_input_per_mtok must be a price in a string",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", context_window="128000")]}}},
            "model 'x': context_window must be a positive integer, not \"128000\"",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", max_output_tokens=0)]}}},
            "model 'x': max_output_tokens must be a positive integer, not 0",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", tools="yes")]}}},
            "model 'x': tools must be true or false, not \"yes\"",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", max_output_tokens=65_536)]}}},
            "model 'x': max_output_tokens (65536) exceeds context_window (32768)",
        ),
        (
            {"schema": 1, "providers": {"openai": {"models": [a_model("x", vison=True)]}}},
            "model 'x': unknown key 'vison'",
        ),
        (
            {"schema": 1, "providers": {"anthropic": {"models": [{"name": "x", "label": "X"}]}}},
            "provider 'anthropic', model 'x': missing 'cached_input_per_mtok', 'context_window'",
        ),
        (
            {"schema": 1, "providers": {"gemini": {"models": [a_model("ok"), {"label": "No name"}]}}},
            "provider 'gemini', model #2: missing",
        ),
        (
            {"schema": 1, "providers": {"echo": {"models": [a_model("twin"), a_model("twin")]}}},
            "provider 'echo', model 'twin': listed twice",
        ),
    ],
)
def test_a_bad_extension_file_is_refused_naming_the_file_provider_and_model(extension, document, problem):
    path = extension(document)

    with pytest.raises(ImproperlyConfigured) as excinfo:
        load_catalog()

    assert str(excinfo.value).startswith(f"{path}: ")
    assert problem in str(excinfo.value)


def test_an_extension_file_that_is_not_json_or_missing_is_refused(extension, settings, tmp_path):
    path = extension("{not json")
    with pytest.raises(ImproperlyConfigured, match=f"AIHUMMER_MODEL_CATALOG_EXTRA: {path} is not valid JSON"):
        load_catalog()

    settings.AIHUMMER_MODEL_CATALOG_EXTRA = str(tmp_path / "missing.json")
    with pytest.raises(ImproperlyConfigured, match=r"AIHUMMER_MODEL_CATALOG_EXTRA: cannot read .*missing\.json"):
        validate_model("openai", "gpt-4.1")
