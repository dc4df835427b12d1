"""E-mails about the approval queue, sent by a task after the transaction commits."""

from __future__ import annotations

from django.core.mail import send_mass_mail

from agents.models import PromptVersion
from aihummer.models import Membership, User
from aihummer.tasks import enqueue

NOTIFICATION_FIELDS = (
    "number",
    "status",
    "source",
    "reason",
    "review_note",
    "workspace_id",
    "proposed_by_id",
    "reviewed_by_id",
    "agent__key",
    "workspace__slug",
    "proposed_by__email",
    "proposed_by__username",
    "reviewed_by__username",
)

# A mail quotes, it does not carry: the whole text is on the review page.
MAIL_EXCERPT_CHARS = 300


def excerpt(text: str) -> str:
    if not text:
        return "—"
    if len(text) <= MAIL_EXCERPT_CHARS:
        return text
    return f"{text[:MAIL_EXCERPT_CHARS]}… ({len(text)} characters; read it all on the review page)"


def notify(version: PromptVersion, event: str) -> None:
    """Queue the e-mails about `event` ("proposed" or "decided") for after the commit."""
    enqueue("agents.prompt_version_notify", version.pk, event)


def prompt_version_notify(*, version_id: int, event: str) -> int:
    """E-mail the workspace's reviewers (but not the proposer) about a new proposal,
    or the proposer about a decision. Returns the number of messages sent."""
    # Names and people only: the snapshot (up to AIHUMMER_MAX_SNAPSHOT_CHARS) is not e-mailed.
    version = (
        PromptVersion.all_objects.select_related("agent", "workspace", "proposed_by", "reviewed_by")
        .only(*NOTIFICATION_FIELDS)
        .get(pk=version_id)
    )
    if event == "proposed":
        reviewers = User.objects.filter(
            is_active=True,
            memberships__workspace_id=version.workspace_id,
            memberships__role__in=[Membership.Role.REVIEWER, Membership.Role.ADMIN],
        ).exclude(email="")
        if version.proposed_by_id:
            reviewers = reviewers.exclude(pk=version.proposed_by_id)
        subject = f"[AiHummer] {version.agent.key} v{version.number} waits for review"
        body = (
            f"{version.source} proposed a change to '{version.agent.key}' in '{version.workspace.slug}'.\n\n"
            f"Reason: {excerpt(version.reason)}"
        )
        recipients = list(reviewers.order_by("pk").values_list("email", flat=True))
    elif event == "decided":
        proposer = version.proposed_by
        if proposer is None or not proposer.email:
            return 0
        decided_by = version.reviewed_by.get_username() if version.reviewed_by else "someone"
        subject = f"[AiHummer] {version.agent.key} v{version.number} was {version.status}"
        body = f"{decided_by} {version.status} your proposal.\n\nNote: {excerpt(version.review_note)}"
        recipients = [proposer.email]
    else:
        raise ValueError(f"Unknown notification event {event!r}.")
    messages = [(subject, body, None, [email]) for email in recipients]
    return send_mass_mail(messages, fail_silently=False) if messages else 0
