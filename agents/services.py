"""Use cases for agents, presets, credentials and skills (non-prompt writes), and the
one code path that records prompt versions and puts them live.

Rights: credentials need MANAGE; presets and agents change what runs live, so they
need PUBLISH (or SANDBOX for sandbox rows, which no person ever sees).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from agents import vault
from agents.models import Agent, AgentSection, AgentSkill, Credential, Preset, PromptVersion, Skill
from agents.snapshot import content_hash, is_empty_prompt, normalize_snapshot
from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError
from aihummer.history import stamp
from aihummer.models import Workspace

MAX_SECRET_CHARS = 10_000
PRESET_FIELDS = (
    "name",
    "provider_name",
    "base_url",
    "model",
    "temperature",
    "top_p",
    "max_output_tokens",
    "timeout_seconds",
    "streaming_enabled",
    "credential",
)
AGENT_FIELDS = ("name", "description", "preset", "is_active")


# --- shared checks --------------------------------------------------------------------
def _require_key_free(
    model: type[models.Model], *, workspace: Workspace, key: str, noun: str, exclude_pk: int | None = None
) -> None:
    # all_objects: a sandbox key may not shadow a real one, nor the reverse, and the
    # default manager's uniqueness check (full_clean) cannot see sandbox rows.
    manager = getattr(model, "all_objects", model._default_manager)
    clash = manager.filter(workspace=workspace, key=key).exclude(pk=exclude_pk).first()
    if clash is None:
        return
    if getattr(clash, "is_sandbox", False):
        raise ValidationError(
            {
                "key": f"Key '{key}' is taken by sandbox {noun} '{clash.key}' (id {clash.pk}), left by an automated "
                f"client. Remove it with `manage.py sandbox_cleanup --workspace {workspace.slug}`, then retry."
            }
        )
    raise ValidationError({"key": f"A {noun} with key '{key}' already exists in workspace '{workspace.slug}'."})


def _save_checked(instance: models.Model, *, actor: Actor, reason: str, noun: str, **save_kwargs: object) -> None:
    """full_clean, stamp history, save; a lost race on a unique key is a field error too."""
    instance.full_clean(validate_unique=False, validate_constraints=False)
    stamp(instance, actor=actor, reason=reason)
    try:
        with transaction.atomic():
            instance.save(**save_kwargs)
    except IntegrityError as exc:
        raise ValidationError(
            {"key": f"A {noun} with key '{instance.key}' already exists (saved concurrently)."}
        ) from exc


def _same_workspace(target: models.Model | None, workspace: Workspace, field: str, noun: str) -> None:
    # Another workspace's row answers exactly as a missing one.
    if target is not None and target.workspace_id != workspace.pk:
        raise ValidationError({field: f"Unknown {noun}."})


def _no_sandbox_reference(owner: models.Model, target: models.Model | None, field: str, noun: str) -> None:
    if target is not None and target.is_sandbox and not owner.is_sandbox:
        raise ValidationError({field: f"A real row cannot use the sandbox {noun} '{target.key}'."})


def _write_verb(is_sandbox: bool) -> Verb:
    return Verb.SANDBOX if is_sandbox else Verb.PUBLISH


def _clean_secret(secret: object) -> str:
    if not isinstance(secret, str) or not secret.strip():
        raise ValidationError({"secret": "Give the secret; it cannot be empty."})
    if len(secret) > MAX_SECRET_CHARS:
        raise ValidationError({"secret": f"At most {MAX_SECRET_CHARS} characters."})
    return secret.strip()


# --- credentials ----------------------------------------------------------------------
def credential_create(*, workspace: Workspace, key: str, secret: str, actor: Actor, name: str = "") -> Credential:
    """Encrypt and store a secret; it is never shown again, only its fingerprint."""
    actor.require(Verb.MANAGE, workspace)
    secret = _clean_secret(secret)
    _require_key_free(Credential, workspace=workspace, key=key, noun="credential")
    credential = Credential(
        workspace=workspace, key=key, name=name, ciphertext=vault.encrypt(secret), fingerprint=vault.fingerprint(secret)
    )
    _save_checked(credential, actor=actor, reason="created", noun="credential")
    return credential


def credential_update(*, credential: Credential, actor: Actor, name: str | None = None, secret: str = "") -> Credential:
    """Rename a credential and/or replace its secret (the old secret is gone for good)."""
    actor.require(Verb.MANAGE, credential.workspace)
    fields = ["updated_at"]
    if name is not None and name != credential.name:
        credential.name = name
        fields.append("name")
    if secret:
        secret = _clean_secret(secret)
        credential.ciphertext = vault.encrypt(secret)
        credential.fingerprint = vault.fingerprint(secret)
        fields += ["ciphertext", "fingerprint"]
    if len(fields) > 1:
        credential.full_clean(validate_unique=False, validate_constraints=False)
        stamp(credential, actor=actor, reason="secret replaced" if secret else "renamed")
        credential.save(update_fields=fields)
    return credential


def credential_delete(*, credential: Credential, actor: Actor) -> None:
    """Delete an unused credential; one a preset uses is refused, naming the presets."""
    actor.require(Verb.MANAGE, credential.workspace)
    users = sorted(Preset.all_objects.filter(credential=credential).values_list("key", flat=True))
    if users:
        raise ApplicationError(f"Credential '{credential.key}' is used by presets: {', '.join(users)}.")
    stamp(credential, actor=actor, reason="deleted")
    credential.delete()


def credential_rotate_all() -> int:
    """Re-encrypt every credential under the first vault key; returns how many."""
    rotated = 0
    for credential in Credential.objects.select_for_update().order_by("pk").iterator():
        credential.ciphertext = vault.rotate(credential.ciphertext)
        # Rotation changes no secret: no history record, hence the queryset update.
        Credential.objects.filter(pk=credential.pk).update(ciphertext=credential.ciphertext)
        rotated += 1
    return rotated


# --- presets --------------------------------------------------------------------------
def preset_create(
    *,
    workspace: Workspace,
    actor: Actor,
    key: str,
    name: str,
    provider_name: str,
    model: str,
    is_active: bool = False,
    is_sandbox: bool = False,
    **fields: object,
) -> Preset:
    """A new preset; `is_active=True` also makes it the workspace's default."""
    actor.require(_write_verb(is_sandbox), workspace)
    unknown = set(fields) - set(PRESET_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown preset field."))
    preset = Preset(
        workspace=workspace,
        key=key,
        name=name,
        provider_name=provider_name,
        model=model,
        is_sandbox=is_sandbox,
        **fields,
    )
    _same_workspace(preset.credential, workspace, "credential", "credential")
    _require_key_free(Preset, workspace=workspace, key=key, noun="preset")
    with transaction.atomic():
        _save_checked(preset, actor=actor, reason="created", noun="preset")
        if is_active:
            preset = preset_activate(preset=preset, actor=actor)
    return preset


def preset_update(*, preset: Preset, actor: Actor, **fields: object) -> Preset:
    """Change a preset's model settings (not its key, workspace or default flag)."""
    actor.require(_write_verb(preset.is_sandbox), preset.workspace)
    unknown = set(fields) - set(PRESET_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown or read-only preset field."))
    with transaction.atomic():
        preset = Preset.all_objects.select_for_update().get(pk=preset.pk)
        for field, value in fields.items():
            setattr(preset, field, value)
        _same_workspace(preset.credential, preset.workspace, "credential", "credential")
        _save_checked(preset, actor=actor, reason="updated", noun="preset")
    return preset


def preset_activate(*, preset: Preset, actor: Actor) -> Preset:
    """Make `preset` the workspace's default, in place of the current one."""
    actor.require(Verb.PUBLISH, preset.workspace)
    if preset.is_sandbox:
        raise ValidationError({"is_active": "A sandbox preset is never the workspace's default."})
    with transaction.atomic():
        # Lock the workspace's presets in pk order: two activations at once serialise
        # here instead of one of them hitting the one-active constraint.
        locked = list(Preset.objects.select_for_update().filter(workspace_id=preset.workspace_id).order_by("pk"))
        for other in locked:
            if other.is_active and other.pk != preset.pk:
                other.is_active = False
                stamp(other, actor=actor, reason=f"default moved to {preset.key}")
                other.save(update_fields=["is_active", "updated_at"])
        preset = next(p for p in locked if p.pk == preset.pk)
        if not preset.is_active:
            preset.is_active = True
            stamp(preset, actor=actor, reason="made default")
            preset.save(update_fields=["is_active", "updated_at"])
    return preset


def preset_dependents(preset: Preset) -> list[str]:
    """Everything that uses `preset`, sandbox rows included (they would break too)."""
    agents = Agent.all_objects.filter(preset=preset).order_by("key")
    return [f"agent '{a.key}'" + (" (sandbox)" if a.is_sandbox else "") for a in agents]


def preset_delete(*, preset: Preset, actor: Actor, force: bool = False) -> list[str]:
    """Delete a preset. With dependents it is refused, listing them, unless `force`:
    then their agents fall back to the workspace's default preset."""
    actor.require(_write_verb(preset.is_sandbox), preset.workspace)
    with transaction.atomic():
        dependents = preset_dependents(preset)
        if dependents and not force:
            raise ApplicationError(
                f"Preset '{preset.key}' is used by {', '.join(dependents)}; delete with force to detach them.",
                extra={"dependents": dependents},
            )
        for agent in Agent.all_objects.select_for_update().filter(preset=preset).order_by("pk"):
            agent.preset = None
            stamp(agent, actor=actor, reason=f"preset {preset.key} deleted")
            agent.save(update_fields=["preset", "updated_at"])
        stamp(preset, actor=actor, reason="deleted")
        preset.delete()
    return dependents


def preset_resolve(*, agent: Agent) -> Preset | None:
    """The preset `agent` runs on: its own, else the workspace's default."""
    if agent.preset_id:
        return agent.preset
    return Preset.objects.filter(workspace_id=agent.workspace_id, is_active=True).first()


# --- shared skills --------------------------------------------------------------------
def skill_create(*, workspace: Workspace, key: str, title: str, body: str, actor: Actor) -> Skill:
    """A shared skill. It reaches an agent only through that agent's versions."""
    actor.require(Verb.PROPOSE, workspace)
    _require_key_free(Skill, workspace=workspace, key=key, noun="skill")
    skill = Skill(workspace=workspace, key=key, title=title, body=body)
    _save_checked(skill, actor=actor, reason="created", noun="skill")
    return skill


def skill_as_snapshot_entry(skill: Skill) -> dict:
    """How a shared skill is copied, by value, into a snapshot."""
    return {"key": skill.key, "title": skill.title, "body": skill.body, "shared": True}


# --- agents ---------------------------------------------------------------------------
def agent_create(
    *,
    workspace: Workspace,
    actor: Actor,
    key: str,
    name: str,
    description: str = "",
    preset: Preset | None = None,
    snapshot: dict | None = None,
    is_builtin: bool = False,
    is_sandbox: bool = False,
    reason: str = "created",
) -> Agent:
    """A new agent with its version 1 live. Without a snapshot it is told only its
    name. A sandbox agent stores the preset resolved now (the default, if none)."""
    actor.require(_write_verb(is_sandbox), workspace)
    snapshot = normalize_snapshot(snapshot if snapshot is not None else {"identity": {"name": name}})
    if is_empty_prompt(snapshot):
        raise ValidationError({"snapshot": "The agent would be told nothing: give an identity, sections or a prompt."})
    agent = Agent(
        workspace=workspace,
        key=key,
        name=name,
        description=description,
        preset=preset,
        is_builtin=is_builtin,
        is_sandbox=is_sandbox,
    )
    if is_sandbox and preset is None:
        agent.preset = Preset.objects.filter(workspace=workspace, is_active=True).first()
        if agent.preset is None:
            raise ValidationError({"preset": "This workspace has no default preset; give one."})
    _same_workspace(agent.preset, workspace, "preset", "preset")
    _no_sandbox_reference(agent, agent.preset, "preset", "preset")
    _require_key_free(Agent, workspace=workspace, key=key, noun="agent")
    with transaction.atomic():
        _save_checked(agent, actor=actor, reason=reason, noun="agent")
        version = version_record(
            agent=agent, snapshot=snapshot, actor=actor, status=PromptVersion.Status.APPROVED, reason=reason
        )
        version_go_live(agent=agent, version=version, actor=actor)
    return agent


def agent_update(*, agent: Agent, actor: Actor, **fields: object) -> Agent:
    """Change what is not prompt-bearing: name, description, preset, enabled."""
    actor.require(_write_verb(agent.is_sandbox), agent.workspace)
    unknown = set(fields) - set(AGENT_FIELDS)
    if unknown:
        raise ValidationError(
            dict.fromkeys(sorted(unknown), "Not editable here: what an agent is told changes through a proposal.")
        )
    with transaction.atomic():
        agent = Agent.all_objects.select_for_update().get(pk=agent.pk)
        for field, value in fields.items():
            setattr(agent, field, value)
        _same_workspace(agent.preset, agent.workspace, "preset", "preset")
        _no_sandbox_reference(agent, agent.preset, "preset", "preset")
        _save_checked(agent, actor=actor, reason="updated", noun="agent")
    return agent


def agent_dependents(agent: Agent) -> list[str]:
    """What would break without `agent`: agents that delegate to it by key."""
    delegators = Agent.all_objects.filter(workspace_id=agent.workspace_id).exclude(pk=agent.pk).order_by("key")
    return [
        f"agent '{other.key}' delegates to it" + (" (sandbox)" if other.is_sandbox else "")
        for other in delegators.only("key", "is_sandbox", "runtime_policy")
        if agent.key in ((other.runtime_policy or {}).get("children") or {}).get("allowed_agents", [])
    ]


def agent_delete(*, agent: Agent, actor: Actor, force: bool = False) -> list[str]:
    """Delete an agent and its versions. Built-in agents never; with dependents only
    when forced. Returns the dependents it had."""
    actor.require(_write_verb(agent.is_sandbox), agent.workspace)
    if agent.is_builtin:
        raise ApplicationError(f"Agent '{agent.key}' is built in and cannot be deleted; disable it instead.")
    dependents = agent_dependents(agent)
    if dependents and not force:
        raise ApplicationError(
            f"Agent '{agent.key}' is used: {'; '.join(dependents)}. Delete with force to proceed.",
            extra={"dependents": dependents},
        )
    with transaction.atomic():
        stamp(agent, actor=actor, reason="deleted")
        agent.delete()
    return dependents


# --- versions: the recorder's primitives ----------------------------------------------
def version_record(
    *,
    agent: Agent,
    snapshot: dict,
    actor: Actor,
    status: str,
    reason: str = "",
    base_version: PromptVersion | None = None,
) -> PromptVersion:
    """Append a version to `agent` (the caller holds the agent's row lock or has just
    created it). An approved version is recorded as decided by the actor, now."""
    last = PromptVersion.all_objects.filter(agent=agent).order_by("-number").values_list("number", flat=True).first()
    decided = status != PromptVersion.Status.PENDING
    version = PromptVersion(
        workspace_id=agent.workspace_id,
        agent=agent,
        number=(last or 0) + 1,
        status=status,
        snapshot=snapshot,
        content_hash=content_hash(snapshot),
        source=actor.source,
        reason=reason,
        proposed_by=actor.person,
        proposer_identity=":".join(map(str, actor.identity)),
        base_version=base_version,
        reviewed_by=actor.person if decided else None,
        reviewed_at=timezone.now() if decided else None,
        is_sandbox=agent.is_sandbox,
    )
    stamp(version, actor=actor, reason=status)
    version.save()
    return version


def version_go_live(*, agent: Agent, version: PromptVersion, actor: Actor) -> Agent:
    """Point `agent` at `version` and rewrite its profile rows from the snapshot."""
    snapshot = version.snapshot
    identity = snapshot["identity"]
    agent.live_version = version
    agent.identity_name = identity["name"]
    agent.role = identity["role"]
    agent.persona = identity["persona"]
    agent.language = identity["language"]
    agent.goals = identity["goals"]
    agent.system_prompt = snapshot["system_prompt"]
    agent.onboarding = snapshot["onboarding"]
    agent.allowed_tool_names = snapshot["allowed_tool_names"]
    agent.runtime_policy = snapshot["runtime_policy"]
    stamp(agent, actor=actor, reason=f"version {version.number} live")
    agent.save()
    _sync_projection(agent, AgentSection, snapshot["sections"], ("title", "body", "position", "enabled"), actor)
    skills = [{**skill, "position": index} for index, skill in enumerate(snapshot["skills"])]
    _sync_projection(agent, AgentSkill, skills, ("title", "body", "shared", "position"), actor)
    return agent


def _sync_projection(
    agent: Agent, model: type[models.Model], items: list[dict], fields: tuple[str, ...], actor: Actor
) -> None:
    """Make `agent`'s rows of `model` equal `items`, row by row, so history shows what
    changed rather than a wholesale replacement."""
    existing = {row.key: row for row in model.objects.filter(agent=agent)}
    wanted = {item["key"]: item for item in items}
    for key, row in existing.items():
        if key not in wanted:
            stamp(row, actor=actor, reason="removed")
            row.delete()
    for key, item in wanted.items():
        row = existing.get(key) or model(agent=agent, key=key)
        changed = [field for field in fields if getattr(row, field, None) != item[field]]
        if row.pk and not changed:
            continue
        for field in fields:
            setattr(row, field, item[field])
        stamp(row, actor=actor, reason="updated" if row.pk else "added")
        row.save()


def agent_snapshot(agent: Agent) -> dict:
    """The live snapshot of `agent`."""
    return agent.live_version.snapshot
