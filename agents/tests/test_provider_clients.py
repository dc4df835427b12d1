"""The vendor SDK clients are shared (one per process and configuration): what a shared
client must never do, through each vendor's SDK against a local server that speaks
the vendor's protocol over HTTP/1.1 keep-alive, one thread per connection. No timing
is asserted: a hang shows as a timeout error where an answer was due."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.models import Agent
from agents.runtime import agent_turn_run
from agents.runtime.providers import get_provider
from agents.runtime.providers.base import Message, ModelRequest, ProviderError
from agents.services import agent_create, credential_update
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset
from workflows.tests.fake_openai import chat_completion, tokens

KEY_A = "sk-test-aaaaaaaaaaaaaaaaaaaaaaaa"
KEY_B = "sk-test-bbbbbbbbbbbbbbbbbbbbbbbb"


def user_text(vendor: str, body: dict) -> str:
    if vendor == "gemini":
        return body["contents"][-1]["parts"][0]["text"]
    return body["messages"][-1]["content"]


def openai_answer(body: dict) -> dict:
    return chat_completion(f"re: {user_text('openai', body)}", model=body["model"], usage=tokens(1, 1))


def anthropic_answer(body: dict) -> dict:
    text = user_text("anthropic", body)
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": f"re: {text}"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def gemini_answer(body: dict) -> dict:
    text = user_text("gemini", body)
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": f"re: {text}"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    }


# vendor: (base path, endpoint, model, the answer)
VENDORS = {
    "openai": ("/v1", "/v1/chat/completions", "gpt-4.1", openai_answer),
    "anthropic": ("/", "/v1/messages", "claude-haiku-4-5", anthropic_answer),
    "gemini": ("/", "/v1/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", gemini_answer),
}
KEY_HEADERS = ("Authorization", "x-api-key", "x-goog-api-key")  # the SDKs' choices


class _Listener(ThreadingHTTPServer):
    request_queue_size = 128  # many clients connect at once


class Server:
    """A vendor's endpoint over HTTP/1.1 with keep-alive, a thread per connection
    (werkzeug's test server closes every connection: nothing to share there). It
    answers `re: <the message>`; a message starting with `slow` gets its headers and
    half its body, then the rest `slow` seconds later. It records each request's client
    port (its connection), key and message."""

    def __init__(self, vendor: str, *, slow: float = 0.0, port: int = 0) -> None:
        self.vendor, self.slow = vendor, slow
        self.requests: list[tuple[int, str, str]] = []  # (client port, key, message)
        self.lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.connections.add(self.connection)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.answer(self, body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = _Listener(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{VENDORS[self.vendor][0]}"

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        message = user_text(self.vendor, body)
        key = next(filter(None, map(handler.headers.get, KEY_HEADERS)), "").removeprefix("Bearer ")
        with self.lock:
            self.requests.append((handler.client_address[1], key, message))
        payload = json.dumps(VENDORS[self.vendor][3](body)).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if message.startswith("slow"):
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            time.sleep(self.slow)
            payload = payload[len(payload) // 2 :]
        try:
            handler.wfile.write(payload)
        except OSError:
            handler.close_connection = True  # the client gave up on this one

    def keys_by_connection(self) -> dict[int, set[str]]:
        keys = defaultdict(set)
        for port, key, _ in self.requests:
            keys[port].add(key)
        return keys

    def stop(self) -> None:
        """Stop listening and close every open connection, as a restarted server does."""
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.lock:
            for connection in self.connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(vendor: str, **options: object) -> Server:
        started.append(Server(vendor, **options))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def request_for(server: Server, message: str, *, key: str = KEY_A, timeout: float = 10.0) -> ModelRequest:
    return ModelRequest(
        model=VENDORS[server.vendor][2],
        system_prefix="Be terse.",
        system_volatile="",
        messages=(Message(role="user", content=message),),
        timeout_seconds=timeout,
        base_url=server.base_url,
        api_key=key,
    )


@pytest.fixture(autouse=True)
def no_retries(settings) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0


@pytest.mark.parametrize("vendor", VENDORS)
def test_calls_of_one_configuration_share_a_connection(servers, vendor):
    server = servers(vendor)
    provider = get_provider(vendor)

    answers = [provider.complete(request_for(server, f"call {i}")).text for i in range(3)]

    assert answers == ["re: call 0", "re: call 1", "re: call 2"]
    assert len(server.keys_by_connection()) == 1  # kept alive: one connection for the three


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_rotated_key_is_sent_from_the_next_call_on(servers, vendor):
    server = servers(vendor)
    provider = get_provider(vendor)

    provider.complete(request_for(server, "before", key=KEY_A))
    provider.complete(request_for(server, "after", key=KEY_B))

    assert [(key, message) for _, key, message in server.requests] == [(KEY_A, "before"), (KEY_B, "after")]


@pytest.mark.parametrize("vendor", VENDORS)
def test_two_keys_never_share_a_connection(servers, vendor):
    server = servers(vendor)
    provider = get_provider(vendor)

    for i in range(6):
        provider.complete(request_for(server, f"call {i}", key=(KEY_A, KEY_B)[i % 2]))

    assert [key for _, key, _ in server.requests] == [KEY_A, KEY_B] * 3
    assert sorted(map(sorted, server.keys_by_connection().values())) == [[KEY_A], [KEY_B]]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_call_cut_mid_response_leaves_the_client_usable(servers, vendor):
    server = servers(vendor, slow=1.0)
    provider = get_provider(vendor)
    provider.complete(request_for(server, "warm"))  # a kept-alive connection in the pool

    with pytest.raises(ProviderError) as cut:
        provider.complete(request_for(server, "slow one", timeout=0.3))
    after = provider.complete(request_for(server, "next", timeout=5.0))

    assert cut.value.kind == ProviderError.TIMEOUT
    assert after.text == "re: next"
    # The cut connection was dropped, not handed to the next call half-read.
    ports = [port for port, _, _ in server.requests]
    assert ports[0] == ports[1] != ports[2]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_connection_the_server_closed_is_replaced(servers, vendor):
    first = servers(vendor)
    provider = get_provider(vendor)
    provider.complete(request_for(first, "before"))
    first.stop()  # the kept-alive connection is closed by the server
    again = servers(vendor, port=first.port)

    answer = provider.complete(request_for(again, "after", timeout=5.0))

    assert answer.text == "re: after"


@pytest.mark.parametrize("vendor", VENDORS)
def test_fifty_concurrent_calls_each_get_their_own_answer_and_deadline(servers, vendor):
    server = servers(vendor, slow=1.5)
    provider = get_provider(vendor)

    def call(i: int) -> str:
        # Every fifth call is slow with a short deadline; the others have time.
        slow = i % 5 == 0
        message, timeout = (f"slow {i}", 0.5) if slow else (f"call {i}", 20.0)
        try:
            return provider.complete(request_for(server, message, key=(KEY_A, KEY_B)[i % 2], timeout=timeout)).text
        except ProviderError as exc:
            return exc.kind

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(call, range(50)))

    assert answers == [ProviderError.TIMEOUT if i % 5 == 0 else f"re: call {i}" for i in range(50)]
    assert all(len(keys) == 1 for keys in server.keys_by_connection().values())
    # Each request came with its own call's key (a slow call may have run out of time
    # before it was even sent).
    sent = {int(message.split()[1]): key for _, key, message in server.requests}
    assert set(sent) >= {i for i in range(50) if i % 5}
    assert sent == {i: (KEY_A, KEY_B)[i % 2] for i in sent}


def test_a_rotated_credential_is_used_by_the_next_turn(servers, workspace, ada, alice):
    server = servers("openai")
    actor = Actor.for_user(ada)
    credential = vault_preset(
        workspace, server.base_url, secret=KEY_A, credential_key="local", by=actor, is_active=True
    ).credential
    agent = agent_create(workspace=workspace, actor=actor, key="writer", name="Writer")
    first = agent_turn_run(agent=agent, message="one", actor=Actor.for_user(alice))

    credential_update(credential=credential, actor=actor, secret=KEY_B)
    second = agent_turn_run(agent=Agent.objects.get(pk=agent.pk), message="two", actor=Actor.for_user(alice))

    assert (first.status, second.status) == ("succeeded", "succeeded")
    assert [(key, message) for _, key, message in server.requests] == [(KEY_A, "one"), (KEY_B, "two")]
