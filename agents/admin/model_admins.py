from __future__ import annotations

import json

from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import flatten_fieldsets
from django.db import models
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.functional import lazy
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop
from django.views.decorators.debug import sensitive_post_parameters

from agents.admin.desk import AgentDeskMixin
from agents.admin.evidence import AgentTestCaseInline
from agents.admin.forms import AGENT_FORM_FIELDS, AgentForm, CredentialForm, DeleteForm, PresetForm, SkillForm
from agents.models import (
    Agent,
    AgentSection,
    AgentSkill,
    AgentTestCase,
    AgentTurn,
    Conversation,
    ConversationMessage,
    ConversationNote,
    Credential,
    Preset,
    PromptVersion,
    Skill,
)
from agents.policy import runtime_policy_sections
from agents.rendering import render_prefix
from agents.selectors import (
    EXECUTION_TREE_MAX_TURNS,
    TURN_ORIGINS,
    agent_pending_proposal_count,
    agent_turn_origin,
    agent_turns_from,
    debug_log_page,
    execution_tree,
)
from agents.services import (
    agent_delete,
    agent_dependents,
    credential_delete,
    credential_dependents,
    preset_activate,
    preset_delete,
    preset_dependents,
)
from agents.templatetags.desk_format import money
from aihummer import service_checks
from aihummer.actors import Actor, Verb
from aihummer.admin_site import SERVICE_ERRORS, ListedFilter, WorkspaceScopedAdmin, service_error_message

# --- credentials ----------------------------------------------------------------------


@admin.register(Credential)
class CredentialAdmin(WorkspaceScopedAdmin):
    form = CredentialForm

    @method_decorator(sensitive_post_parameters("secret"))
    def changeform_view(self, *args: object, **kwargs: object) -> HttpResponse:
        return super().changeform_view(*args, **kwargs)

    list_display = ["key", "name", "workspace", "secret_status", "preset_count", "updated_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace"]
    search_fields = ["key", "name"]
    history_list_display = ["fingerprint"]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return (
            super()
            .get_queryset(request)
            .defer("ciphertext")
            .annotate(
                # Sandbox rows are invisible to people, in counts too.
                preset_count=Count("presets", filter=Q(presets__is_sandbox=False))
            )
        )

    @admin.display(description=gettext_lazy("secret"))
    def secret_status(self, obj: Credential) -> str:
        return _("set · %(fingerprint)s") % {"fingerprint": obj.fingerprint}

    @admin.display(description=gettext_lazy("presets"), ordering="preset_count")
    def preset_count(self, obj: Credential) -> int:
        return obj.preset_count

    def get_readonly_fields(self, request: HttpRequest, obj: Credential | None = None) -> list[str]:
        return ["workspace", "key", "secret_status"] if obj else []

    def deletion_refusal(self, request: HttpRequest, obj: Credential) -> str | None:
        return service_checks.deletion_refusal(obj, noun="credential", dependents=credential_dependents(obj))

    def delete_model(self, request: HttpRequest, obj: Credential) -> None:
        credential_delete(credential=obj, actor=self.actor(request))


# --- presets --------------------------------------------------------------------------


@admin.register(Preset)
class PresetAdmin(WorkspaceScopedAdmin):
    form = PresetForm
    add_verb = change_verb = delete_verb = Verb.PUBLISH
    list_display = ["key", "name", "workspace", "provider_name", "model", "is_active", "agent_count"]
    list_filter = ["workspace", "provider_name", "is_active"]
    ordering = ["workspace__slug", "key"]
    list_select_related = ["workspace"]
    search_fields = ["key", "name", "model"]
    actions = ["make_default"]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).annotate(agent_count=Count("agents", filter=Q(agents__is_sandbox=False)))

    @admin.display(description=gettext_lazy("agents"), ordering="agent_count")
    def agent_count(self, obj: Preset) -> int:
        return obj.agent_count

    def get_readonly_fields(self, request: HttpRequest, obj: Preset | None = None) -> list[str]:
        return ["workspace", "key", "is_active"] if obj else ["is_active"]

    def formfield_for_foreignkey(self, db_field: models.Field, request: HttpRequest, **kwargs: object) -> object:
        if db_field.name == "credential":
            workspace_ids = self.actor(request).workspace_ids(self.add_verb)
            queryset = Credential.objects.defer("ciphertext")  # never load a ciphertext to draw a picker
            kwargs["queryset"] = queryset if workspace_ids is None else queryset.filter(workspace_id__in=workspace_ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return self.allowed(request, Verb.PUBLISH)

    @admin.action(description=gettext_lazy("Make the selected preset the workspace's default"), permissions=["publish"])
    def make_default(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        for preset in queryset:
            try:
                preset_activate(preset=preset, actor=self.actor(request))
                done = _("“%(preset)s” is now the default of workspace “%(workspace)s”.")
                self.message_user(request, done % {"preset": preset.key, "workspace": preset.workspace})
            except SERVICE_ERRORS as exc:
                self.message_user(request, f"{preset.key}: {service_error_message(exc)}", level="error")

    def deletion_refusal(self, request: HttpRequest, obj: Preset) -> str | None:
        dependents = preset_dependents(obj, actor=self.actor(request))
        return service_checks.deletion_refusal(obj, noun="preset", dependents=dependents)

    def delete_model(self, request: HttpRequest, obj: Preset) -> None:
        preset_delete(preset=obj, actor=self.actor(request))


# --- shared skills --------------------------------------------------------------------


@admin.register(Skill)
class SkillAdmin(WorkspaceScopedAdmin):
    form = SkillForm
    add_verb = change_verb = Verb.PROPOSE
    list_display = ["key", "title", "workspace", "updated_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace"]
    search_fields = ["key", "title", "body"]

    def get_readonly_fields(self, request: HttpRequest, obj: Skill | None = None) -> list[str]:
        return ["workspace", "key"] if obj else []

    def save_model(self, request: HttpRequest, obj: Skill, form: SkillForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        for proposal in getattr(form, "proposals", []):
            if not proposal.is_sandbox:  # sandbox agents follow too, unseen by people
                messages.info(
                    request,
                    _("Proposed to %(agent)s as v%(number)s (%(status)s).")
                    % {
                        "agent": proposal.agent.key,
                        "number": proposal.number,
                        "status": proposal.get_status_display().lower(),
                    },
                )


# --- agents ---------------------------------------------------------------------------
class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        # Members have no Django model permissions: the actor's rights decide. Without
        # an object (the inline's queryset) the parent page has already been checked.
        actor = Actor.for_request(request)
        return actor.workspace_ids(Verb.READ) != [] if obj is None else actor.can(Verb.READ, obj.workspace)

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False


class OrderedInline(ReadOnlyInline):
    """Rows with a `position` (0-based, stored), shown as the propose form numbers them."""

    ordering = ["position"]

    @admin.display(description=gettext_lazy("order"))
    def order(self, obj: AgentSection | AgentSkill) -> int:
        return obj.position + 1


class AgentSectionInline(OrderedInline):
    model = AgentSection
    fields = readonly_fields = ["order", "key", "title", "body", "enabled"]


class AgentSkillInline(OrderedInline):
    model = AgentSkill
    fields = readonly_fields = ["order", "key", "title", "body", "shared"]


@admin.register(Agent)
class AgentAdmin(AgentDeskMixin, WorkspaceScopedAdmin):
    form = AgentForm
    add_verb = change_verb = delete_verb = Verb.PUBLISH
    list_display = ["key", "name", "workspace", "preset", "is_active", "live_version_number", "updated_at"]
    list_filter = ["workspace", "is_active"]
    list_select_related = ["workspace", "preset", "live_version"]
    search_fields = ["key", "name", "description"]
    autocomplete_fields = ["preset"]
    inlines = [AgentSectionInline, AgentSkillInline, AgentTestCaseInline]
    profile_fields = [
        "live_version_number",
        "is_builtin",
        "identity_name",
        "role",
        "language",
        "goals_list",
        "persona",
        "system_prompt",
        "onboarding",
        "allowed_tool_names",
        "runtime_policy_json",
        "rendered_prompt",
    ]

    def get_deleted_objects(self, objs: list, request: HttpRequest) -> tuple:
        # An agent's versions and profile rows go with it (agent_delete); deleting the
        # agent must not need rights on them, which nobody has one by one.
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        for model in (PromptVersion, AgentSection, AgentSkill, AgentTestCase):
            perms_needed.discard(model._meta.verbose_name)
        return deleted, model_count, perms_needed, protected

    def save_model(self, request: HttpRequest, obj: Agent, form: AgentForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if form.proposal is not None:
            said = (
                _("The preset change is version %(number)s (%(status)s): it waits for review in the queue.")
                if form.proposal.is_pending
                else _("The preset change is version %(number)s (%(status)s): it is live.")
            )
            status = form.proposal.get_status_display().lower()
            messages.info(request, said % {"number": form.proposal.number, "status": status})

    def get_fieldsets(self, request: HttpRequest, obj: Agent | None = None) -> list:
        if obj is None:
            return [(None, {"fields": ["workspace", "key", *AGENT_FORM_FIELDS]})]
        return [
            # expected_live: the hidden live version number the page showed (no lost update).
            (None, {"fields": ["workspace", "key", *AGENT_FORM_FIELDS, "expected_live"]}),
            (_("What the agent is told (live version, read-only)"), {"fields": self.profile_fields}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> list[str]:
        return ["workspace", "key", *self.profile_fields] if obj else []

    def get_inlines(self, request: HttpRequest, obj: Agent | None) -> list:
        return self.inlines if obj else []

    def render_change_form(
        self, request: HttpRequest, context: dict, add: bool = False, change: bool = False, form_url: str = "", obj=None
    ) -> HttpResponse:
        if obj is not None:
            # The banner above the form: proposals waiting, linked to the queue filtered on this agent.
            context["pending_proposals"] = agent_pending_proposal_count(agent=obj)
            context["pending_queue_url"] = (
                reverse("admin:agents_promptversion_changelist") + f"?agent__id__exact={obj.pk}"
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description=gettext_lazy("live version"))
    def live_version_number(self, obj: Agent) -> str:
        return f"v{obj.live_number}" if obj.live_number else _("none yet: version 1 is waiting for review")

    @admin.display(description=gettext_lazy("goals"))
    def goals_list(self, obj: Agent) -> str:
        return "; ".join(obj.goals) or "—"

    @admin.display(description=gettext_lazy("runtime policy"))
    def runtime_policy_json(self, obj: Agent) -> str:
        # Its sections as a readable form, defaults marked; the JSON one click away.
        context = {
            "sections": runtime_policy_sections(obj.runtime_policy),
            "policy_json": json.dumps(obj.runtime_policy, indent=2, ensure_ascii=False),
        }
        return render_to_string("admin/agents/agent/_runtime_policy.html", context)

    @admin.display(description=gettext_lazy("rendered system prompt (first turn)"))
    def rendered_prompt(self, obj: Agent) -> str:
        prefix = render_prefix(obj.live_snapshot, first_turn=True) if obj.live_snapshot else ""
        return format_html("<pre style='white-space:pre-wrap;max-width:60em'>{}</pre>", prefix)

    def deletion_refusal(self, request: HttpRequest, obj: Agent) -> str | None:
        dependents = [] if obj.is_builtin else agent_dependents(obj, actor=self.actor(request))
        return service_checks.deletion_refusal(obj, noun="agent", dependents=dependents)

    def delete_model(self, request: HttpRequest, obj: Agent) -> None:
        form = DeleteForm(request.POST)
        expected_live = form.cleaned_data["expected_live"] if form.is_valid() else None
        agent_delete(agent=obj, actor=self.actor(request), expected_live=expected_live)


# --- turns and their debug logs (read-only) -------------------------------------------
class TurnOriginFilter(admin.SimpleListFilter):
    """Where turns came from: evidence, try-it, a workflow step, a conversation, or a
    direct call."""

    title = gettext_lazy("origin")
    parameter_name = "origin"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return TURN_ORIGINS

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        return agent_turns_from(queryset, self.value()) if self.value() else queryset


@admin.register(AgentTurn)
class AgentTurnAdmin(WorkspaceScopedAdmin):
    list_display = ["__str__", "agent_key", "version_number", "status", "dry_run", "model", "cost", "started_at"]
    list_filter = [
        "workspace",
        ("agent", RelatedOnlyFieldListFilter),
        TurnOriginFilter,
        "status",
        "dry_run",
        ListedFilter,
    ]
    list_select_related = ["workspace"]
    search_fields = ["agent_key", "message", "answer", "actor_source"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "workspace",
                    "agent_link",
                    "origin",
                    "version_number",
                    "parent",
                    "depth",
                    "actor_source",
                    "dry_run",
                ]
            },
        ),
        (gettext_lazy("Outcome"), {"fields": ["status", "message_text", "answer_text", "error"]}),
        (
            gettext_lazy("Usage"),
            {
                "fields": [
                    "provider_name",
                    "model",
                    "model_calls",
                    "input_tokens",
                    "cached_input_tokens",
                    "output_tokens",
                    "cost",
                    "prefix_hash",
                    "started_at",
                    "finished_at",
                ]
            },
        ),
        (gettext_lazy("Execution tree"), {"fields": ["tree"]}),
        (gettext_lazy("Debug log"), {"fields": ["calls"]}),
    ]
    readonly_fields = flatten_fieldsets(fieldsets)  # a turn is a record: every field shown, none edited

    @admin.display(description=gettext_lazy("cost"), ordering="cost_usd")
    def cost(self, obj: AgentTurn) -> str:
        return money(obj.cost_usd)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AgentTurn | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AgentTurn | None = None) -> bool:
        return False

    @admin.display(description=gettext_lazy("agent"))
    def agent_link(self, obj: AgentTurn) -> str:
        if obj.agent_id is None:
            return _("%(agent)s (deleted)") % {"agent": obj.agent_key}
        url = reverse("admin:agents_agent_change", args=[obj.agent_id])
        return format_html('<a href="{}">{}</a>', url, obj.agent_key)

    @admin.display(description=gettext_lazy("origin"))
    def origin(self, obj: AgentTurn) -> str:
        origin = agent_turn_origin(turn=obj)
        if origin.step is not None:
            step = origin.step
            url = reverse("admin:workflows_workflowrun_change", args=[step.run_id]) + f"#step-{step.name}"
            label = _("workflow run %(run)s, step %(step)s") % {"run": str(step.run_id)[:8], "step": step.name}
            return format_html('<a href="{}" id="aih-turn-step">{}</a>', url, label)
        if origin.conversation_id is not None:
            url = reverse("admin:agents_conversation_change", args=[origin.conversation_id])
            return format_html('<a href="{}" id="aih-turn-conversation">{}</a>', url, _("conversation"))
        if origin.evidence_version_id is not None:
            url = reverse("admin:agents_promptversion_review", args=[origin.evidence_version_id])
            return format_html('<a href="{}#aih-evidence" id="aih-turn-evidence">{}</a>', url, _("evidence run"))
        return dict(TURN_ORIGINS)[origin.kind]

    @admin.display(description=gettext_lazy("message"))
    def message_text(self, obj: AgentTurn) -> str:
        return format_html("<pre style='white-space:pre-wrap'>{}</pre>", obj.message)

    @admin.display(description=gettext_lazy("answer"))
    def answer_text(self, obj: AgentTurn) -> str:
        return format_html("<pre style='white-space:pre-wrap'>{}</pre>", obj.answer)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> AgentTurn | None:
        turn = super().get_object(request, object_id, from_field)
        if turn is not None:
            turn.calls_page = request.GET.get("calls")  # which page of model calls `calls` shows
        return turn

    @admin.display(description=gettext_lazy("turns"))
    def tree(self, obj: AgentTurn) -> str:
        context = {"tree": execution_tree(turn=obj), "current": obj.pk, "limit": EXECUTION_TREE_MAX_TURNS}
        return render_to_string("admin/agents/execution_tree.html", context)

    @admin.display(description=gettext_lazy("model calls"))
    def calls(self, obj: AgentTurn) -> str:
        page = debug_log_page(turn=obj, number=getattr(obj, "calls_page", None))
        for log in page.object_list:
            log.parameters_json = json.dumps(log.parameters, indent=2, ensure_ascii=False)
            log.response_json = json.dumps(log.response, indent=2, ensure_ascii=False)
        return render_to_string("admin/agents/debug_logs.html", {"page": page})


# --- conversations (read-only) ----------------------------------------------------------
# Messages a conversation's page shows, the newest; the REST API pages through all of them.
CONVERSATION_PAGE_MESSAGES = 200
CONVERSATION_PAGE_NOTES = 50
# A heading with its count, translated when the page is drawn (not at import).
newest = lazy(lambda text, count: _(text) % {"count": count}, str)


@admin.register(Conversation)
class ConversationAdmin(WorkspaceScopedAdmin):
    """Conversations as recorded: their messages, the turn and prompt version behind
    each answer. Written only by `conversation_send`; sandbox rows never appear."""

    list_display = ["__str__", "agent", "peer", "channel_label", "message_count", "last_message_at", "created_at"]
    list_filter = [ListedFilter, "workspace", "channel"]
    list_select_related = ["workspace", "agent"]
    search_fields = ["peer", "agent__key"]
    readonly_fields = [
        "workspace",
        "agent",
        "answering_agent",
        "peer",
        "channel_label",
        "message_count",
        "context_start",
        "compacted_through",
        "last_message_at",
        "created_at",
        "notes_table",
        "messages_table",
    ]
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    @admin.display(description=gettext_lazy("channel"))
    def channel_label(self, obj: Conversation) -> str:
        return obj.channel or _("every channel (per-peer)")

    @admin.display(description=newest(gettext_noop("messages (the newest %(count)d)"), CONVERSATION_PAGE_MESSAGES))
    def messages_table(self, obj: Conversation) -> str:
        rows = list(
            ConversationMessage.objects.filter(conversation=obj)
            .order_by("-sequence")
            .only("sequence", "role", "channel", "text", "turn_id", "version_number", "agent_key", "created_at")[
                :CONVERSATION_PAGE_MESSAGES
            ]
        )
        rows.reverse()
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td><pre style='white-space:pre-wrap;margin:0'>{}</pre></td></tr>",
            (
                (
                    m.sequence,
                    m.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    # who answered, hand-offs included
                    f"{m.get_role_display().lower()} ({m.agent_key})" if m.agent_key else m.get_role_display().lower(),
                    m.channel,
                    self._turn_link(m),
                    f"v{m.version_number}" if m.version_number else "",
                    (_("— new context —") + "\n" if m.sequence == obj.context_start and m.sequence > 1 else "")
                    + (
                        _("[compacted: sent as the summary]") + " "
                        if obj.context_start <= m.sequence <= obj.compacted_through
                        else ""
                    )
                    + m.text,
                )
                for m in rows
            ),
        )
        headings = ["#", _("at"), _("role"), _("channel"), _("turn"), _("version"), _("text")]
        return format_html(
            "<table><tr>{}</tr>{}</table>", format_html_join("", "<th>{}</th>", ((h,) for h in headings)), body
        )

    @admin.display(
        description=newest(gettext_noop("summaries and memory notes (the newest %(count)d)"), CONVERSATION_PAGE_NOTES)
    )
    def notes_table(self, obj: Conversation) -> str:
        rows = list(ConversationNote.objects.filter(conversation=obj).order_by("-pk")[:CONVERSATION_PAGE_NOTES])
        rows.reverse()
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}-{}</td><td>{}</td><td>{} / {}</td><td>{}</td>"
            "<td><pre style='white-space:pre-wrap;margin:0'>{}</pre></td></tr>",
            (
                (
                    n.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    n.get_kind_display(),
                    n.first_sequence,
                    n.last_sequence,
                    n.model,
                    n.input_tokens,
                    n.output_tokens,
                    money(n.cost_usd),
                    n.text,
                )
                for n in rows
            ),
        )
        headings = [_("at"), _("kind"), _("messages"), _("model"), _("tokens in / out"), _("cost"), _("text")]
        return format_html(
            "<table><tr>{}</tr>{}</table>", format_html_join("", "<th>{}</th>", ((h,) for h in headings)), body
        )

    @staticmethod
    def _turn_link(message: ConversationMessage) -> str:
        if message.turn_id is None:
            return ""
        url = reverse("admin:agents_agentturn_change", args=[message.turn_id])
        return format_html('<a href="{}">{}</a>', url, message.turn_id)
