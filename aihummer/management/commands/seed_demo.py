from __future__ import annotations

from django.conf import settings
from django.core import mail
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.test.utils import override_settings

from aihummer.demo import demo_seeders, seed_workspace


class Command(BaseCommand):
    help = "Load the demo workspace (idempotent) and print how to log in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="allow in production")

    def handle(self, *args: object, **options: object) -> None:
        if settings.IS_PRODUCTION and not options["force"]:
            raise CommandError("Refusing to load demo data in production (use --force if you mean it).")
        # The demo's proposals notify its reviewers (at @demo.invalid): kept in memory,
        # not printed whole on the console above the logins.
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
            mail.outbox = []
            with transaction.atomic():
                context = seed_workspace()
                for seed in demo_seeders():
                    seed(context)
            held_back = len(mail.outbox)
        self.stdout.write(f"Demo workspace '{context.workspace.slug}' is ready. Log in at http://127.0.0.1:8000/admin/")
        for line in context.lines:
            self.stdout.write(line)
        if held_back:
            self.stdout.write(f"  ({held_back} review e-mails of the demo's own proposals were not sent.)")
