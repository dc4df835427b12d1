"""A real SMTP server for tests (aiosmtpd, in a thread): it records every message it
accepts, checks a login when given a password, and can hold a message's DATA until a
test lets it go (to kill a worker mid-send)."""

from __future__ import annotations

import asyncio
import email
import threading
from email.message import Message

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from aihummer.tests.ports import free_port


class SmtpServer:
    """`with SmtpServer(user=..., password=...) as server:` listens on `server.port`;
    `server.messages` are the accepted messages, `server.logins` the logins tried."""

    def __init__(self, *, user: str = "", password: str = "", hold: bool = False) -> None:
        self.user, self.password = user, password
        self.messages: list[Message] = []
        self.logins: list[tuple[str, str]] = []
        self.arrived = threading.Event()  # a message's DATA reached the server
        self.release = threading.Event()  # let it be answered
        if not hold:
            self.release.set()
        self.port = free_port()
        kwargs = {"authenticator": self._authenticate, "auth_require_tls": False} if password else {}
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port, **kwargs)

    def __enter__(self) -> SmtpServer:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._controller.stop()

    def _authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = (auth_data.login.decode(), auth_data.password.decode())
        self.logins.append(login)
        return AuthResult(success=login == (self.user, self.password))

    async def handle_DATA(self, server, session, envelope) -> str:
        self.arrived.set()
        while not self.release.is_set():  # held: the client waits for our answer
            await asyncio.sleep(0.02)
        if server.transport is None or server.transport.is_closing():
            return "421 closing"  # the client is gone: nothing was delivered
        self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"
