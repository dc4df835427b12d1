"""Issue 10: the one redaction function: the workspace's vault secrets by value, key
shapes, NUL made storable; log lines redacted by the secrets in use."""

from __future__ import annotations

import io
import logging

import pytest

from agents.redaction import REDACTED, DeltaRedactor, Redactor
from agents.services import credential_create
from aihummer.actors import Actor

SECRET = "zz-local-4f9c2b7e1d"  # no well-known shape: only its value can find it
OTHER = "qq-other-88c1a0b5f2"


@pytest.fixture
def secrets(workspace, other_workspace, ada, root):
    credential_create(workspace=workspace, key="local", secret=SECRET, actor=Actor.for_user(ada))
    credential_create(workspace=workspace, key="second", secret=OTHER, actor=Actor.for_user(ada))
    credential_create(workspace=other_workspace, key="theirs", secret="ww-globex-secret-1", actor=Actor.for_user(root))


def test_every_secret_of_the_workspace_is_redacted_by_value(workspace, secrets):
    redactor = Redactor.for_workspace(workspace.pk)

    text = f"key={SECRET}; other {OTHER}; Authorization: Bearer {SECRET}; sk-{'a' * 20}; nul\x00end"

    assert redactor.text(text) == (
        f"key={REDACTED}; other {REDACTED}; Authorization: Bearer {REDACTED}; {REDACTED}; nul\ufffdend"
    )
    assert redactor.value({"a": [SECRET, {"b": OTHER}], SECRET: 1}) == {"a": [REDACTED, {"b": REDACTED}], REDACTED: 1}
    assert "ww-globex-secret-1" not in redactor.secrets


def test_bounded_text_says_what_was_cut(workspace, secrets):
    assert (
        Redactor.for_workspace(workspace.pk).text("x" * 30, max_chars=10)
        == "x" * 10 + "… [20 more characters not kept]"
    )


def test_log_lines_are_redacted_by_the_secrets_in_use(workspace, secrets):
    Redactor.for_workspace(workspace.pk)
    handler = next(
        h for h in logging.getLogger().handlers if any(type(f).__name__ == "RedactingFilter" for f in h.filters)
    )
    stream = io.StringIO()
    original, handler.stream = handler.stream, stream
    try:
        try:
            raise RuntimeError(f"provider said {SECRET}")
        except RuntimeError:
            logging.getLogger("agents.runtime").exception("call with %s failed", OTHER)
    finally:
        handler.stream = original

    assert SECRET not in stream.getvalue() and OTHER not in stream.getvalue()
    assert f"call with {REDACTED} failed" in stream.getvalue()
    assert f"RuntimeError: provider said {REDACTED}" in stream.getvalue()


def test_a_secret_split_across_deltas_never_shows_in_what_is_emitted():
    key = "sk-" + "A1b2C3d4E5f6G7h8J9"
    text = f"Here: {SECRET} and {key}, Bearer abcdefghijklmnopqrstuvwxyz0123 done."
    redactor = Redactor([SECRET])
    for size in (1, 2, 3, 5, 7, 11):
        emitted: list[str] = []
        sink = DeltaRedactor(redactor, emitted.append)
        for start in range(0, len(text), size):
            sink(text[start : start + size])
            so_far = "".join(emitted)
            for secret in (SECRET, key, "abcdefghijklmnopqrstuvwxyz0123"):
                # Not even the secret's first half has been emitted.
                assert secret[: len(secret) // 2] not in so_far, (size, so_far)
        sink.flush()
        assert "".join(emitted) == redactor.text(text) == (f"Here: {REDACTED} and {REDACTED}, Bearer {REDACTED} done.")
