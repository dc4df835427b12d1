"""Builders the apps' tests share: plain functions over the services (so every row a
test makes went through the rules), named for what they make. Personas and fixtures
stay in the conftests; a test module never imports another test module."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.utils import timezone

from agents.models import Agent, Conversation, ConversationMessage, Preset, PromptVersion
from agents.rendering import render_system_prompt
from agents.services import agent_create, credential_create, preset_create
from aihummer.actors import Actor
from aihummer.models import ApiKey, User, Workspace
from aihummer.services import api_key_create
from workflows.demo import PIPELINE as DEMO_PIPELINE

if TYPE_CHECKING:
    from rest_framework.test import APIClient

    from workflows.models import Workflow
    from workflows.tests.fake_openai import FakeOpenAI

# The writer most agents tests talk to; `prompt=` replaces it with a plain system prompt.
WRITER_PROFILE = {
    "identity": {"name": "Camille", "role": "Writer", "persona": "Curious and precise."},
    "sections": [{"key": "method", "title": "Method", "body": "Plan first."}],
    "onboarding": "Introduce yourself once.",
}
# The seed's two-step pipeline, `lecteur` then `critique`: the demo's, without its description.
PIPELINE = {key: value for key, value in DEMO_PIPELINE.items() if key != "description"}
# Two parallel steps and their join: a run whose tasks (and spans) fan out and meet again.
FAN_OUT = {
    "version": 1,
    "steps": [
        {"name": "left", "agent_name": "left", "depends_on": []},
        {"name": "right", "agent_name": "right", "depends_on": []},
        {"name": "join", "agent_name": "join", "depends_on": ["left", "right"]},
    ],
}


def actor_for(by: User | Actor | None) -> Actor:
    """A person as an actor; None: the operator (named `tests`)."""
    if by is None:
        return Actor.for_operator(name="tests")
    return by if isinstance(by, Actor) else Actor.for_user(by)


def make_agent(
    workspace: Workspace,
    key: str,
    prompt: str = "",
    *,
    by: User | Actor | None = None,
    preset: Preset | None = None,
    is_sandbox: bool = False,
    **snapshot: object,
) -> Agent:
    """Agent `key`, named after it, version 1 live: told `prompt` as its system prompt,
    else `WRITER_PROFILE`, with any snapshot field given (`allowed_tool_names=`,
    `runtime_policy=`, `identity=`…) over it."""
    base = {"system_prompt": prompt} if prompt else WRITER_PROFILE
    return agent_create(
        workspace=workspace,
        actor=actor_for(by),
        key=key,
        name=key.title(),
        preset=preset,
        snapshot={**base, **snapshot},
        is_sandbox=is_sandbox,
    )


def api_client(who: str | User, **kwargs: object) -> APIClient:
    """A DRF test client speaking JSON as `who`: a raw API key (`Bearer`) or a person
    (logged in); `kwargs` go to APIClient (SERVER_NAME, …)."""
    from rest_framework.test import APIClient

    client = APIClient(**kwargs)
    client.default_format = "json"
    if isinstance(who, str):
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {who}")
    else:
        client.force_login(who)
    return client


def make_mailer(
    workspace: Workspace,
    *,
    by: User,
    smtp_port: int,
    password: str,
    key: str = "mailer",
    preset: Preset | None = None,
) -> Agent:
    """An agent that may call `mail_send`, its SMTP account on a local server without TLS
    (agent@acme.test), the password a vault credential; on `preset` (else the default)."""
    from agents.services.tool_settings import agent_tool_settings_update

    mailer = make_agent(workspace, key, "You write mails.", by=by, preset=preset, allowed_tool_names=["mail_send"])
    credential = credential_create(workspace=workspace, key="smtp", secret=password, actor=actor_for(by))
    agent_tool_settings_update(
        agent=mailer,
        actor=actor_for(by),
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_security="none",
        smtp_user="agent@acme.test",
        smtp_password=credential,
        mail_from="agent@acme.test",
    )
    return mailer


def make_mailing(
    workspace: Workspace, *, by: User, smtp_port: int, password: str, preset: Preset | None = None
) -> Workflow:
    """The workflow `mailing`: one step, `mail`, on the agent `mailer` (make_mailer)."""
    from workflows.services import workflow_create

    make_mailer(workspace, by=by, smtp_port=smtp_port, password=password, preset=preset)
    definition = {"version": 1, "steps": [{"name": "mail", "agent_name": "mailer"}]}
    return workflow_create(
        workspace=workspace, actor=actor_for(by), key="mailing", name="Mailing", definition=definition
    )


def make_echo_preset(
    workspace: Workspace,
    *,
    by: User | Actor | None = None,
    key: str = "echo",
    name: str = "",
    model: str = "echo-1",
    is_active: bool | None = None,
    is_sandbox: bool = False,
    **fields: object,
) -> Preset:
    """A preset on the offline echo provider (model `echo-1` unless told), named after its
    key unless `name` is given: the workspace's default, unless it is a sandbox row (never
    active) or `is_active=False`; `fields` go to `preset_create` as they are."""
    return preset_create(
        workspace=workspace,
        actor=actor_for(by),
        key=key,
        name=name or key.title(),
        provider_name="echo",
        model=model,
        is_active=not is_sandbox if is_active is None else is_active,
        is_sandbox=is_sandbox,
        **fields,
    )


def make_every_kind(
    workspace: Workspace,
    *,
    by: User,
    proposer: User,
    prefix: str,
    identity: dict | None = None,
    change: dict | None = None,
    reason: str = "",
    message: str = "hello",
) -> dict[str, object]:
    """A row of every kind the desk lists, in `workspace`, each keyed and named after
    `prefix`, made by its admin `by`: a credential, an echo preset (the default) and an
    OpenAI one on that credential, a skill, an agent (`identity`) with a pending proposal
    (`change`, by `proposer`) and one turn (`message`), an API key owned by `proposer`, a
    one-step workflow on the agent and its run. Returns the rows a test names."""
    from agents.runtime import agent_turn_run
    from agents.services import prompt_version_propose, skill_create
    from workflows.services import workflow_create, workflow_run_start

    actor = actor_for(by)
    credential = credential_create(
        workspace=workspace, key=f"{prefix}-cred", secret=f"sk-{prefix}-0123456789abcdef", actor=actor
    )
    preset = make_echo_preset(workspace, by=actor, key=f"{prefix}-echo", name=f"{prefix} echo")
    preset_create(
        workspace=workspace,
        actor=actor,
        key=f"{prefix}-gpt",
        name=f"{prefix} gpt",
        provider_name="openai",
        model="gpt-4.1-mini",
        credential=credential,
    )
    skill_create(workspace=workspace, key=f"{prefix}-skill", title=f"{prefix} skill", body="Be brief.", actor=actor)
    agent = agent_create(
        workspace=workspace,
        actor=actor,
        key=f"{prefix}-agent",
        name=f"{prefix} agent",
        preset=preset,
        snapshot={"identity": identity or {"name": f"{prefix} persona"}},
    )
    version = prompt_version_propose(
        agent=agent, changes=change or {"onboarding": "Bonjour."}, actor=Actor.for_user(proposer), reason=reason
    )
    turn = agent_turn_run(agent=agent, message=message, actor=actor)
    make_key(workspace, f"{prefix}-key", "read", owner=proposer, by=actor)
    step = {"name": f"{prefix}-step", "agent_name": agent.key}
    workflow = workflow_create(
        workspace=workspace,
        actor=actor,
        key=f"{prefix}-flow",
        name=f"{prefix} flow",
        definition={"version": 1, "steps": [step]},
    )
    run = workflow_run_start(workflow=workflow, actor=actor, message=message)
    return {
        "credential": credential,
        "preset": preset,
        "agent": agent,
        "version": version,
        "turn": turn,
        "workflow": workflow,
        "run": run,
    }


def make_key(
    workspace: Workspace, name: str, scopes: str, *, owner: User | None = None, by: User | Actor | None = None
) -> tuple[ApiKey, str]:
    """A new API key of `workspace` and its raw `ahk_…` value."""
    return api_key_create(workspace=workspace, name=name, scopes=scopes, owner=owner, actor=actor_for(by))


def vault_preset(
    workspace: Workspace,
    base_url: str = "",
    *,
    secret: str,
    key: str = "local",
    name: str = "",
    credential_key: str | None = None,
    provider_name: str = "openai",
    model: str = "gpt-4.1",
    by: User | Actor | None = None,
    **fields: object,
) -> Preset:
    """A preset (`openai` unless told) sending to `base_url` (a local protocol server; empty:
    the vendor's own) with `secret` in the vault as its credential (`credential_key`,
    default `<key>-key`), named `name` (default: after its key); `fields` go to
    `preset_create` as they are (is_active, temperature, …)."""
    actor = actor_for(by)
    credential = credential_create(workspace=workspace, actor=actor, key=credential_key or f"{key}-key", secret=secret)
    return preset_create(
        workspace=workspace,
        actor=actor,
        key=key,
        name=name or key.title(),
        provider_name=provider_name,
        model=model,
        base_url=base_url,
        credential=credential,
        **fields,
    )


def openai_preset(workspace: Workspace, server: FakeOpenAI, *, key: str = "slow", by: Actor | None = None) -> Preset:
    """A preset sending to the local OpenAI-protocol `server`, with a credential of its own."""
    return vault_preset(workspace, server.base_url, secret="sk-fake-0123456789", key=key, model="fake-model", by=by)


def store_history(conversation: Conversation, count: int, text: Callable[[int], str] = "old {}".format) -> None:
    """`count` more messages in `conversation`, as if sent long ago: users' and answers in
    turn (the answers on version 1), message n saying `text(n)`."""
    first = conversation.message_count + 1
    ConversationMessage.objects.bulk_create(
        ConversationMessage(
            conversation=conversation,
            sequence=n,
            role="user" if n % 2 else "assistant",
            channel="api",
            text=text(n),
            version_number=None if n % 2 else 1,
        )
        for n in range(first, first + count)
    )
    Conversation.objects.filter(pk=conversation.pk).update(message_count=first + count - 1)


def echo_sp(what: PromptVersion | dict) -> str:
    """The `#sp=` the echo provider answers with when this version (or snapshot) runs
    today on a first turn: the hash of the rendered system prompt."""
    snapshot = what.snapshot if isinstance(what, PromptVersion) else what
    rendered = render_system_prompt(snapshot, first_turn=True, today=timezone.localdate())
    return hashlib.sha256(rendered.text.encode()).hexdigest()[:8]


def fan_out(n: int) -> dict:
    """A definition of n steps: a root, n - 2 after it in parallel (all on `lecteur`), and
    one on `critique` that never runs (`when` a flag no run sets)."""
    steps = [{"name": "s0", "agent_name": "lecteur", "depends_on": []}]
    steps += [
        {
            "name": f"s{i}",
            "agent_name": "lecteur",
            "depends_on": ["s0"],
            "input_mapping": {"t": "$.steps.s0.output.answer"},
        }
        for i in range(1, n - 1)
    ]
    steps.append({"name": "never", "agent_name": "critique", "depends_on": ["s0"], "when": "$.inputs.flag"})
    return {"version": 1, "steps": steps}


def make_fan_out(workspace: Workspace) -> str:
    """The workflow `fan` (FAN_OUT) on an echo default preset, and the raw value of an
    API key (read, write) that may start it."""
    from workflows.services import workflow_create

    operator = Actor.for_operator(name="tests")
    make_echo_preset(workspace, by=operator)
    for key in ("left", "right", "join"):
        agent_create(workspace=workspace, actor=operator, key=key, name=key, snapshot={"system_prompt": key})
    workflow_create(workspace=workspace, actor=operator, key="fan", name="Fan", definition=FAN_OUT)
    return make_key(workspace, "fan", "read,write", by=operator)[1]
