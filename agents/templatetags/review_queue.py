from django import template

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
