"""A tiny OpenAI-protocol server for tests and benches: it answers every chat
completion with `answer: <last user message>` after `delay` seconds, many at once
(one thread per request), and records when each request started and ended."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, delay: float = 0.0, *, fail_first: int = 0) -> None:
        self.delay = delay
        self.fail_first = fail_first  # answer this many requests with a 503 first
        self.calls: list[tuple[float, float, str]] = []  # (started, finished, message)
        self.authorizations: list[str] = []  # the Authorization header of every request
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                started = time.monotonic()
                with server._lock:
                    server.authorizations.append(self.headers.get("Authorization", ""))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                message = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")
                if isinstance(message, list):
                    message = "".join(part.get("text", "") for part in message)
                time.sleep(server.delay)
                with server._lock:
                    failing = server.fail_first > 0
                    server.fail_first -= failing
                if failing:
                    error = {"error": {"message": "Overloaded", "type": "server_error", "code": None}}
                    self._answer(503, json.dumps(error).encode())
                    return
                payload = json.dumps(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 1764480000,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": f"answer: {message}"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                ).encode()
                self._answer(200, payload)
                with server._lock:
                    server.calls.append((started, time.monotonic(), message))

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
