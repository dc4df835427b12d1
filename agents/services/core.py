"""Use cases for agents, presets, credentials and skills (non-prompt writes), and the
one code path that records prompt versions and puts them live.

Rights: credentials need MANAGE; presets and agents change what runs live, so they
need PUBLISH (or SANDBOX for sandbox rows, which no person ever sees).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mass_mail
from django.db import IntegrityError, models, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from agents import vault
from agents.diff import diff_stats
from agents.models import Agent, AgentSection, AgentSkill, Credential, Preset, PromptVersion, Skill
from agents.snapshot import SNAPSHOT_KEYS, apply_changes, content_hash, is_empty_prompt, normalize_snapshot
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError, NotFound
from aihummer.history import stamp
from aihummer.models import Membership, User, Workspace
from aihummer.tasks import enqueue

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
    raise ValidationError(
        {"key": f"{_a(noun)} {noun} with key '{key}' already exists in workspace '{workspace.slug}'."}
    )


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


def _a(noun: str) -> str:
    return "An" if noun[:1] in "aeiou" else "A"


def _same_workspace(target: models.Model | None, workspace: Workspace, field: str, noun: str) -> None:
    # Another workspace's row answers exactly as a missing one.
    if target is not None and target.workspace_id != workspace.pk:
        raise ValidationError({field: f"Unknown {noun}."})


def _no_sandbox_reference(owner: models.Model, target: models.Model | None, field: str, noun: str) -> None:
    if target is not None and target.is_sandbox and not owner.is_sandbox:
        raise ValidationError({field: f"A real row cannot use the sandbox {noun} '{target.key}'."})


def _write_verb(is_sandbox: bool) -> Verb:
    return Verb.SANDBOX if is_sandbox else Verb.PUBLISH


@sensitive_variables("secret")
def _clean_secret(secret: object) -> str:
    if not isinstance(secret, str) or not secret.strip():
        raise ValidationError({"secret": "Give the secret; it cannot be empty."})
    if len(secret) > MAX_SECRET_CHARS:
        raise ValidationError({"secret": f"At most {MAX_SECRET_CHARS} characters."})
    return secret.strip()


# --- credentials ----------------------------------------------------------------------
@sensitive_variables("secret")
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


@sensitive_variables("secret")
def credential_update(*, credential: Credential, actor: Actor, name: str | None = None, secret: str = "") -> Credential:
    """Rename a credential and/or replace its secret (the old secret is gone for good)."""
    actor.require(Verb.MANAGE, credential.workspace)
    with transaction.atomic():
        # Compare with the row as stored, not with the caller's copy (an admin form
        # has already written the new name onto it).
        credential = Credential.objects.select_for_update().get(pk=credential.pk)
        return _credential_write(credential=credential, actor=actor, name=name, secret=secret)


@sensitive_variables("secret")
def _credential_write(*, credential: Credential, actor: Actor, name: str | None, secret: str) -> Credential:
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
        locked = list(Preset.objects.for_workspace(preset.workspace_id).select_for_update().order_by("pk"))
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


def preset_api_key(*, preset: Preset) -> str:
    """The decrypted API key a model call with `preset` sends ("" for echo); a missing
    or unreadable credential is a `not_configured` provider error."""
    from agents.runtime.providers.base import ProviderError  # the runtime imports services, not the reverse

    if preset.provider_name == Preset.Provider.ECHO:
        return ""
    if preset.credential is None:
        raise ProviderError(
            ProviderError.NOT_CONFIGURED, f"Preset '{preset.key}' has no credential: set its API key in the admin."
        )
    try:
        return vault.decrypt(preset.credential.ciphertext)
    except vault.VaultError as exc:
        raise ProviderError(ProviderError.NOT_CONFIGURED, f"Credential '{preset.credential.key}': {exc}") from None


def preset_resolve(*, agent: Agent) -> Preset | None:
    """The preset `agent` runs on: its own, else the workspace's default."""
    if agent.preset_id:
        return agent.preset
    return Preset.objects.for_workspace(agent.workspace_id).active().first()


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
        agent.preset = Preset.objects.for_workspace(workspace).active().first()
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
        diff_stats=diff_stats(base_version.snapshot if base_version else None, snapshot),
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


# --- the approval queue ---------------------------------------------------------------
class IdenticalToLive(ApplicationError):
    """A proposal that would change nothing: nothing is recorded."""


class StaleProposal(ApplicationError):
    """The live version moved since the proposal was made; approval needs confirmation."""


PROPOSAL_MODES = ("pending", "live")
# What an agent may never change about itself, whoever it acts for.
AGENT_SELF_EDIT_FORBIDDEN = ("allowed_tool_names", "runtime_policy")


def _require_visible(actor: Actor, workspace: Workspace, noun: str = "agent") -> None:
    # Another workspace's row answers exactly as a missing one.
    if not actor.belongs_to(workspace):
        raise NotFound(f"Unknown {noun}.")


def _identity_label(actor: Actor) -> str:
    return ":".join(map(str, actor.identity))


def prompt_version_propose(
    *, agent: Agent, changes: dict, actor: Actor, reason: str = "", mode: str = "pending"
) -> PromptVersion:
    """Record a change to what `agent` is told: the only way a snapshot changes.

    `changes` maps snapshot keys to their whole new value (`identity` merges per field;
    `sections` is the full ordered list). `pending` leaves the live agent untouched
    until a person approves; `live` applies at once and needs the publish right. A
    sandbox agent's changes apply at once (nobody could review a hidden row). A change
    identical to live records nothing (IdenticalToLive); one identical to the
    proposer's own open proposal returns that proposal.
    """
    if mode not in PROPOSAL_MODES:
        raise ValidationError({"mode": f"Unknown mode '{mode}'; use pending or live."})
    _require_visible(actor, agent.workspace)
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.PROPOSE, agent.workspace)
    applies_now = agent.is_sandbox or mode == "live"
    if mode == "live" and not agent.is_sandbox:
        actor.require(Verb.PUBLISH, agent.workspace)
        if agent.workspace.every_change_needs_review:
            raise PermissionDenied(
                f"Workspace '{agent.workspace.slug}' requires a second person for every change: "
                "propose it (mode pending)."
            )
    with transaction.atomic():
        # The agent's row lock serialises proposals and decisions on one agent.
        agent = Agent.all_objects.select_for_update(of=("self",)).select_related("live_version").get(pk=agent.pk)
        live = agent.live_version
        snapshot = apply_changes(live.snapshot, changes)
        if is_empty_prompt(snapshot):
            raise ValidationError(
                {"snapshot": "The agent would be told nothing: give an identity, sections or a prompt."}
            )
        if actor.kind == Actor.AGENT:
            touched = [key for key in AGENT_SELF_EDIT_FORBIDDEN if snapshot[key] != live.snapshot[key]]
            if touched:
                raise PermissionDenied(
                    f"An agent may not change its own {' or '.join(touched)}: a person must propose that."
                )
        digest = content_hash(snapshot)
        if digest == live.content_hash:
            raise IdenticalToLive(f"Identical to live version {live.number}; nothing recorded.")
        if not applies_now:
            duplicate = (
                PromptVersion.all_objects.pending()
                .filter(agent=agent, content_hash=digest, proposer_identity=_identity_label(actor))
                .first()
            )
            if duplicate is not None:
                return duplicate
        status = PromptVersion.Status.APPROVED if applies_now else PromptVersion.Status.PENDING
        version = version_record(
            agent=agent, snapshot=snapshot, actor=actor, status=status, reason=reason, base_version=live
        )
        if applies_now:
            version.review_note = "applied directly" if not agent.is_sandbox else "sandbox: applied directly"
            version.save(update_fields=["review_note", "updated_at"])
            version_go_live(agent=agent, version=version, actor=actor)
        else:
            _notify(version, "proposed")
    return version


def prompt_version_approve(
    *, version: PromptVersion, actor: Actor, note: str = "", confirm_stale: bool = False
) -> PromptVersion:
    """Approve a pending proposal and put it live. The reviewer is never the proposer;
    a stale proposal (the live version moved since) needs `confirm_stale=True`."""
    return _decide(version=version, actor=actor, note=note, confirm_stale=confirm_stale, approve=True)


def prompt_version_reject(*, version: PromptVersion, actor: Actor, note: str) -> PromptVersion:
    """Reject a pending proposal; it is never applied. A note saying why is required."""
    if not isinstance(note, str) or not note.strip():
        raise ValidationError({"note": "Say why you reject it: the proposer reads this note."})
    return _decide(version=version, actor=actor, note=note, confirm_stale=True, approve=False)


def _decide(*, version: PromptVersion, actor: Actor, note: str, confirm_stale: bool, approve: bool) -> PromptVersion:
    _require_visible(actor, version.workspace, "version")
    actor.require(Verb.DECIDE, version.workspace)
    with transaction.atomic():
        # Agent first, then version, always in this order: two reviewers deciding at
        # once serialise on the agent, and the second sees the first's decision.
        agent = Agent.all_objects.select_for_update().get(pk=version.agent_id)
        version = PromptVersion.all_objects.select_for_update().get(pk=version.pk)
        _require_pending(version)
        if _identity_label(actor) == version.proposer_identity:
            raise PermissionDenied("You proposed this version: another person must decide it (four eyes).")
        if approve and not confirm_stale and agent.live_version_id != version.base_version_id:
            reverted = [f"v{v.number}" for v in prompt_version_reverts(version)]
            raise StaleProposal(
                f"Version {version.number} was proposed against v{version.base_version.number}, but the live version "
                f"moved since; approving would revert {', '.join(reverted) or 'later changes'}. Confirm to approve.",
                extra={"reverts": reverted},
            )
        version.status = PromptVersion.Status.APPROVED if approve else PromptVersion.Status.REJECTED
        version.reviewed_by = actor.person
        version.reviewed_at = timezone.now()
        version.review_note = note.strip()
        stamp(version, actor=actor, reason=version.status)
        version.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note", "updated_at"])
        if approve:
            version_go_live(agent=agent, version=version, actor=actor)
        _notify(version, "decided")
    return version


def prompt_version_withdraw(*, version: PromptVersion, actor: Actor) -> PromptVersion:
    """The proposer takes back their pending proposal."""
    _require_visible(actor, version.workspace, "version")
    actor.require(Verb.WITHDRAW, version.workspace)
    with transaction.atomic():
        Agent.all_objects.select_for_update().get(pk=version.agent_id)
        version = PromptVersion.all_objects.select_for_update().get(pk=version.pk)
        _require_pending(version)
        if _identity_label(actor) != version.proposer_identity:
            raise PermissionDenied("Only the proposer may withdraw a proposal; reviewers reject it instead.")
        version.status = PromptVersion.Status.WITHDRAWN
        version.reviewed_at = timezone.now()
        stamp(version, actor=actor, reason="withdrawn")
        version.save(update_fields=["status", "reviewed_at", "updated_at"])
    return version


def _require_pending(version: PromptVersion) -> None:
    if version.is_pending:
        return
    by = f" by {version.reviewed_by.get_username()}" if version.reviewed_by else ""
    raise AlreadyDecided(
        f"Version {version.number} of '{version.agent.key}' was already {version.status}{by} "
        f"at {version.reviewed_at:%Y-%m-%d %H:%M:%S} UTC."
    )


def prompt_version_reverts(version: PromptVersion) -> list[PromptVersion]:
    """The versions that went live after `version` was proposed: approving it would
    undo them. Empty when the proposal is not stale."""
    if version.agent.live_version_id == version.base_version_id:
        return []
    return list(
        PromptVersion.all_objects.filter(
            agent_id=version.agent_id, status=PromptVersion.Status.APPROVED, reviewed_at__gt=version.created_at
        )
        .exclude(pk=version.pk)
        .order_by("reviewed_at")
    )


def prompt_version_restore(
    *, version: PromptVersion, actor: Actor, reason: str = "", mode: str = "pending"
) -> PromptVersion:
    """Propose (or, with publish and `live`, apply) an old snapshot as a new version.
    History is never rewritten: the old version stays as it was."""
    _require_visible(actor, version.workspace, "version")
    changes = {key: version.snapshot[key] for key in SNAPSHOT_KEYS}
    label = f"restore of v{version.number}"
    return prompt_version_propose(
        agent=version.agent, changes=changes, actor=actor, reason=f"{label}: {reason}" if reason else label, mode=mode
    )


def agent_clone(*, version: PromptVersion, actor: Actor, key: str, name: str, description: str = "") -> Agent:
    """A new agent from any version of another (policy, tools and skills included),
    with its own version 1."""
    _require_visible(actor, version.workspace, "version")
    source = version.agent
    return agent_create(
        workspace=source.workspace,
        actor=actor,
        key=key,
        name=name,
        description=description or source.description,
        preset=source.preset,
        snapshot=version.snapshot,
        is_sandbox=source.is_sandbox,
        reason=f"clone of {source.key} v{version.number}",
    )


def skill_update(
    *, skill: Skill, actor: Actor, title: str | None = None, body: str | None = None, reason: str = ""
) -> list[PromptVersion]:
    """Edit a shared skill and propose the new text to every agent that carries it,
    one proposal each, so no live agent changes without review. Returns them."""
    _require_visible(actor, skill.workspace, "skill")
    actor.require(Verb.PROPOSE, skill.workspace)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        skill.title = skill.title if title is None else title
        skill.body = skill.body if body is None else body
        skill.full_clean(validate_unique=False, validate_constraints=False)
        stamp(skill, actor=actor, reason=reason or "updated")
        skill.save()
        entry = skill_as_snapshot_entry(skill)
        # all_objects: sandbox agents carry shared skills too (their changes apply at once).
        carriers = Agent.all_objects.filter(
            workspace_id=skill.workspace_id, skills__key=skill.key, skills__shared=True
        ).order_by("pk")
        proposals = []
        for agent in carriers.select_related("live_version", "workspace"):
            skills = [
                entry if s["key"] == skill.key and s["shared"] else s for s in agent.live_version.snapshot["skills"]
            ]
            try:
                proposals.append(
                    prompt_version_propose(
                        agent=agent,
                        changes={"skills": skills},
                        actor=actor,
                        reason=reason or f"shared skill '{skill.key}' updated",
                    )
                )
            except IdenticalToLive:
                continue
    return proposals


def _notify(version: PromptVersion, event: str) -> None:
    from agents.tasks import prompt_version_notify_task

    enqueue(prompt_version_notify_task, version.pk, event)


def prompt_version_notify(*, version_id: int, event: str) -> int:
    """E-mail the workspace's reviewers (but not the proposer) about a new proposal,
    or the proposer about a decision. Returns the number of messages sent."""
    version = PromptVersion.all_objects.select_related("agent", "workspace", "proposed_by", "reviewed_by").get(
        pk=version_id
    )
    if event == "proposed":
        reviewers = User.objects.filter(
            is_active=True,
            memberships__workspace_id=version.workspace_id,
            memberships__role__in=[Membership.Role.REVIEWER, Membership.Role.ADMIN],
        ).exclude(email="")
        if version.proposed_by_id:
            reviewers = reviewers.exclude(pk=version.proposed_by_id)
        subject = f"[AiHummer] {version.agent.key} v{version.number} waits for review"
        body = (
            f"{version.source} proposed a change to '{version.agent.key}' in '{version.workspace.slug}'.\n\n"
            f"Reason: {version.reason or '—'}"
        )
        recipients = list(reviewers.order_by("pk").values_list("email", flat=True))
    elif event == "decided":
        proposer = version.proposed_by
        if proposer is None or not proposer.email:
            return 0
        decided_by = version.reviewed_by.get_username() if version.reviewed_by else "someone"
        subject = f"[AiHummer] {version.agent.key} v{version.number} was {version.status}"
        body = f"{decided_by} {version.status} your proposal.\n\nNote: {version.review_note or '—'}"
        recipients = [proposer.email]
    else:
        raise ValueError(f"Unknown notification event {event!r}.")
    messages = [(subject, body, None, [email]) for email in recipients]
    return send_mass_mail(messages, fail_silently=False) if messages else 0
