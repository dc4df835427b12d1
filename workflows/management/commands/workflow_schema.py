from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from workflows.engine import definition_schema


class Command(BaseCommand):
    help = "Print the JSON Schema of workflow definitions (the pivot format v1 and its additions)."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(json.dumps(definition_schema(), indent=2, ensure_ascii=False))
