"""Secrets refused at the door: no text an agent is told, nor a shared skill, may hold
the value of one of the workspace's vault secrets. Rendering would put it in the system
prompt, REST and MCP would return it and the provider would receive it; turns still
redact by value (`agents.redaction`) as a second line."""

from __future__ import annotations

from collections.abc import Iterator

from django.core.exceptions import ValidationError

from agents import vault
from agents.models import Credential
from agents.redaction import MIN_SECRET_CHARS

REFUSAL = "the secret of credential '{key}' is in this text: secrets never go into what an agent is told; remove it."


def vault_secrets(workspace_id: int) -> list[tuple[str, str]]:
    """`(credential key, secret)` of every credential of the workspace the vault opens,
    long enough to be told apart from ordinary words (as redaction does)."""
    pairs = []
    for key, ciphertext in Credential.objects.filter(workspace_id=workspace_id).values_list("key", "ciphertext"):
        try:
            secret = vault.decrypt(ciphertext)
        except vault.VaultError:
            continue  # a secret no key opens cannot be recognised either
        if len(secret) >= MIN_SECRET_CHARS:
            pairs.append((key, secret))
    return pairs


def refuse_vault_secrets(*, workspace_id: int, values: dict[str, object], json_paths: bool) -> None:
    """Refuse `values` (field → text, or a snapshot key → its JSON value) when a string
    in them holds a vault secret: one field error per text, naming the credential, never
    the value. `json_paths`: messages lead with the text's path in the snapshot
    (`$.sections[0].body: …`), as every snapshot error does."""
    secrets = vault_secrets(workspace_id)
    if not secrets:
        return
    errors: dict[str, list[str]] = {}
    for field, value in values.items():
        for path, text in _strings(value, f"$.{field}"):
            for key, secret in secrets:
                if secret in text:
                    message = REFUSAL.format(key=key)
                    errors.setdefault(field, []).append(f"{path}: {message}" if json_paths else f"T{message[1:]}")
    if errors:
        raise ValidationError(errors)


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
