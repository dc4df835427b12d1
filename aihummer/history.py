"""Stamping django-simple-history records with who changed a row and why."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from simple_history.models import HistoricalRecords

from aihummer.actors import Actor
from aihummer.history_manager import HistoryManager


def stamp(instance: models.Model, *, actor: Actor, reason: str = "") -> models.Model:
    """Make the next save's historical record name the actor's person and the reason.

    The change reason always carries the actor's source label, so a change made by an
    API key or an agent stays attributable even without a human user.
    """
    instance._history_user = actor.person
    label = actor.source
    instance._change_reason = f"{label}: {reason}"[:100] if reason else label[:100]
    return instance


class ConfigurationHistory(HistoricalRecords):
    """django-simple-history for configuration rows, and none for sandbox rows: they
    are throw-away, invisible to people, and their prompts must not outlive cleanup.

    `sandbox_via` names the relation that carries `is_sandbox` (e.g. "agent" for an
    agent's sections); empty: the row itself.
    """

    def __init__(self, *args: object, sandbox_via: str = "", **kwargs: object) -> None:
        kwargs.setdefault("history_manager", HistoryManager)
        super().__init__(*args, **kwargs)
        self.sandbox_via = sandbox_via

    def get_history_user(self, instance: models.Model) -> object:
        # Rows no service stamped (an agent's sections, deleted with it) fall back to
        # the request's user, which for an owner-less API key is a stand-in, not a
        # person: the history names no one then (the stamped owner row says who).
        user = super().get_history_user(instance)
        return user if user is None or isinstance(user, get_user_model()) else None

    def _is_sandbox(self, instance: models.Model) -> bool:
        if hasattr(instance, "_aihummer_is_sandbox"):
            return instance._aihummer_is_sandbox
        try:
            owner = getattr(instance, self.sandbox_via) if self.sandbox_via else instance
        except ObjectDoesNotExist:
            return False
        return bool(getattr(owner, "is_sandbox", False))

    def pre_delete(self, instance: models.Model, **kwargs: object) -> None:
        # Decided before the delete: in a cascade the owner row may be gone by post_delete.
        instance._aihummer_is_sandbox = self._is_sandbox(instance)
        super().pre_delete(instance, **kwargs)

    def post_save(self, instance: models.Model, created: bool, using: str | None = None, **kwargs: object) -> None:
        if not self._is_sandbox(instance):
            super().post_save(instance, created, using=using, **kwargs)

    def post_delete(self, instance: models.Model, using: str | None = None, **kwargs: object) -> None:
        if not self._is_sandbox(instance):
            super().post_delete(instance, using=using, **kwargs)
