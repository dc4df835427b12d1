"""Stamping django-simple-history records with who changed a row and why."""

from __future__ import annotations

from django.db import models

from aihummer.actors import Actor


def stamp(instance: models.Model, *, actor: Actor, reason: str = "") -> models.Model:
    """Make the next save's historical record name the actor's person and the reason.

    The change reason always carries the actor's source label, so a change made by an
    API key or an agent stays attributable even without a human user.
    """
    if getattr(instance, "is_sandbox", False):
        # Sandbox rows are throw-away and invisible to people: no audit trail to keep.
        instance.skip_history_when_saving = True
    instance._history_user = actor.person
    label = actor.source
    instance._change_reason = f"{label}: {reason}"[:100] if reason else label[:100]
    return instance
