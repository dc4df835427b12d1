from __future__ import annotations

import re
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_duration

from aihummer.management import workspace_or_error
from sandbox.services import describe_counts, sandbox_sweep

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(text: str) -> timedelta:
    """`90s`, `30m`, `24h`, `7d`, or what Django's parse_duration reads (`PT24H`, `1 02:00:00`)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    value = timedelta(**{UNITS[match[2]]: float(match[1])}) if match else parse_duration(text.strip())
    if value is None or value < timedelta(0):
        raise CommandError(f"--older-than: {text!r} is not a duration (e.g. 90s, 30m, 24h, 7d).")
    return value


class Command(BaseCommand):
    help = (
        "Delete sandbox rows (runs, workflows, agents, presets; debug logs are kept), of one workspace or of "
        "all, optionally only those older than a duration. A workspace with a sandbox run still going is skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="workspace slug (default: every workspace)")
        parser.add_argument("--older-than", type=duration, help="only rows created before this long ago (24h, 30m…)")

    def handle(self, *args: object, **options: object) -> None:
        workspace = workspace_or_error(options["workspace"]) if options["workspace"] else None
        older_than = options["older_than"] or timedelta(0)
        report = sandbox_sweep(workspace=workspace, older_than=older_than)
        for slug, counts in report.items():
            if "skipped" in counts:
                self.stdout.write(f"Skipped '{slug}': {counts['skipped']} sandbox run(s) still going.")
                continue
            self.stdout.write(f"Deleted from '{slug}': {describe_counts(counts)}.")
        if not report:
            self.stdout.write("No sandbox rows.")
