"""Evidence in the admin: the test-case inline on the agent page, and the queue's
evidence column and "has regressions" filter. Writes go through the services."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import models
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.admin.forms import AgentTestCaseForm
from agents.models import AgentTestCase, PromptVersion
from agents.services import agent_test_case_delete
from aihummer.actors import Actor, Verb
from aihummer.admin_site import service_form_attrs


# --- the test-case inline -------------------------------------------------------------------
class AgentTestCaseFormSet(BaseInlineFormSet):
    """Rows are written through the services when the admin saves the page (never while
    it validates); deletions go through the service too (its history stamp, the
    evidence re-run)."""

    actor: Actor | None = None
    refusals: dict = {}  # set per request on a subclass, never mutated

    def _construct_form(self, i: int, **kwargs: object) -> forms.Form:
        form = super()._construct_form(i, **kwargs)
        form.actor, form.refusals = self.actor, self.refusals
        return form

    @property
    def empty_form(self) -> forms.Form:
        form = super().empty_form
        form.actor = self.actor
        return form

    def save_new(self, form: AgentTestCaseForm, commit: bool = True) -> AgentTestCase:
        return form.save_through_service()

    def save_existing(self, form: AgentTestCaseForm, obj: AgentTestCase, commit: bool = True) -> AgentTestCase:
        return form.save_through_service()

    def delete_existing(self, obj: AgentTestCase, commit: bool = True) -> None:
        agent_test_case_delete(case=obj, actor=self.actor)


class AgentTestCaseInline(admin.StackedInline):
    """Saved test cases on the agent page: they run on every proposal (advisory)."""

    model = AgentTestCase
    form = AgentTestCaseForm
    formset = AgentTestCaseFormSet
    extra = 0
    classes = ["collapse"]
    fieldsets = [
        (None, {"fields": [("name", "is_active"), "message", "input"]}),
        (
            _("Assertions"),
            {
                "fields": [
                    ("contains", "not_contains", "case_insensitive"),
                    "regex",
                    ("min_length", "max_length"),
                    ("max_tokens", "max_cost_usd"),
                ]
            },
        ),
    ]

    def get_formset(self, request: HttpRequest, obj: models.Model | None = None, **kwargs: object) -> type:
        formset = super().get_formset(request, obj, **kwargs)
        if obj is not None:
            # The heading counts the saved cases, so a collapsed inline still says how many.
            # An inline instance serves one request (get_inline_instances), so this is safe.
            count = obj.test_cases.count()
            self.verbose_name_plural = gettext("Test cases (%(count)d)") % {"count": count}
        return type(formset.__name__, (formset,), service_form_attrs(request))

    def _allowed(self, request: HttpRequest, obj: models.Model | None, verb: Verb) -> bool:
        actor = Actor.for_request(request)
        if obj is None:
            return actor.workspace_ids(verb) != []
        return actor.can(Verb.SANDBOX if obj.is_sandbox else verb, obj.workspace)

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._allowed(request, obj, Verb.READ)

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._allowed(request, obj, Verb.PROPOSE)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._allowed(request, obj, Verb.PROPOSE)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._allowed(request, obj, Verb.PROPOSE)


# --- the queue ------------------------------------------------------------------------------
class HasRegressionsFilter(admin.SimpleListFilter):
    """Proposals whose newest evidence run has a case that passes live and fails on them."""

    title = _("evidence")
    parameter_name = "evidence"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("regressions", _("has regressions"))]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        if self.value() == "regressions":
            return queryset.filter(latest_evidence__regressions__gt=0)
        return queryset


EVIDENCE_BADGES = {
    "running": ("#718096", _("running")),
    "failed": ("#718096", _("evidence failed")),
    "none": ("#a0aec0", _("no cases")),
}


def evidence_badge(version: PromptVersion) -> str:
    """The queue's evidence column, from the `latest_evidence` annotation: passed,
    regressions, running or no cases."""
    evidence = getattr(version, "latest_evidence", None) or {}
    status = evidence.get("status")
    if status in ("queued", "running"):
        key = "running"
    elif status == "failed":
        key = "failed"
    elif not evidence.get("total"):
        key = "none"
    elif evidence["regressions"]:
        count = evidence["regressions"]
        return format_html(
            '<span class="aih-badge aih-evidence-regressions" style="background:#c53030">{}</span>',
            ngettext("%(count)d regression", "%(count)d regressions", count) % {"count": count},
        )
    else:
        return format_html(
            '<span class="aih-badge aih-evidence-passed" style="background:#2f855a" title="{}">{}</span>',
            gettext("No case that passes on live fails on this proposal."),
            gettext("passed %(passed)d/%(total)d") % {"passed": evidence["passed"], "total": evidence["total"]},
        )

    colour, label = EVIDENCE_BADGES[key]
    return format_html('<span class="aih-badge aih-evidence-{}" style="background:{}">{}</span>', key, colour, label)
