"""Waiting in tests: poll a condition until it holds (never a fixed sleep standing for
"it has happened" or "nothing happened"), and record what reached the broker."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

T = TypeVar("T")
POLL_SECONDS = 0.02


def wait_until(condition: Callable[[], T], *, seconds: float = 30, what: str = "the condition") -> T:
    """`condition()`'s first truthy value, polled; the test fails naming `what` after
    `seconds` (a bound for a loaded machine, not a measurement)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"Waited {seconds:g} s for {what}.")
        time.sleep(POLL_SECONDS)


@contextlib.contextmanager
def published_tasks() -> Iterator[list[tuple[str, tuple]]]:
    """The tasks published to the broker while the block runs, as `(name, args)`, in
    order. Publishing happens in the sending thread, so once the sender is done the
    list is complete: "nothing was sent" is a fact to assert, not a wait."""
    from celery.signals import before_task_publish

    sent: list[tuple[str, tuple]] = []

    def record(sender: str | None = None, body: object = None, **kwargs: object) -> None:
        args = body[0] if isinstance(body, tuple | list) and body else ()
        sent.append((sender or "", tuple(args)))

    before_task_publish.connect(record, weak=False)
    try:
        yield sent
    finally:
        before_task_publish.disconnect(record)
