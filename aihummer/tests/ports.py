"""A port for a server a test or a bench starts."""

import random
import socket

# Below Linux's ephemeral range (32768 to 60999): a port the kernel hands out for binding to
# 0 is one it may hand out again, between our check and the server's bind, as the local
# end of any outgoing connection (to PostgreSQL, a broker…) — a server then fails with
# "Address already in use". Nothing takes a port out of this range unasked.
_RANGE = (20000, 32767)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, and no connection will take by itself."""
    for _ in range(200):
        port = random.randint(*_RANGE)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {_RANGE} on {host}")
