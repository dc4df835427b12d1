from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from agents.services import credential_rotate_all
from agents.vault import VaultError


class Command(BaseCommand):
    help = (
        "Re-encrypt every credential under the first key of AIHUMMER_VAULT_KEYS. Put the new key first, keep the "
        "old ones after it, run this, then drop the old keys."
    )

    def handle(self, *args: object, **options: object) -> None:
        try:
            with transaction.atomic():
                rotated = credential_rotate_all()
        except VaultError as exc:
            raise CommandError(f"{exc} Nothing was changed.") from exc
        self.stdout.write(f"Re-encrypted {rotated} credential(s) under the first vault key.")
