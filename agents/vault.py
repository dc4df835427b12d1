"""The credential vault: secrets encrypted at rest with MultiFernet.

`AIHUMMER_VAULT_KEYS` lists Fernet keys; the first encrypts, every one decrypts, so a
new key is rolled in by putting it first and running `manage.py rotate_vault_keys`.
Plaintext leaves this module only through `decrypt`, for a provider call.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.views.decorators.debug import sensitive_variables

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet


class VaultError(Exception):
    """A ciphertext no configured key can open."""


def _multifernet() -> MultiFernet:
    # Here, not at the top: every process loads this module, few open the vault.
    from cryptography.fernet import Fernet, MultiFernet

    keys = settings.AIHUMMER_VAULT_KEYS
    if not keys:
        raise ImproperlyConfigured("AIHUMMER_VAULT_KEYS is empty: the vault cannot encrypt or decrypt.")
    return MultiFernet([Fernet(key) for key in keys])


@sensitive_variables("plaintext")
def encrypt(plaintext: str) -> str:
    return _multifernet().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    from cryptography.fernet import InvalidToken

    try:
        return _multifernet().decrypt(ciphertext.encode()).decode()
    except InvalidToken as exc:
        raise VaultError("This credential was encrypted with a key that is no longer configured.") from exc


def rotate(ciphertext: str) -> str:
    """The same secret re-encrypted under the first (newest) key."""
    from cryptography.fernet import InvalidToken

    try:
        return _multifernet().rotate(ciphertext.encode()).decode()
    except InvalidToken as exc:
        raise VaultError("This credential was encrypted with a key that is no longer configured.") from exc


@sensitive_variables("plaintext", "salted")
def fingerprint(plaintext: str) -> str:
    """Eight hex characters of a salted hash: enough to tell two secrets apart, too
    little to test guesses against (the salt is the deployment's secret key)."""
    salted = f"{settings.SECRET_KEY}:aihummer-vault:{plaintext}".encode()
    return hashlib.sha256(salted).hexdigest()[:8]
