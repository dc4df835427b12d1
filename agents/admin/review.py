"""The review desk: the approval queue (PromptVersion changelist), the review page,
bulk decisions. The agent's own desk pages (propose, versions, restore, clone) are in
agents/admin/desk.py.

Every view re-checks rights through the actor and calls the same services as every
other surface; these views only parse forms and show results.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ORDER_VAR
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.timesince import timesince
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.admin.evidence import HasRegressionsFilter, evidence_badge
from agents.admin.forms import (
    BulkDecisionForm,
    DecisionForm,
    TryItForm,
)
from agents.diff import snapshot_diff, word_diff
from agents.models import PromptVersion
from agents.rendering import render_prefix
from agents.selectors import evidence_for_review, prompt_version_get
from agents.services import (
    approval_rule,
    approval_state,
    evidence_regressions_to_confirm,
    prompt_version_approve,
    prompt_version_rebase,
    prompt_version_rebase_plan,
    prompt_version_reject,
    prompt_version_reverts,
)
from agents.snapshot import empty_snapshot
from agents.templatetags.review_queue import tier_reason_text
from aihummer.actors import Actor, Verb
from aihummer.admin_site import (
    SERVICE_ERRORS,
    AgeFilter,
    WorkspaceScopedAdmin,
    add_service_errors,
    service_error_message,
)
from aihummer.ids import canonical_id

STATUS_COLOURS = {
    "pending": "#b7791f",
    "approved": "#2f855a",
    "rejected": "#c53030",
    "withdrawn": "#718096",
    "unknown": "#9c4221",
}


def status_badge(status: str, choices: type[models.TextChoices] = PromptVersion.Status) -> str:
    """The status in the person's language, in its colour (the value stays in `data-status`)."""
    label = choices(status).label.lower() if status in choices.values else status
    return format_html(
        '<span class="aih-badge" data-status="{}" style="background:{}">{}</span>',
        status,
        STATUS_COLOURS.get(status, "#718096"),
        label,
    )


# --- queue filters --------------------------------------------------------------------
class StatusFilter(admin.SimpleListFilter):
    """Pending by default: the queue is what waits for a decision."""

    title = _("status")
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [*PromptVersion.Status.choices, ("all", _("All"))]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        value = self.value() or PromptVersion.Status.PENDING
        return queryset if value == "all" else queryset.filter(status=value)

    def choices(self, changelist: object) -> object:
        selected = self.value() or PromptVersion.Status.PENDING
        for value, label in self.lookup_choices:
            yield {
                "selected": selected == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }


class SourceKindFilter(admin.SimpleListFilter):
    title = _("source")
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [
            ("admin", _("People (admin)")),
            ("api", _("API keys")),
            ("mcp", _("MCP clients")),
            ("agent", _("Agents")),
            ("cli", _("CLI")),
        ]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        return queryset.filter(source__startswith=f"{self.value()}:") if self.value() else queryset


# --- the queue and the review page ----------------------------------------------------
@admin.register(PromptVersion)
class PromptVersionAdmin(WorkspaceScopedAdmin):
    add_verb = change_verb = delete_verb = Verb.MANAGE
    list_display = [
        "review_link",
        "workspace",
        "source",
        "short_reason",
        "age",
        "review_needed",
        "size",
        "evidence",
        "status_badge",
    ]
    list_display_links = None
    list_filter = [
        StatusFilter,
        ("workspace", RelatedOnlyFieldListFilter),
        ("agent", RelatedOnlyFieldListFilter),
        SourceKindFilter,
        AgeFilter,
        HasRegressionsFilter,
    ]
    search_fields = ["agent__key", "agent__name", "source", "reason"]
    ordering = ["created_at"]
    # The "N total" link costs a second COUNT over the whole queue on every page.
    show_full_result_count = False
    actions = ["approve_selected", "reject_selected"]
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return (
            super()
            .get_queryset(request)
            .select_related("agent", "workspace__approval_policy", "proposed_by", "reviewed_by", "base_version")
            .defer("snapshot", "base_version__snapshot")
            .with_latest_evidence()
            .with_approval_count()
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: PromptVersion | None = None) -> bool:
        return False  # versions are read-only everywhere; decisions go through the review page

    def has_delete_permission(self, request: HttpRequest, obj: PromptVersion | None = None) -> bool:
        return False

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return self.allowed(request, Verb.DECIDE)

    # columns
    def get_list_display(self, request: HttpRequest) -> list[str]:
        # Columns that would say the same on every row go (they cost the others width):
        # the workspace for a person who reads one, the status unless all are listed.
        workspace_ids = self.actor(request).workspace_ids(Verb.READ)
        hidden = {"workspace"} if workspace_ids is not None and len(workspace_ids) == 1 else set()
        if request.GET.get(StatusFilter.parameter_name) != "all":
            hidden.add("status_badge")
        return [column for column in super().get_list_display(request) if column not in hidden]

    @admin.display(description=_("proposal"), ordering="agent__key")
    def review_link(self, obj: PromptVersion) -> str:
        # The stale flag rides with the proposal's name: a column of its own was mostly empty.
        url = reverse("admin:agents_promptversion_review", args=[obj.pk])
        return format_html('<a href="{}">{} v{}</a>{}', url, obj.agent.key, obj.number, self.stale(obj))

    @admin.display(description=_("reason"))
    def short_reason(self, obj: PromptVersion) -> str:
        return obj.reason if len(obj.reason) <= 80 else f"{obj.reason[:79]}…"

    @admin.display(description=_("age"), ordering="created_at")
    def age(self, obj: PromptVersion) -> str:
        return timesince(obj.created_at)

    @admin.display(description=_("stale"))
    def stale(self, obj: PromptVersion) -> str:
        if not obj.is_stale:
            return ""
        return format_html(
            ' <span class="aih-badge aih-stale-flag" style="background:#b7791f" title="{}">{}</span>',
            gettext("The live version moved since this was proposed; approving reverts the later versions."),
            gettext("stale"),
        )

    @admin.display(description=_("review"), ordering="tier")
    def review_needed(self, obj: PromptVersion) -> str:
        """The tier and where its quorum stands: "power · 1/2"."""
        needed = approval_rule(obj).approvals
        return format_html(
            '<span class="aih-tier-{}" title="{}">{} · {}/{}</span>',
            obj.tier,
            "; ".join(tier_reason_text(reason) for reason in obj.tier_reasons[:5]),
            obj.get_tier_display().lower(),
            obj.approval_count,
            needed,
        )

    @admin.display(description=_("size"))
    def size(self, obj: PromptVersion) -> str:
        stats = obj.diff_stats
        if not stats:
            return "—"
        changes = stats["changes"]
        return ngettext(
            "%(count)d change, +%(added)d/-%(removed)d chars",
            "%(count)d changes, +%(added)d/-%(removed)d chars",
            changes,
        ) % {"count": changes, "added": stats["added_chars"], "removed": stats["removed_chars"]}

    @admin.display(description=_("evidence"))
    def evidence(self, obj: PromptVersion) -> str:
        return evidence_badge(obj)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        # A work page: its ten columns get the width the navigation sidebar would take
        # (the header's "Review queue" and the breadcrumbs lead elsewhere).
        context = {"title": gettext("Review queue"), "is_nav_sidebar_enabled": False, **(extra_context or {})}
        response = super().changelist_view(request, context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if changelist is not None and self._is_the_pending_count(request, changelist):
            # The header badge counts the same rows: reuse the page's count (one COUNT, not two).
            request._aihummer_pending_count = changelist.result_count
        return response

    def _is_the_pending_count(self, request: HttpRequest, changelist: object) -> bool:
        """Whether the changelist lists exactly what the header badge counts: pending
        proposals, unfiltered, in workspaces where the person both reads and decides."""
        params = {key: value for key, value in changelist.params.items() if key != ORDER_VAR}
        if set(params) - {StatusFilter.parameter_name} or changelist.query:
            return False
        if params.get(StatusFilter.parameter_name, [PromptVersion.Status.PENDING]) != [PromptVersion.Status.PENDING]:
            return False
        actor = self.actor(request)
        read, decide = actor.workspace_ids(Verb.READ), actor.workspace_ids(Verb.DECIDE)
        return read == decide if read is None or decide is None else set(read) == set(decide)

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: PromptVersion) -> str:
        return status_badge(obj.status)

    # views
    def get_urls(self) -> list:
        review = self.admin_site.admin_view(self.review_view)
        return [path("<path:object_id>/review/", review, name="agents_promptversion_review"), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None):
        # One page per version: the review page, which shows everything and decides.
        if canonical_id(unquote(object_id)) and self.get_queryset(request).filter(pk=unquote(object_id)).exists():
            return redirect("admin:agents_promptversion_review", object_id)
        return super().change_view(request, object_id, form_url, extra_context)

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        actor, version = self.actor(request), self.found_or_404(request, object_id, prompt_version_get)
        decision_form, try_form, trials = DecisionForm(), TryItForm(), None
        if request.method == "POST" and "_try" in request.POST:
            try_form = TryItForm(request.POST)
            if try_form.is_valid():
                trials = self._try_both(request, actor, version, try_form.cleaned_data["message"])
        elif request.method == "POST" and "_rebase" in request.POST:
            response = self._rebase(request, actor, version)
            if response is not None:
                return response
        elif request.method == "POST":
            decision_form = DecisionForm(request.POST)
            if decision_form.is_valid():
                response = self._decide(request, actor, version, decision_form)
                if response is not None:
                    return response
        return TemplateResponse(
            request,
            "admin/agents/promptversion/review.html",
            self._review_context(request, actor, version, decision_form, try_form, trials),
        )

    def _decide(
        self, request: HttpRequest, actor: Actor, version: PromptVersion, form: DecisionForm
    ) -> HttpResponse | None:
        note, approve = form.cleaned_data["note"], "_approve" in request.POST
        try:
            if approve:
                decided = prompt_version_approve(
                    version=version,
                    actor=actor,
                    note=note,
                    confirm_stale=form.cleaned_data["confirm_stale"],
                    expected_live=form.cleaned_data["live_number"],
                    confirm_regressions=request.POST.getlist("confirm_regressions"),
                    live_at=form.cleaned_data.get("live_at"),
                )
            else:
                decided = prompt_version_reject(version=version, actor=actor, note=note)
        except ValidationError as exc:
            add_service_errors(form, exc)
            return None
        except SERVICE_ERRORS as exc:  # a state or a right: said at the top, where the race test reads it
            messages.error(request, service_error_message(exc))
            return None
        label = f"{decided.agent.key} v{decided.number}"
        if decided.is_pending:  # short of its quorum, or scheduled
            # The admin log keeps English (a record, read by whoever audits); the message is the person's.
            state = approval_state(decided)
            summary = state.summary
            outcome = f"{'approval' if approve else 'rejection'} recorded, {state.recorded_summary}"
            said = (
                gettext("%(label)s: approval recorded, %(summary)s")
                if approve
                else gettext("%(label)s: rejection recorded, %(summary)s")
            ) % {"label": label, "summary": summary}
            if decided.go_live_at:
                outcome += f"; goes live at {decided.go_live_at:%Y-%m-%d %H:%M} UTC"
                said += gettext("; goes live at %(at)s UTC") % {"at": f"{decided.go_live_at:%Y-%m-%d %H:%M}"}
            self.log_change(request, decided, outcome + (f": {note}" if note else ""))
            messages.success(request, f"{said}.")
            return redirect("admin:agents_promptversion_review", decided.pk)
        self.log_change(request, decided, f"{decided.status} v{decided.number}" + (f": {note}" if note else ""))
        messages.success(
            request,
            gettext("%(label)s %(status)s.") % {"label": label, "status": decided.get_status_display().lower()},
        )
        return redirect("admin:agents_promptversion_changelist")

    def _rebase(self, request: HttpRequest, actor: Actor, version: PromptVersion) -> HttpResponse | None:
        seen = request.POST.get("live_number", "")
        try:
            rebased = prompt_version_rebase(
                version=version, actor=actor, expected_live=int(seen) if seen.isdigit() else None
            )
        except SERVICE_ERRORS as exc:
            messages.error(request, service_error_message(exc))
            return None
        self.log_change(request, version, f"rebased onto v{rebased.base_version.number} as v{rebased.number}")
        messages.success(
            request,
            gettext("%(agent)s v%(number)s rebased onto v%(base)s as v%(new)s: it waits for its approvals again.")
            % {
                "agent": version.agent.key,
                "number": version.number,
                "base": rebased.base_version.number,
                "new": rebased.number,
            },
        )
        return redirect("admin:agents_promptversion_review", rebased.pk)

    def _try_both(self, request: HttpRequest, actor: Actor, version: PromptVersion, message: str) -> dict | None:
        # Here, not at the top: every process loads the admin, few need the agent runtime.
        from agents.runtime import agent_run_test

        agent = version.agent
        try:
            # Live first, as every pane of the page: Live | Candidate.
            return {
                # A new agent waiting for its first review has no live version to try.
                "live": agent.live_version
                and agent_run_test(agent=agent, message=message, actor=actor, version=agent.live_version),
                "candidate": agent_run_test(agent=agent, message=message, actor=actor, version=version),
            }
        except SERVICE_ERRORS as exc:
            messages.error(request, service_error_message(exc))
            return None

    def _review_context(
        self,
        request: HttpRequest,
        actor: Actor,
        version: PromptVersion,
        decision_form: DecisionForm,
        try_form: TryItForm,
        trials: dict | None,
    ) -> dict:
        agent, live = version.agent, version.agent.live_version
        stale = version.is_stale
        reverts = prompt_version_reverts(version) if stale else []
        approvals = approval_state(version)
        decide_refusal = (
            actor.refusal(Verb.DECIDE, version.workspace)
            or actor.decision_refusal(version.proposer_identity)
            or approvals.refusal_for(actor)
        )
        # A new agent's version 1 may wait for review with nothing live yet.
        live_snapshot = live.snapshot if live else empty_snapshot()
        before_prompt = render_prefix(live_snapshot, first_turn=True)
        after_prompt = render_prefix(version.snapshot, first_turn=True)
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Review %(agent)s v%(number)s") % {"agent": agent.key, "number": version.number},
            "version": version,
            "agent": agent,
            "live": live,
            "is_live": live is not None and live.pk == version.pk,
            "stale": stale,
            "reverts": reverts,
            "rebase": prompt_version_rebase_plan(version) if stale else None,
            "diff": snapshot_diff(live_snapshot, version.snapshot),
            "base_diff": snapshot_diff(version.base_version.snapshot, version.snapshot) if stale else None,
            "prompt_words": word_diff(before_prompt, after_prompt),
            "prompt_changed": before_prompt != after_prompt,
            "status_badge": status_badge(version.status),
            "decision_form": decision_form,
            "decide_refusal": decide_refusal,
            "try_form": try_form,
            "trials": trials,
            "can_try": actor.can(Verb.RUN, version.workspace),
            "approvals": approvals,
            "evidence": evidence_for_review(version=version),
            "regressions_to_confirm": evidence_regressions_to_confirm(version=version) if version.is_pending else [],
        }

    # bulk actions
    @admin.action(description=_("Approve selected proposals"), permissions=["approve"])
    def approve_selected(self, request: HttpRequest, queryset: models.QuerySet) -> HttpResponse | None:
        return self._bulk_decide(request, queryset, approve=True)

    @admin.action(description=_("Reject selected proposals (one note for all)"), permissions=["approve"])
    def reject_selected(self, request: HttpRequest, queryset: models.QuerySet) -> HttpResponse | None:
        return self._bulk_decide(request, queryset, approve=False)

    def _bulk_decide(self, request: HttpRequest, queryset: models.QuerySet, *, approve: bool) -> HttpResponse | None:
        form = BulkDecisionForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            actor = self.actor(request)
            note = form.cleaned_data["note"]
            if not approve and not note.strip():
                form.add_error("note", gettext("Say why you reject them: the proposers read this note."))
            else:
                self._report(request, actor, queryset, approve, note, form.cleaned_data["confirm_stale"])
                return None
        return TemplateResponse(
            request,
            "admin/agents/promptversion/bulk_decide.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": gettext("Approve proposals") if approve else gettext("Reject proposals"),
                "approve": approve,
                "form": form,
                "versions": queryset.order_by("pk"),
                "action": "approve_selected" if approve else "reject_selected",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            },
        )

    def _report(
        self,
        request: HttpRequest,
        actor: Actor,
        queryset: models.QuerySet,
        approve: bool,
        note: str,
        confirm_stale: bool,
    ) -> None:
        done = 0
        selected = list(queryset.order_by("pk"))
        # One confirmation for the selection: it may revert what the selection holds,
        # never a version it did not list.
        listed = {version.pk for version in selected}
        for version in selected:
            label = f"{version.agent.key} v{version.number}"
            try:
                if approve:
                    version = prompt_version_approve(
                        version=version, actor=actor, note=note, confirm_stale=confirm_stale, may_revert=listed
                    )
                else:
                    version = prompt_version_reject(version=version, actor=actor, note=note)
            except SERVICE_ERRORS as exc:
                messages.warning(
                    request,
                    gettext("%(label)s: refused. %(reason)s") % {"label": label, "reason": service_error_message(exc)},
                )
                continue
            done += 1
            state = approval_state(version) if version.is_pending else None
            summary = state.summary if state else ""
            outcome = f"recorded, {state.recorded_summary}" if state else version.status

            self.log_change(request, version, outcome if approve else f"{outcome}: {note}")
            said = (
                gettext("recorded, %(summary)s") % {"summary": summary}
                if version.is_pending
                else version.get_status_display().lower()
            )
            messages.success(request, f"{label}: {said}.")
        if not done:
            messages.error(request, gettext("Nothing was decided."))
