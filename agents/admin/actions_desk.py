"""The desk's second kind of request (issue 30): tool calls waiting for a person, next to
the prompt proposals of the review queue. The list (filter by status and tool), the
review page (the call exactly as it will run: the e-mail as it will be sent, the HTTP
request as it will be made; the turn or run it came from) and the decision, through the
same services as the REST API.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.timesince import timesince
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from agents.admin.review import status_badge
from agents.admin.review_list import review_list_view
from agents.models import ApprovalRequest
from agents.services.tool_approvals import (
    FOUR_EYES,
    approval_request_approve,
    approval_request_confirm,
    approval_request_get,
    approval_request_reject,
    approval_request_resend,
)
from aihummer.actors import Verb
from aihummer.admin_site import SERVICE_ERRORS, WorkspaceScopedAdmin, add_service_errors, service_error_message


class ActionDecisionForm(forms.Form):
    note = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=_("Note"),
        help_text=_("Told to the model."),
    )
    # The hash of the arguments the page showed: the service refuses any other.
    arguments_hash = forms.CharField(max_length=64, widget=forms.HiddenInput)


def call_preview(request: ApprovalRequest) -> dict:
    """The call as it will run, for a reviewer: an e-mail's headers and body, an HTTP
    request's line, headers and body; otherwise the arguments."""
    # Here, not at the top: every process loads the admin, few need the agent runtime.
    from agents.runtime.effects import HttpRequest as HttpRequestTool
    from agents.runtime.effects import MailSend

    arguments = request.arguments
    if request.tool_name == MailSend.name and request.agent is not None:
        try:
            parsed = MailSend().parse(arguments)
        except Exception:
            return {"kind": "raw"}
        message = MailSend().message(request.agent, parsed, str(request.ledger_key))
        return {
            "kind": "mail",
            "headers": [
                (pgettext("e-mail header", "From"), message.from_email),
                (pgettext("e-mail header", "To"), ", ".join(message.to)),
                (pgettext("e-mail header", "Cc"), ", ".join(message.cc)),
                (pgettext("e-mail header", "Subject"), message.subject),
                ("Message-ID", message.extra_headers["Message-ID"]),
            ],
            "body": message.body,
        }
    if request.tool_name == HttpRequestTool.name:
        return {
            "kind": "http",
            "line": f"{arguments.get('method', 'GET')} {arguments.get('url', '')}",
            "headers": [*sorted(arguments.get("headers", {}).items()), ("Idempotency-Key", str(request.ledger_key))],
            "body": arguments.get("body") or "",
        }
    return {"kind": "raw"}


class ToolFilter(admin.SimpleListFilter):
    title = _("tool")
    parameter_name = "tool"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(name, name) for name in ("mail_send", "http_request")]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        return queryset.filter(tool_name=self.value()) if self.value() else queryset


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(WorkspaceScopedAdmin):
    """The action requests: read-only rows, decided on their review page."""

    list_display = ["review_link", "workspace", "tool_name", "actor_source", "origin_link", "age", "status_badge"]
    list_display_links = None
    list_filter = ["status", "progress", ToolFilter, "workspace"]
    search_fields = ["agent_key", "tool_name", "actor_source"]
    ordering = ["-created_at"]
    show_full_result_count = False
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).select_related("workspace").defer("resume_state")

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        # The run page links to its waiting step's requests.
        return lookup in ("run_id", "step_name") or super().lookup_allowed(lookup, value, request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ApprovalRequest | None = None) -> bool:
        return False  # the arguments never change: an edited call is a new request

    def has_delete_permission(self, request: HttpRequest, obj: ApprovalRequest | None = None) -> bool:
        return False

    @admin.display(description=_("request"), ordering="pk")
    def review_link(self, obj: ApprovalRequest) -> str:
        url = reverse("admin:agents_approvalrequest_review", args=[obj.pk])
        return format_html('<a href="{}">{} #{} ({})</a>', url, obj.tool_name, obj.pk, obj.agent_key)

    @admin.display(description=_("from"))
    def origin_link(self, obj: ApprovalRequest) -> str:
        return origin_link(obj)

    @admin.display(description=_("age"), ordering="created_at")
    def age(self, obj: ApprovalRequest) -> str:
        return timesince(obj.created_at)

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: ApprovalRequest) -> str:
        return doubt_badge() if obj.is_in_doubt else status_badge(obj.status, ApprovalRequest.Status)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        return super().changelist_view(request, {"title": gettext("Action requests"), **(extra_context or {})})

    def get_urls(self) -> list:
        review = self.admin_site.admin_view(self.review_view)
        desk = self.admin_site.admin_view(self.review_list_view)
        return [
            path("desk/", desk, name="agents_review_list"),
            path("<path:object_id>/review/", review, name="agents_approvalrequest_review"),
            *super().get_urls(),
        ]

    def review_list_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return review_list_view(self, request)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None):
        return redirect("admin:agents_approvalrequest_review", object_id)

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        actor, approval = self.actor(request), self.found_or_404(request, object_id, approval_request_get)
        form = ActionDecisionForm(initial={"arguments_hash": approval.arguments_hash})
        if request.method == "POST":
            form = ActionDecisionForm(request.POST)
            if form.is_valid():
                response = self._decide(request, actor, approval, form)
                if response is not None:
                    return response
        refusal = actor.refusal(Verb.DECIDE, approval.workspace)
        if refusal is None and actor.answers_for(approval.proposer_identity):
            refusal = FOUR_EYES
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Review %(tool)s #%(number)s") % {"tool": approval.tool_name, "number": approval.pk},
            "approval": approval,
            "preview": call_preview(approval),
            "origin": origin_link(approval),
            "status_badge": (
                doubt_badge() if approval.is_in_doubt else status_badge(approval.status, ApprovalRequest.Status)
            ),
            "form": form,
            "decide_refusal": refusal,
        }
        return TemplateResponse(request, "admin/agents/approvalrequest/review.html", context)

    def _decide(self, request: HttpRequest, actor: object, approval: ApprovalRequest, form: ActionDecisionForm):
        note, approve = form.cleaned_data["note"], "_approve" in request.POST
        try:
            if "_resend" in request.POST or "_confirm" in request.POST:
                resolve = approval_request_resend if "_resend" in request.POST else approval_request_confirm
                decided = resolve(request=approval, actor=actor, note=note)
                self.log_change(request, decided, f"outcome unknown: {decided.resolution}")
                messages.success(request, doubt_message(decided))
                return redirect("admin:agents_approvalrequest_review", decided.pk)
            if approve:
                decided = approval_request_approve(
                    request=approval, actor=actor, note=note, arguments_hash=form.cleaned_data["arguments_hash"]
                )
            else:
                decided = approval_request_reject(request=approval, actor=actor, note=note)
        except ValidationError as exc:
            add_service_errors(form, exc)
            return None
        except SERVICE_ERRORS as exc:
            messages.error(request, service_error_message(exc))
            return None
        self.log_change(request, decided, f"{decided.status}" + (f": {note}" if note else ""))
        done = gettext("%(tool)s #%(number)s approved.") if approve else gettext("%(tool)s #%(number)s rejected.")
        messages.success(request, done % {"tool": decided.tool_name, "number": decided.pk})
        return redirect("admin:agents_approvalrequest_changelist")


def doubt_badge() -> str:
    return format_html(
        '<span class="aih-badge" data-status="unknown" style="background:#9c4221">{}</span>',
        gettext("outcome unknown"),
    )


def doubt_message(request: ApprovalRequest) -> str:
    if request.resolution == ApprovalRequest.Resolution.RESENT:
        return gettext("%(tool)s #%(pk)s is being sent again, with the same ledger key.") % {
            "tool": request.tool_name,
            "pk": request.pk,
        }
    return gettext("%(tool)s #%(pk)s is recorded as done; its turn goes on.") % {
        "tool": request.tool_name,
        "pk": request.pk,
    }


def origin_link(request: ApprovalRequest) -> str:
    """The run (and step) or the turn a request came from, linked."""
    if request.run_id:
        url = reverse("admin:workflows_workflowrun_change", args=[request.run_id])
        label = gettext("run %(run)s · step %(step)s") % {"run": str(request.run_id)[:8], "step": request.step_name}
        return format_html('<a href="{}">{}</a>', url, label)
    if request.turn_id:
        url = reverse("admin:agents_agentturn_change", args=[request.turn_id])
        return format_html('<a href="{}">{}</a>', url, gettext("turn %(turn)s") % {"turn": request.turn_id})
    return "—"
