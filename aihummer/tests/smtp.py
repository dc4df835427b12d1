"""A real SMTP server for tests (aiosmtpd, in a thread): it records every message it
accepts, checks a login when given a password, and can hold the exchange until a test
lets it go (to kill a worker mid-send): at the envelope's recipient (`hold="rcpt"`,
before the client hands the message over) or after the message's DATA (`hold=True`,
the client waiting for the answer). A client gone by then gets nothing delivered,
unless the server kept what it had in full (`keep_if_gone`, as a server that takes a
message on its final dot); `hang_up_once` closes the connection on the first message,
unanswered."""

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

    def __init__(
        self,
        *,
        user: str = "",
        password: str = "",
        hold: bool | str = False,
        keep_if_gone: bool = False,
        hang_up_once: bool = False,
    ) -> None:
        self.user, self.password = user, password
        self.hold_at = "data" if hold is True else hold or ""
        self.keep_if_gone, self.hang_up_once = keep_if_gone, hang_up_once
        self.messages: list[Message] = []
        self.logins: list[tuple[str, str]] = []
        self.arrived = threading.Event()  # the exchange reached the held point
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

    async def _held(self, point: str) -> None:
        if self.hold_at != point:
            return
        self.arrived.set()
        while not self.release.is_set():  # held: the client waits for our answer
            await asyncio.sleep(0.02)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        await self._held("rcpt")
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        if self.keep_if_gone:  # taken on its final dot, whatever becomes of the answer
            self.messages.append(email.message_from_bytes(envelope.content))
        await self._held("data")  # a client that goes away meanwhile cancels this handler
        if self.hang_up_once:
            self.hang_up_once = False
            server.transport.close()  # the message arrived in full; no answer ever comes
            return "421 closing"
        if server.transport is None or server.transport.is_closing():
            return "421 closing"  # the client is gone: nothing was delivered (unless kept)
        if not self.keep_if_gone:
            self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"
