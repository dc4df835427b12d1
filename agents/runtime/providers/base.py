"""The provider interface: messages, tools and preset parameters in; text, tool
calls, usage and a finish reason out. Vendor adapters implement `Provider`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agents.models import Preset


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict | None  # None: the model sent arguments that are not a JSON object
    raw_arguments: str = ""
    # An opaque token the vendor wants back with the call (Gemini's thought signature,
    # base64): the model's reasoning continues from it on the next call.
    signature: str = ""


@dataclass(frozen=True)
class Message:
    role: str  # "user", "assistant" or "tool"
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""
    is_error: bool = False


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0  # every prompt token, cached ones included
    output_tokens: int = 0
    cached_input_tokens: int = 0  # read from the provider's cache
    cache_write_input_tokens: int = 0  # written to it (Anthropic prices them apart)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_input_tokens + other.cache_write_input_tokens,
        )


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system_prefix: str  # stable, cacheable: sent first and unchanged
    system_volatile: str  # after the prefix
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    temperature: float = 1.0
    top_p: float = 0.95
    max_output_tokens: int | None = None
    timeout_seconds: float = 60.0
    reasoning_effort: str | None = None
    service_tier: str | None = None
    base_url: str = ""
    stream: bool = False
    api_key: str = field(default="", repr=False)  # never logged: see agents.runtime.debug

    @classmethod
    def question(
        cls, preset: Preset, *, system: str, text: str, max_output_tokens: int, **fields: object
    ) -> ModelRequest:
        """One user message `text` to `preset`'s model, with its sampling and address (a
        direct completion, a preset's check); `fields` set the rest (timeout, key…)."""
        return cls(
            model=preset.model,
            system_prefix=system,
            system_volatile="",
            messages=(Message(role="user", content=text),),
            temperature=preset.temperature,
            top_p=preset.top_p,
            max_output_tokens=max_output_tokens,
            base_url=preset.base_url,
            **fields,
        )

    @property
    def system_text(self) -> str:
        return f"{self.system_prefix}\n\n{self.system_volatile}" if self.system_volatile else self.system_prefix

    def parameters(self) -> dict:
        """The parameters asked for (no secret); `Provider.sent_parameters` says which
        of them the vendor was sent, and how."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_output_tokens": self.max_output_tokens,
            "timeout_seconds": self.timeout_seconds,
            "reasoning_effort": self.reasoning_effort,
            "service_tier": self.service_tier,
            "base_url": self.base_url,
            "stream": self.stream,
        }


@dataclass(frozen=True)
class ModelResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str = "stop"  # "stop", "tool_calls", "length"
    raw: dict = field(default_factory=dict)


class ProviderError(Exception):
    """A failed model call, mapped to a small set of kinds a person can act on."""

    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    UNAVAILABLE = "unavailable"
    QUOTA = "quota"
    BAD_REQUEST = "bad_request"
    TIMEOUT = "timeout"
    INVALID_RESPONSE = "invalid_response"
    NOT_CONFIGURED = "not_configured"
    INTERNAL = "internal"  # a bug in an adapter: logged with its traceback, reported without

    def __init__(self, kind: str, message: str, *, status_code: int | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code


class Provider(Protocol):
    name: str

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        """Answer `request`; when `on_delta` is given, text is passed to it as it arrives."""
        ...

    def sent_parameters(self, request: ModelRequest) -> dict:
        """The parameters of `request` as this adapter puts them on the wire (what a
        debug log records: a parameter the vendor does not take is not there)."""
        ...
