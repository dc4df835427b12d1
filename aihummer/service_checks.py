"""Checks every app's services share: key uniqueness (sandbox rows included), checked
saves, workspace and sandbox references, the write right, visibility, and the one
delete-with-dependents."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils.text import capfirst
from django.utils.translation import gettext, gettext_noop, ngettext

from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.history import stamp
from aihummer.models import Workspace

# Nouns the messages below name that are no model's verbose name (those are in the
# catalogue already).
NOUNS = (gettext_noop("tool policy"), gettext_noop("tool settings"))


def require_key_free(
    model: type[models.Model],
    *,
    workspace: Workspace,
    key: str,
    noun: str,
    actor: Actor,
    exclude_pk: int | None = None,
) -> None:
    """`key` is free in `workspace` for a new `model` row (real and sandbox rows alike),
    or a field error saying whose it is and, for a sandbox row, how to remove it."""
    # all_objects: a sandbox key may not shadow a real one, nor the reverse, and the
    # default manager's uniqueness check (full_clean) cannot see sandbox rows.
    manager = getattr(model, "all_objects", model._default_manager)
    clash = manager.filter(workspace=workspace, key=key).exclude(pk=exclude_pk).first()
    if clash is None:
        return
    if getattr(clash, "is_sandbox", False):
        taken = gettext(
            "Key '%(key)s' is taken by sandbox %(noun)s '%(clash)s' (id %(id)s), left by an automated client. "
            "Remove it with %(hint)s, then retry."
        )
        names = {"key": key, "noun": gettext(noun), "clash": clash.key, "id": clash.pk}
        raise ValidationError({"key": taken % {**names, "hint": sandbox_cleanup_hint(actor, workspace)}})
    # The noun is one of the models' names, which the catalogue has (gettext at run time);
    # one message per English article, as French needs none.
    if article(noun) == "An":
        exists = gettext("An %(noun)s with key '%(key)s' already exists in workspace '%(workspace)s'.")
    else:
        exists = gettext("A %(noun)s with key '%(key)s' already exists in workspace '%(workspace)s'.")
    raise ValidationError({"key": exists % {"noun": gettext(noun), "key": key, "workspace": workspace.slug}})


def sandbox_cleanup_hint(actor: Actor, workspace: Workspace) -> str:
    """How this caller removes a workspace's sandbox: an MCP client has the tool, anyone
    else the command."""
    if actor.surface == "mcp":
        return gettext("the cleanup_sandbox tool")
    return f"`manage.py sandbox_cleanup --workspace {workspace.slug}`"


def save_checked(instance: models.Model, *, actor: Actor, reason: str, noun: str, **save_kwargs: object) -> None:
    """full_clean, stamp history, save; a lost race on a unique key is a field error too."""
    instance.full_clean(validate_unique=False, validate_constraints=False)
    stamp(instance, actor=actor, reason=reason)
    try:
        with transaction.atomic():
            instance.save(**save_kwargs)
    except IntegrityError as exc:
        # Rows without a key (one per agent or workspace) lose the same race on their owner.
        key = getattr(instance, "key", None)
        if key is None:
            concurrent = gettext("The %(noun)s was saved concurrently; read it again and retry.")
            raise ValidationError(concurrent % {"noun": gettext(noun)}) from exc
        if article(noun) == "An":
            concurrent = gettext("An %(noun)s with key '%(key)s' already exists (saved concurrently).")
        else:
            concurrent = gettext("A %(noun)s with key '%(key)s' already exists (saved concurrently).")
        raise ValidationError({"key": concurrent % {"noun": gettext(noun), "key": key}}) from exc


def article(noun: str) -> str:
    return "An" if noun[:1] in "aeiou" else "A"


def same_workspace(target: models.Model | None, workspace: Workspace, field: str, noun: str) -> None:
    # Another workspace's row answers exactly as a missing one.
    if target is not None and target.workspace_id != workspace.pk:
        raise ValidationError({field: gettext("Unknown %(noun)s.") % {"noun": gettext(noun)}})


def no_sandbox_reference(owner: models.Model, target: models.Model | None, field: str, noun: str) -> None:
    if target is not None and target.is_sandbox and not owner.is_sandbox:
        refusal = gettext("A real row cannot use the sandbox %(noun)s '%(key)s'.")
        raise ValidationError({field: refusal % {"noun": gettext(noun), "key": target.key}})


class NoLiveVersion(ApplicationError):
    """The agent's version 1 waits for review: nothing is live yet to read or change."""


def require_live(agent: models.Model) -> models.Model:
    """The live version of `agent`, or NoLiveVersion (409) while its version 1 waits."""
    if agent.live_number is None:
        waiting = gettext("Agent '%(agent)s' has no live version yet: its version 1 is waiting for review.")
        raise NoLiveVersion(waiting % {"agent": agent.key})
    return agent.live_version


def write_verb(is_sandbox: bool) -> Verb:
    return Verb.SANDBOX if is_sandbox else Verb.PUBLISH


def require_visible(actor: Actor, workspace: Workspace, noun: str = "agent") -> None:
    # Another workspace's row answers exactly as a missing one.
    if not actor.belongs_to(workspace):
        raise NotFound(f"Unknown {noun}.")


def identity_label(actor: Actor) -> str:
    """Who answers for what `actor` proposes, as recorded (see Actor.identities)."""
    return actor.identity_label


def name_dependents(rows: list[tuple[str, bool]], *, actor: Actor | None, workspace: Workspace, noun: str) -> list[str]:
    """`(label, is_sandbox)` pairs as a dependents list: sandbox rows named only to a
    caller that can see them (or to internal callers, `actor=None`), otherwise counted."""
    if actor is None or actor.sees_sandbox_rows(workspace):
        return [label + (" (" + gettext("sandbox") + ")" if is_sandbox else "") for label, is_sandbox in rows]
    hidden = sum(1 for _, is_sandbox in rows if is_sandbox)
    named = [label for label, is_sandbox in rows if not is_sandbox]
    counted = ngettext("%(count)d sandbox %(noun)s", "%(count)d sandbox %(noun)ss", hidden)
    return named + ([counted % {"count": hidden, "noun": gettext(noun)}] if hidden else [])


def deletion_refusal(instance: models.Model, *, noun: str, dependents: list[str]) -> str | None:
    """Why `instance` may not simply be deleted (built in, or used by `dependents`), or
    None; the admin's delete page and the services say it in the same words."""
    if getattr(instance, "is_builtin", False):
        refusal = gettext("%(noun)s '%(key)s' is built in and cannot be deleted; disable it instead.")
        return refusal % {"noun": capfirst(gettext(noun)), "key": instance.key}
    if dependents:
        refusal = gettext("%(noun)s '%(key)s' is in use: %(dependents)s.")
        return refusal % {"noun": capfirst(gettext(noun)), "key": instance.key, "dependents": "; ".join(dependents)}
    return None


def delete_with_dependents(
    instance: models.Model,
    *,
    actor: Actor,
    noun: str,
    dependents: list[str],
    force: bool = False,
    forced: str | None = "proceed",
) -> list[str]:
    """Delete `instance`, history stamped; refused when built in, and when it has
    `dependents` unless `force` (`forced` says what force does; None: it may never be
    forced). Returns the dependents it had. The caller detaches them first, in the same
    transaction, when forcing leaves them behind."""
    built_in = getattr(instance, "is_builtin", False)
    if built_in or (dependents and not (force and forced)):
        refusal = deletion_refusal(instance, noun=noun, dependents=dependents) or ""
        if forced and not built_in:
            refusal += f" Delete with force to {forced}."
        raise ApplicationError(refusal, extra={"dependents": dependents} if dependents else None)
    with transaction.atomic():
        stamp(instance, actor=actor, reason="deleted")
        instance.delete()
    return dependents
