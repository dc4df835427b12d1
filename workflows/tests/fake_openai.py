"""A tiny OpenAI-protocol server for tests and benches: it answers every chat
completion after `delay` seconds, many at once (one thread per connection), over
HTTP/1.1 with keep-alive as real servers do, and records when each request started and
ended, and each request's body.

By default the answer is `answer: <last user message>`; `reply(body)` may give another
text, or a whole assistant message (a dict, e.g. with `tool_calls`). A request with
`"stream": true` is answered as Server-Sent Events, the text in `chunk_chars` pieces
`chunk_delay` seconds apart, then the usage chunk and `[DONE]`, as OpenAI streams."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


HOLD_LIMIT_SECONDS = 60  # a held request answers anyway after this: a failing test does not hang


class _Listener(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of runs connect at once


class FakeOpenAI:
    def __init__(
        self,
        delay: float = 0.0,
        *,
        fail_first: int = 0,
        reply: Callable[[dict], str | dict] | None = None,
        chunk_chars: int = 4,
        chunk_delay: float = 0.0,
        host: str = "127.0.0.1",
        hold_matching: str = "",
    ) -> None:
        self.delay = delay
        # A request whose last user message contains this waits for `release()`: a test
        # sees a step running for as long as it needs, whatever the machine's load.
        self.hold_matching = hold_matching
        self._released = threading.Event()
        self.fail_first = fail_first  # answer this many requests with a 503 first
        self.reply = reply
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        self.calls: list[tuple[float, float, str]] = []  # (started, finished, message)
        self.authorizations: list[str] = []  # the Authorization header of every request
        self.bodies: list[dict] = []  # every request's JSON body, in arrival order
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a shared client reuses its connections
            # Headers and body go out in two writes: with Nagle's algorithm the body would
            # wait for the client's delayed ACK of the headers (40 ms on Linux), as real
            # servers (uvicorn, nginx) avoid with TCP_NODELAY.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                # The client may give up (its timeout, a closed stream): nothing to answer then.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._handle()

            def _handle(self) -> None:
                started = time.monotonic()
                with server._lock:
                    server.authorizations.append(self.headers.get("Authorization", ""))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.bodies.append(body)
                message = last_user_text(body)
                time.sleep(server.delay)
                if server.hold_matching and server.hold_matching in message:
                    server._released.wait(HOLD_LIMIT_SECONDS)
                with server._lock:
                    failing = server.fail_first > 0
                    server.fail_first -= failing
                if failing:
                    error = {"error": {"message": "Overloaded", "type": "server_error", "code": None}}
                    self._answer(503, json.dumps(error).encode())
                    return
                answer = server.reply(body) if server.reply else f"answer: {message}"
                assistant = answer if isinstance(answer, dict) else {"role": "assistant", "content": answer}
                if body.get("stream"):
                    self._stream(body, assistant)
                else:
                    self._answer(200, json.dumps(completion(body, assistant)).encode())
                with server._lock:
                    server.calls.append((started, time.monotonic(), message))

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, body: dict, assistant: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")  # no length: the stream ends with the connection
                self.close_connection = True
                self.end_headers()
                text = assistant.get("content") or ""
                pieces = [text[i : i + server.chunk_chars] for i in range(0, len(text), server.chunk_chars)]
                for index, piece in enumerate(pieces):
                    delta = {"role": "assistant", "content": piece} if index == 0 else {"content": piece}
                    self._event(chunk(body, delta))
                    time.sleep(server.chunk_delay)
                for index, call in enumerate(assistant.get("tool_calls") or ()):
                    self._event(chunk(body, {"tool_calls": [{"index": index, **call}]}))
                finish = "tool_calls" if assistant.get("tool_calls") else "stop"
                self._event(chunk(body, {}, finish_reason=finish))
                self._event({**chunk(body, None), "choices": [], "usage": USAGE})
                self.wfile.write(b"data: [DONE]\n\n")

            def _event(self, data: dict) -> None:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = _Listener((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def release(self) -> None:
        """Held requests answer now, and later ones are not held."""
        self._released.set()

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


def last_user_text(body: dict) -> str:
    message = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")
    if isinstance(message, list):
        message = "".join(part.get("text", "") for part in message)
    return message


def chat_completion(
    content: str | None = None,
    *,
    model: str = "gpt-4.1",
    finish_reason: str = "stop",
    usage: dict | None = None,
    **message: object,
) -> dict:
    """An OpenAI chat completion whose assistant message says `content` (with any other
    field of that message: tool_calls, refusal…); `usage` 12 tokens in, 3 out unless given."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764480000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or tokens(12, 3),
    }


def tokens(prompt: int, completion: int) -> dict:
    """A chat completion's `usage`."""
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(body: dict, assistant: dict) -> dict:
    finish = "tool_calls" if assistant.get("tool_calls") else "stop"
    return chat_completion(**assistant, model=body["model"], finish_reason=finish, usage=USAGE)


def chunk(body: dict, delta: dict | None, finish_reason: str | None = None) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1764480000,
        "model": body["model"],
        "choices": choices,
    }
