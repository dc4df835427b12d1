from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from agents.policy import runtime_policy_json_schema


class Command(BaseCommand):
    help = "Print the JSON Schema of an agent's runtime policy, with every default."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(json.dumps(runtime_policy_json_schema(), indent=2, sort_keys=False))
