from collections.abc import Callable

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from agents.selectors import prompt_version_pending_count
from aihummer.actors import Actor

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_review_count(context: template.Context) -> int:
    """Proposals waiting for the current person's decision (one query per request)."""
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return 0
    if not hasattr(request, "_aihummer_pending_count"):
        request._aihummer_pending_count = prompt_version_pending_count(actor=Actor.for_request(request))
    return request._aihummer_pending_count


def tier_reason_text(reason: dict, quote: Callable[[str], str] = str, escape: Callable[[str], str] = str) -> str:
    """A tier reason (`agents.tiers.Reason.as_json`) in the reader's language, each name
    it quotes passed through `quote`. Reasons stored before they carried their template
    read as recorded."""
    if "template" not in reason:
        return escape(reason["line"])
    return escape(gettext(reason["template"])) % {name: quote(value) for name, value in reason["names"].items()}


@register.filter(name="tier_reason")
def tier_reason(reason: dict) -> str:
    """The same as HTML, the names it quotes (keys, tools, policy paths) as code."""
    code = lambda name: format_html("<code>{}</code>", name)  # noqa: E731
    # Safe: the translated template is escaped and each name goes through format_html.
    return mark_safe(tier_reason_text(reason, quote=code, escape=conditional_escape))  # noqa: S308
