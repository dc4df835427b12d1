"""A conversation's answer streamed as Server-Sent Events, resumable from a cursor.

`conversation_stream_start` checks the message as `conversation_send` would (a refusal
is raised before anything streams), then runs the send in a thread of its own, so the
turn goes on when the client goes away; its events are numbered from 1:

- `start` `{"stream"}`: the stream's id, to resume it;
- `delta` `{"text"}`: the answer's text as the model writes it (the preset's
  `streaming_enabled` streams it from the provider; otherwise it comes in one delta);
- `tool_call` `{"calls": [{"id", "name", "arguments"}]}` and `tool_result`
  `{"calls": [{"id", "name", "outcome", "result"}]}`: a tool round of the turn;
- `message`: the final message, the same JSON the whole answer is (`done` then).

Every event is kept in the cache (`CACHE_URL`: Redis, shared by the web processes;
without it, the process's own memory) for `STREAM_TTL_SECONDS`, under the workspace and
the verified peer that started it: `conversation_stream_events` replays those after a
cursor (`Last-Event-ID`), then follows the live ones until `message`. Another peer's or
workspace's stream answers as a missing one. Deltas are written to the cache at most
every `CACHE_WRITE_SECONDS` (and with every other event), which a resuming reader polls.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import connection

from agents.models import Agent
from aihummer.actors import Actor, Verb
from aihummer.exceptions import NotFound

logger = logging.getLogger(__name__)

STREAM_TTL_SECONDS = 600
CACHE_WRITE_SECONDS = 0.1
POLL_SECONDS = 0.05
STREAM_ID_PATTERN = r"[A-Za-z0-9_-]{16,64}"
FINAL = "message"


@dataclass
class Stream:
    """The events of one streamed send, as they are published."""

    id: str
    workspace_id: int
    peer: str
    events: list[tuple[int, str, dict]] = field(default_factory=list)
    live: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    _written: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def key(self) -> str:
        return stream_key(self.workspace_id, self.peer, self.id)

    def publish(self, kind: str, data: dict) -> None:
        with self._lock:
            event = (len(self.events) + 1, kind, data)
            self.events.append(event)
            self.live.put(event)
            if kind != "delta" or time.monotonic() - self._written >= CACHE_WRITE_SECONDS:
                self._save()

    def _save(self) -> None:
        cache.set(self.key, {"events": list(self.events), "done": self.events[-1][1] == FINAL}, STREAM_TTL_SECONDS)
        self._written = time.monotonic()

    def follow(self) -> Iterator[tuple[int, str, dict]]:
        """The events as they come, until the final message."""
        while True:
            event = self.live.get()
            yield event
            if event[1] == FINAL:
                return


def stream_key(workspace_id: int, peer: str, stream_id: str) -> str:
    return f"aihummer:conversation-stream:{workspace_id}:{peer}:{stream_id}"


def conversation_stream_start(
    *,
    agent: Agent,
    actor: Actor,
    message: str,
    channel: str,
    peer: str | None = None,
    final: Callable[[object], dict],
) -> Stream:
    """Start streaming the answer to `message` (see the module); `final(reply)` gives
    the last event's data from the `ConversationReply`. Raises as `conversation_send`
    does, before anything runs."""
    from agents.runtime.conversations import conversation_check, conversation_peer, conversation_send

    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.RUN, agent.workspace)
    conversation_check(agent=agent, actor=actor, message=message, channel=channel, peer=peer)
    stream = Stream(id=secrets.token_urlsafe(18), workspace_id=agent.workspace_id, peer=conversation_peer(actor))
    stream.publish("start", {"stream": stream.id})

    def run() -> None:
        try:
            reply = conversation_send(
                agent=agent, actor=actor, message=message, channel=channel, peer=peer, on_event=stream.publish
            )
            data = final(reply)
        except Exception as exc:  # the stream must end: its reader waits for the final event
            logger.exception("A streamed conversation message failed")
            data = {"error": {"code": "internal", "message": f"Internal error ({type(exc).__name__}); it was logged."}}
        finally:
            connection.close()  # this thread's connection must not outlive it
        stream.publish(FINAL, data)

    threading.Thread(target=run, name=f"stream-{stream.id[:8]}", daemon=True).start()
    return stream


def conversation_stream_events(
    *, actor: Actor, workspace_id: int, stream_id: str, after: int, timeout: float = STREAM_TTL_SECONDS
) -> Iterator[tuple[int, str, dict]]:
    """The events of the caller's stream `stream_id` after number `after`, then the
    live ones until the final message (see the module). NotFound for another peer's,
    another workspace's, an expired or an unknown stream, before anything is sent."""
    from agents.runtime.conversations import conversation_peer

    key = stream_key(workspace_id, conversation_peer(actor), stream_id)
    stored = cache.get(key)
    if stored is None:
        raise NotFound(f"Unknown stream '{stream_id}' (streams are kept {STREAM_TTL_SECONDS // 60} minutes).")
    return _replay(key, stored, after, time.monotonic() + timeout)


def _replay(key: str, stored: dict, after: int, deadline: float) -> Iterator[tuple[int, str, dict]]:
    while True:
        for event in stored["events"]:
            if event[0] > after:
                yield event
                after = event[0]
        if stored["done"] or time.monotonic() > deadline:
            return
        time.sleep(POLL_SECONDS)
        stored = cache.get(key) or stored


def sse(event: tuple[int, str, dict]) -> bytes:
    """One event on the wire."""
    import json

    number, kind, data = event
    return f"id: {number}\nevent: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
