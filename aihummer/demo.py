"""Demo data for the embedded default: a workspace, three people, one API key (the
tenancy); then each app's part, named in settings.AIHUMMER_DEMO_SEEDERS.

Idempotent: a second run finds every row and changes nothing. Passwords are generated
once per machine and kept in the git-ignored `var/demo-logins.json`, so they can be
printed again on every run without being reset.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.module_loading import import_string

from aihummer.actors import Actor
from aihummer.models import ApiKey, Membership, User, Workspace
from aihummer.services import api_key_create, membership_set, workspace_create

DEMO_PEOPLE = [
    # username, role (None: superuser), description
    ("admin", None, "superuser"),
    ("bob", Membership.Role.REVIEWER, "reviewer"),
    ("alice", Membership.Role.EDITOR, "editor"),
]


@dataclass
class DemoContext:
    workspace: Workspace
    operator: Actor
    people: dict[str, User]
    lines: list[str] = field(default_factory=list)


def _logins_path() -> Path:
    return Path(settings.BASE_DIR) / "var" / "demo-logins.json"


def seed_workspace() -> DemoContext:
    operator = Actor.for_operator(name="seed_demo")
    workspace = Workspace.objects.filter(slug="demo").first() or workspace_create(
        slug="demo", name="Demo workspace", actor=operator
    )
    path = _logins_path()
    logins = json.loads(path.read_text()) if path.exists() else {}
    context = DemoContext(workspace=workspace, operator=operator, people={})
    for username, role, description in DEMO_PEOPLE:
        user = User.objects.filter(username=username).first()
        if user is None:
            logins[username] = secrets.token_urlsafe(12)
            # The demo's people write French, and the desk speaks it to them whatever the browser.
            user = User(username=username, email=f"{username}@demo.invalid", is_superuser=role is None, language="fr")
            user.is_staff = role is None
            user.set_password(logins[username])
            user.save()
        if role is not None:
            membership_set(workspace=workspace, user=user, role=role, actor=operator)
        context.people[username] = user
        password = logins.get(username, "(unchanged; set one with manage.py changepassword)")
        context.lines.append(f"  {description:<10} {username:<6} password: {password}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(logins, indent=2))
    path.chmod(0o600)

    if ApiKey.objects.filter(workspace=workspace, name="demo-cli").exists():
        context.lines.append("  API key 'demo-cli' exists (keys are shown only when created).")
    else:
        _, raw_key = api_key_create(
            workspace=workspace, name="demo-cli", scopes="read,write", owner=context.people["alice"], actor=operator
        )
        context.lines.append(f"  API key 'demo-cli' (read,write, owned by alice), shown once: {raw_key}")
    return context


def demo_seeders() -> list[Callable[[DemoContext], None]]:
    """Each app's demo data, in dependency order, named in `AIHUMMER_DEMO_SEEDERS`:
    apps import aihummer, never the reverse, so aihummer names them by path."""
    return [import_string(path) for path in settings.AIHUMMER_DEMO_SEEDERS]
