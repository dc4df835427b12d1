"""Presets: which provider, model and credential an agent runs on. Rights: PUBLISH (SANDBOX
for sandbox rows)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext

from agents import vault
from agents.models import Agent, Preset, PromptVersion
from agents.services.versions import version_go_live, version_record
from aihummer.actors import Actor, Verb
from aihummer.history import stamp
from aihummer.models import Workspace
from aihummer.service_checks import (
    delete_with_dependents,
    name_dependents,
    require_key_free,
    same_workspace,
    save_checked,
    write_verb,
)

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
    actor.require(write_verb(is_sandbox), workspace)
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
    same_workspace(preset.credential, workspace, "credential", "credential")
    _check_destination(preset, actor=actor, before=None)
    require_key_free(Preset, workspace=workspace, key=key, noun="preset", actor=actor)
    with transaction.atomic():
        save_checked(preset, actor=actor, reason="created", noun="preset")
        if is_active:
            preset = preset_activate(preset=preset, actor=actor)
    return preset


def preset_update(*, preset: Preset, actor: Actor, **fields: object) -> Preset:
    """Change a preset's model settings (not its key, workspace or default flag)."""
    actor.require(write_verb(preset.is_sandbox), preset.workspace)
    unknown = set(fields) - set(PRESET_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown or read-only preset field."))
    with transaction.atomic():
        preset = Preset.all_objects.select_for_update().get(pk=preset.pk)
        before = _destination(preset)
        for field, value in fields.items():
            setattr(preset, field, value)
        same_workspace(preset.credential, preset.workspace, "credential", "credential")
        _check_destination(preset, actor=actor, before=before)
        save_checked(preset, actor=actor, reason="updated", noun="preset")
    return preset


def _destination(preset: Preset) -> tuple[int | None, str]:
    return preset.credential_id, preset.destination_host


def _check_destination(preset: Preset, *, actor: Actor, before: tuple[int | None, str] | None) -> None:
    """A secret goes only where its credential allows, and only someone who manages
    credentials may point one at a new host: the publish right alone would otherwise
    let a key send any vault secret to a server of its choosing."""
    credential = preset.credential
    if credential is None or _destination(preset) == before:
        return
    host = preset.destination_host
    if not credential.may_be_sent_to(host):
        field = "base_url" if preset.base_url else "credential"
        allowed = ", ".join(credential.allowed_hosts)
        refusal = gettext("Credential '%(credential)s' may be sent only to %(allowed)s, not to %(host)s.")
        names = {"credential": credential.key, "allowed": allowed, "host": host or gettext("this URL")}
        raise ValidationError({field: refusal % names})
    refusal = actor.refusal(Verb.MANAGE, preset.workspace)
    if refusal is not None:
        needs = gettext("Sending credential '%(credential)s' to %(host)s needs the right to manage credentials.")
        names = {"credential": credential.key, "host": host or gettext("a new URL")}
        raise PermissionDenied(f"{needs % names} {refusal}")


def preset_activate(*, preset: Preset, actor: Actor) -> Preset:
    """Make `preset` the workspace's default, in place of the current one."""
    actor.require(Verb.PUBLISH, preset.workspace)
    if preset.is_sandbox:
        raise ValidationError({"is_active": gettext("A sandbox preset is never the workspace's default.")})
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


def preset_change(*, preset: Preset, actor: Actor, fields: dict | None = None, is_active: bool | None = None) -> Preset:
    """Change a preset's settings (`preset_update`) and, with `is_active=True`, make it
    the workspace's default (`preset_activate`), both or neither. A default stops being
    one only when another preset becomes the default: `is_active=False` on it is refused."""
    if is_active is False and preset.is_active:
        raise ValidationError(
            {"is_active": gettext("The default preset stays the default until another preset is made the default.")}
        )
    with transaction.atomic():
        if fields:
            preset = preset_update(preset=preset, actor=actor, **fields)
        if is_active and not preset.is_active:
            preset = preset_activate(preset=preset, actor=actor)
    return preset


def preset_dependents(preset: Preset, *, actor: Actor | None = None) -> list[str]:
    """Everything that uses `preset`, sandbox rows included (they would break too);
    named only to an `actor` that can see them, counted for the others."""
    agents = Agent.all_objects.filter(preset=preset).order_by("key").values_list("key", "is_sandbox")
    rows = [(gettext("agent '%(agent)s'") % {"agent": key}, is_sandbox) for key, is_sandbox in agents]
    return name_dependents(rows, actor=actor, workspace=preset.workspace, noun="agent")


def preset_delete(*, preset: Preset, actor: Actor, force: bool = False) -> list[str]:
    """Delete a preset. With dependents it is refused, listing them, unless `force`:
    then their agents fall back to the workspace's default preset, each by a new live
    version that says so (the preset is part of what a version decides). A pending
    proposal naming the preset can no longer go live: its approval says why."""
    actor.require(write_verb(preset.is_sandbox), preset.workspace)
    with transaction.atomic():
        dependents = preset_dependents(preset, actor=actor)
        if force:
            agents = Agent.all_objects.select_for_update(of=("self",)).select_related("live_version")
            for agent in agents.filter(preset=preset).order_by("pk"):
                _fall_back_to_default(agent, preset, actor)
        return delete_with_dependents(
            preset, actor=actor, noun="preset", dependents=dependents, force=force, forced="detach them"
        )


def _fall_back_to_default(agent: Agent, preset: Preset, actor: Actor) -> None:
    reason = f"preset {preset.key} deleted: the workspace's default from now on"
    live = agent.live_version
    if live is None:  # version 1 waits for review: its approval will name the missing preset
        agent.preset = None
        stamp(agent, actor=actor, reason=reason)
        agent.save(update_fields=["preset", "updated_at"])
        return
    version = version_record(
        agent=agent,
        snapshot={**live.snapshot, "preset": None},
        actor=actor,
        status=PromptVersion.Status.APPROVED,
        reason=reason,
        base_version=live,
    )
    version_go_live(agent=agent, version=version, actor=actor)


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
    host = preset.destination_host
    if not preset.credential.may_be_sent_to(host):
        # Hosts narrowed after the preset was saved: the secret stays home.
        raise ProviderError(
            ProviderError.NOT_CONFIGURED,
            f"Credential '{preset.credential.key}' may not be sent to {host or 'this URL'}: "
            f"add the host to the credential's allowed hosts, or change the preset's base URL.",
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
