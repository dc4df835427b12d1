"""Django's makemessages with the project's defaults, so `manage.py makemessages -l fr`
and the catalogue test extract exactly the same strings: the project's own code and
templates (not the virtualenv, the tests or the benches), without source locations (a
moved line then changes no catalogue)."""

from __future__ import annotations

from django.core.management.commands import makemessages

PROJECT_IGNORES = [".venv", "node_modules", "staticfiles", "var", "bench", "*/tests/*", "conftest.py"]


class Command(makemessages.Command):
    def handle(self, *args: object, **options: object) -> None:
        options["ignore_patterns"] = [*options["ignore_patterns"], *PROJECT_IGNORES]
        options["no_location"] = True
        options["no_obsolete"] = True
        super().handle(*args, **options)
