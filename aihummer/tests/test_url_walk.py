"""Issue 10: no input reaches a 500. Every admin and API URL pattern, resolved from the
URL configuration itself (a new pattern is walked without editing this file), is
requested with a bad value in each of its arguments, as each persona; so are every
changelist's search, every autocomplete and every bulk action.

This is the place future URLs get checked: if a new view answers 5xx for a bad id,
one of these tests names the URL and the persona.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from psycopg.pq import TransactionStatus

from aihummer.tests.factories import make_agent, make_every_kind

# What a careless user or an attacker types where an id goes.
BAD_VALUES = ["abc", "%00", "-1", "99999999999999999999999", "%C2%B9", "%D9%A1", "1%2F..%2F2"]
PERSONAS = ["anonymous", "vic", "alice", "bob", "ada", "charlie", "root"]
_ARGUMENT = re.compile(r"<(?:\w+:)?(\w+)>|\((?:\?P<(\w+)>)?[^()]*\)")


@dataclass(frozen=True)
class Pattern:
    template: str  # the URL with {0}, {1}… where its arguments go
    names: tuple[str, ...]
    model_admin: object | None


def _model_admin(callback: object) -> object | None:
    model_admin = getattr(callback, "model_admin", None)
    wrapped = getattr(callback, "__wrapped__", None)
    return model_admin or getattr(wrapped, "__self__", None)


def url_patterns(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[Pattern]:
    """Every leaf pattern of the URL configuration, as a template."""
    for entry in (resolver or get_resolver()).url_patterns:
        text = prefix + str(entry.pattern).lstrip("^").removesuffix("$").removesuffix(r"\Z")
        if isinstance(entry, URLResolver):
            yield from url_patterns(entry, text)
            continue
        assert isinstance(entry, URLPattern)
        names: list[str] = []

        def placeholder(match: re.Match, names: list[str] = names) -> str:
            names.append(match.group(1) or match.group(2) or f"arg{len(names)}")
            return f"{{{len(names) - 1}}}"

        template = _ARGUMENT.sub(placeholder, text.replace("{", "{{").replace("}", "}}")).replace("^", "")
        yield Pattern("/" + template, tuple(names), _model_admin(entry.callback))


@pytest.fixture
def world(workspace, other_workspace, vic, alice, bob, ada, charlie, root):
    """A row of every kind in acme, so good ids exist beside the bad ones."""
    preset = make_every_kind(workspace, by=ada, proposer=alice, prefix="acme")["preset"]
    # An agent whose version 1 waits for review: created while every change needed a
    # second person, so nothing of it is live yet.
    workspace.every_change_needs_review = True
    workspace.save()
    make_agent(workspace, "fresh", by=ada, preset=preset)
    workspace.every_change_needs_review = False
    workspace.save()
    return {"anonymous": None, "vic": vic, "alice": alice, "bob": bob, "ada": ada, "charlie": charlie, "root": root}


def good_value(pattern: Pattern, position: int) -> str:
    """A value that names an existing row (or a real number) for the arguments that are
    not under test, so the bad one reaches as deep into the view as it can."""
    name = pattern.names[position]
    model = getattr(pattern.model_admin, "model", None)
    if name == "number":
        return "1"
    if name == "content_type_id" or model is None:
        return str(ContentType.objects.first().pk)
    row = model._base_manager.order_by("pk").first()
    if row is None:
        return "1"
    if position == 0:
        return str(row.pk)
    history = getattr(model, "history", None)
    return str(history.filter(**{model._meta.pk.attname: row.pk}).first().history_id) if history else "1"


def bad_urls() -> Iterator[str]:
    for pattern in url_patterns():
        count = len(pattern.names)
        # The good values once per pattern, not once per bad value (each costs queries).
        good = [good_value(pattern, i) for i in range(count)] if count > 1 else [""]
        for position in range(count):
            for bad in BAD_VALUES:
                yield pattern.template.format(*good[:position], bad, *good[position + 1 :])


def request_as(client: Client, user: object, method: str, url: str, data: dict | None = None) -> int:
    # Logged in once per client, and again only after a page logged the persona out
    # (a login per request was most of the walk's time). A page that ends the session
    # has the session middleware delete its cookie: the cookie says so without loading
    # the session (which, before each request, was a sixth of the walk's statements).
    session = client.cookies.get(settings.SESSION_COOKIE_NAME)
    if user is not None and (session is None or not session.value):
        client.force_login(user)
    response = client.post(url, data or {}) if method == "POST" else client.get(url)
    return response.status_code


def transaction_aborted() -> bool:
    # What Django and libpq know of the test's transaction: no statement asks.
    raw = connection.connection
    return connection.needs_rollback or (raw is not None and raw.info.transaction_status == TransactionStatus.INERROR)


def failures_for(world: dict, persona: str, requests: list[tuple[str, str, dict | None]]) -> list[str]:
    """The requests that answered 5xx to `persona` (one test per persona: xdist spreads them)."""
    failures = []
    client = Client(raise_request_exception=False)
    for method, url, data in requests:
        status = request_as(client, world[persona], method, url, data)
        if status >= 500:
            failures.append(f"{persona} {method} {url} {data or ''} -> {status}")
        # No savepoint per request (their two statements were a third of the walk's):
        # a view that swallows a database error leaves the test's transaction aborted,
        # which would answer every later request "current transaction is aborted". It
        # is named here instead, and the walk stops.
        if transaction_aborted():
            failures.append(f"{persona} {method} {url} {data or ''} left the transaction aborted")
            break
    return failures


def test_the_walk_finds_every_kind_of_pattern():
    templates = {pattern.template for pattern in url_patterns()}

    assert "/admin/agents/agent/{0}/history/{1}/" in templates
    assert "/admin/agents/promptversion/{0}/review/" in templates
    assert "/v1/me" in templates


@pytest.mark.django_db
def test_the_walk_sees_a_database_error_a_view_swallowed():
    with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")

    assert transaction_aborted()


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
def test_no_url_pattern_answers_5xx_for_a_bad_id(world, persona):
    requests = [("GET", url, None) for url in bad_urls()]
    assert len(requests) > 300

    failures = failures_for(world, persona, requests)
    assert not failures, "\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
def test_no_admin_page_of_an_existing_row_answers_5xx(world, persona):
    # The change, history and delete pages of one real row of every admin model (a
    # good id reaches code a bad one never does: e.g. a history page of a model
    # without history).
    requests: list[tuple[str, str, dict | None]] = []
    for model in admin.site._registry:
        row = model._base_manager.order_by("pk").first()
        if row is None:  # e.g. auth groups: the world makes none
            continue
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/{row.pk}/"
        requests += [("GET", base + suffix, None) for suffix in ("change/", "history/", "delete/")]

    failures = failures_for(world, persona, requests)
    assert not failures, "\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
def test_no_page_of_an_agent_without_a_live_version_answers_5xx(world, persona):
    # Every admin and API URL of one agent, with the agent whose version 1 waits for
    # review: "no live version yet" is a fact every reader handles.
    from agents.models import Agent

    fresh = Agent.objects.get(key="fresh")
    assert fresh.live_version is None
    requests: list[tuple[str, str, dict | None]] = []
    for pattern in url_patterns():
        model = getattr(pattern.model_admin, "model", None)
        if pattern.template.startswith("/v1/admin/agents/{0}") or pattern.template.startswith("/mcp"):
            first = "fresh"
        elif model is Agent and pattern.names:
            first = str(fresh.pk)
        else:
            continue
        values = [first, *(good_value(pattern, i) for i in range(1, len(pattern.names)))]
        requests.append(("GET", pattern.template.format(*values), None))
    assert len(requests) > 20

    failures = failures_for(world, persona, requests)
    assert not failures, "\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
def test_no_search_autocomplete_or_bulk_action_answers_5xx_for_bad_input(world, persona):
    requests: list[tuple[str, str, dict | None]] = []
    for model, model_admin in admin.site._registry.items():
        changelist = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        requests.append(("GET", changelist + "?q=%00&o=abc&p=-1&e=%00", None))
        for action in model_admin.actions or []:
            for bad in ("abc", "\x00", "-1", "99999999999999999999999", "\u0661"):
                requests.append(("POST", changelist, {"action": action, "_selected_action": [bad], "index": "0"}))
        for field_name in model_admin.autocomplete_fields:
            query = f"app_label={model._meta.app_label}&model_name={model._meta.model_name}&field_name={field_name}"
            requests.append(("GET", f"/admin/autocomplete/?term=%00&{query}", None))
            requests.append(("GET", f"/admin/autocomplete/?term=x&page=abc&{query}", None))
    for header in ("ahk_%C2%B9_x", "ahk_0_x", "ahk_1_" + "x" * 5000):
        requests.append(("GET", f"/v1/me?key={header}", None))

    failures = failures_for(world, persona, requests)
    assert not failures, "\n".join(failures)
