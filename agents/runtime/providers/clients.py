"""One SDK client per process and provider configuration.

Building a vendor SDK's client costs 30-70 ms of CPU (a new HTTP client, and an SSL
context parsing the CA bundle even for an `http://` URL), and a fresh client opens a
fresh connection (a TLS handshake against a real endpoint) — more than everything
else a step does. So each adapter keeps its clients here, one per configuration: the
vendor, the base URL, the API key and the SDK's retry count. A call never changes a
client; what belongs to the call travels with it: its deadline (a context variable,
`deadline.bounded_by`), its per-attempt timeout (set from that deadline on each
attempt).

- A rotated credential is a new key, hence another client, from the next call on;
  the old one ages out of the cache.
- Two keys never share a client, so never a connection: credentials of one workspace
  cannot ride on a connection opened for another's.
- The SDKs' HTTP clients (httpx) are thread-safe: one client serves every thread.
- A connection cut by a deadline is closed by the HTTP client, not returned to the
  pool; a pooled connection the server closed meanwhile is detected and replaced.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

# Distinct configurations a process keeps clients for; an evicted client closes its
# connections when the last call using it lets it go.
CLIENTS_PER_VENDOR = 64


class ClientCache(Generic[T]):
    """Clients built by `build(**config)`, one per distinct `config`, least recently
    used evicted beyond `size`."""

    def __init__(self, build: Callable[..., T], size: int = CLIENTS_PER_VENDOR) -> None:
        self._build = build
        self._size = size
        self._clients: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()
        _CACHES.append(self)

    def get(self, **config: Hashable) -> T:
        key = tuple(sorted(config.items()))
        with self._lock:
            client = self._clients.get(key)
            if client is not None:
                self._clients.move_to_end(key)
                return client
        built = self._build(**config)  # outside the lock: it takes milliseconds
        with self._lock:
            client = self._clients.setdefault(key, built)  # another thread may have won
            self._clients.move_to_end(key)
            while len(self._clients) > self._size:
                self._clients.popitem(last=False)
        return client

    def clear(self) -> None:
        with self._lock:
            self._clients.clear()

    def __len__(self) -> int:
        return len(self._clients)


_CACHES: list[ClientCache] = []


def _forget_after_fork() -> None:
    # A forked child (prefork pool) must not share its parent's sockets.
    for cache in _CACHES:
        cache._lock = threading.Lock()
        cache._clients.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
