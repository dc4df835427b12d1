"""One review list for the desk (issue 30): prompt proposals and action requests (tool
calls waiting for a person) in one queue, with a kind filter. Each row links to its own
review page; the two changelists stay as they are.
"""

from __future__ import annotations

from django.contrib.admin import ModelAdmin
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.admin.review import STATUS_COLOURS
from agents.selectors import REVIEW_KINDS, review_item_counts, review_item_list
from aihummer.actors import Verb

ROWS_PER_PAGE = 50
KIND_LABELS = {"proposal": _("proposal"), "action": _("action")}
STATUS_LABELS = {
    "pending": _("Pending"),
    "approved": _("Approved"),
    "rejected": _("Rejected"),
    "withdrawn": _("Withdrawn"),
    "expired": _("Expired"),
    "unknown": _("Outcome unknown"),
    "all": _("All"),
}


class CountedPaginator(Paginator):
    """A paginator told its count (the per-kind counts already paid for it): the union
    is not counted a second time."""

    def __init__(self, object_list: object, per_page: int, total: int) -> None:
        super().__init__(object_list, per_page)
        self.total = total

    @cached_property
    def count(self) -> int:
        return self.total


def review_list_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """The desk's review list; `model_admin` is the ApprovalRequest admin (rights, actor)."""
    actor = model_admin.actor(request)
    kind = request.GET.get("kind", "")
    kind = kind if kind in REVIEW_KINDS else ""
    status = request.GET.get("status", "pending")
    status = status if status in STATUS_LABELS else "pending"
    counts = review_item_counts(actor=actor, status=status)
    total = counts[kind] if kind else sum(counts.values())
    rows = review_item_list(actor=actor, kind=kind, status=status)
    page = CountedPaginator(rows, ROWS_PER_PAGE, total).get_page(request.GET.get("page"))
    items = [_item(row) for row in page.object_list]
    workspace_ids = actor.workspace_ids(Verb.READ)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": gettext("Review list"),
        "items": items,
        "page": page,
        "total": total,
        "kind_choices": _choices(request, "kind", kind, [("", _("All"), sum(counts.values()))])
        + _choices(request, "kind", kind, [(k, KIND_LABELS[k], counts[k]) for k in REVIEW_KINDS]),
        "status_choices": _choices(request, "status", status, [(s, label, None) for s, label in STATUS_LABELS.items()]),
        "show_workspace": workspace_ids is None or len(workspace_ids) != 1,
    }
    return TemplateResponse(request, "admin/agents/review_list.html", context)


def _choices(request: HttpRequest, name: str, selected: str, options: list) -> list[dict]:
    query = {key: value for key, value in request.GET.items() if key not in (name, "page")}
    return [
        {
            "selected": value == selected,
            "url": "?" + urlencode({**query, name: value} if value else query),
            "label": label,
            "count": count,
        }
        for value, label, count in options
    ]


def _item(row: dict) -> dict:
    """A row of the list: its kind, its link and what the columns show."""
    if row["item_kind"] == "proposal":
        url = reverse("admin:agents_promptversion_review", args=[row["item_pk"]])
        name = f"{row['item_label']} v{row['item_detail']}"
    else:
        url = reverse("admin:agents_approvalrequest_review", args=[row["item_pk"]])
        name = f"{row['item_detail']} #{row['item_pk']} ({row['item_label']})"
    return {
        "kind": row["item_kind"],
        "kind_label": KIND_LABELS[row["item_kind"]],
        "url": url,
        "name": name,
        "source": row["item_source"],
        "workspace": row["item_workspace"],
        "created_at": row["item_created_at"],
        "status": _badge(row["item_status"]),
    }


def _badge(status: str) -> str:
    """Both kinds' statuses (an action may be `expired`) in the person's language."""
    return format_html(
        '<span class="aih-badge" data-status="{}" style="background:{}">{}</span>',
        status,
        STATUS_COLOURS.get(status, "#718096"),
        str(STATUS_LABELS.get(status, status)).lower(),
    )
