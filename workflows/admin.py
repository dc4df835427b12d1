"""The workflows desk: workflows edited through the services (definition validated with
every problem located, the step graph, versions with their diffs, "Start a run"), and
runs listed with filters and totals, each on one page that tells its whole story and
follows it live. Workspace-scoped; sandbox rows hidden (the default managers do not
return them).

Every view re-checks rights through the actor and calls the same services as every
other surface; these views only parse forms and show results.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from agents.models import Agent, PromptVersion
from agents.templatetags.desk_format import duration_ms, money
from aihummer import service_checks
from aihummer.actors import Verb
from aihummer.admin_site import (
    SERVICE_ERRORS,
    AgeFilter,
    ServiceModelForm,
    WorkspaceScopedAdmin,
    add_service_errors,
    service_error_message,
)
from aihummer.ids import canonical_id
from workflows.diff import definition_diff
from workflows.drawing import STATUS_COLOURS, graph_svg, run_timeline
from workflows.engine import DefinitionError, compile_definition
from workflows.forms import DefinitionField, RunStartForm, locate_problems
from workflows.models import RunStatus, StepRun, StepStatus, Workflow, WorkflowRun
from workflows.selectors import step_child_turns, step_runs_for_page, workflow_run_totals
from workflows.services import (
    WORKFLOW_FIELDS,
    workflow_create,
    workflow_delete,
    workflow_dependents,
    workflow_run_cancel,
    workflow_run_resume,
    workflow_run_start,
    workflow_update,
)

POLL_MS = 1000


def status_badge(status: str) -> SafeString:
    """A run's or a step's status in the reader's language (the value stays in `data-status`)."""
    label = StepStatus(status).label.lower() if status in StepStatus.values else status
    return format_html(
        '<span class="aih-badge aih-run-status" data-status="{}" style="background:{}">{}</span>',
        status,
        STATUS_COLOURS.get(status, "#718096"),
        label,
    )


def definition_graph(
    definition: object, statuses: dict[str, str] | None = None, agent_urls: dict[str, str] | None = None
) -> SafeString | None:
    """The step graph of a stored definition (its agents are not validated: a picture),
    boxes linked to the agents in `agent_urls`, or None for one that does not compile."""
    try:
        return graph_svg(compile_definition(definition), statuses, agent_urls)
    except DefinitionError:
        return None


def agent_urls(workspace_id: int, *definitions: object) -> dict[str, str]:
    """The admin page of each agent the definitions name, by key: one query."""
    keys = {
        step.get("agent_name")
        for definition in definitions
        if isinstance(definition, dict) and isinstance(definition.get("steps"), list)
        for step in definition["steps"]
        if isinstance(step, dict) and isinstance(step.get("agent_name"), str)
    }
    agents = Agent.objects.filter(workspace_id=workspace_id, key__in=keys).values_list("key", "pk")
    return {key: reverse("admin:agents_agent_change", args=[pk]) for key, pk in agents}


def format_duration(delta: timedelta | None) -> str:
    return duration_ms(delta)


# --- workflows ------------------------------------------------------------------------
class WorkflowForm(ServiceModelForm):
    definition = DefinitionField(
        label=_("Definition"), help_text=_("Pivot format v1: version, steps, optional outputs (`workflow_schema`).")
    )

    submitted_definition: object = None

    class Meta:
        model = Workflow
        fields = ["workspace", "key", *WORKFLOW_FIELDS]

    def clean_definition(self) -> object:
        # Kept apart: a service error on the field removes it from cleaned_data.
        self.submitted_definition = self.cleaned_data["definition"]
        return self.submitted_definition

    def call_service(self) -> Workflow:
        data = self.cleaned_data
        try:
            if self.instance.pk is None:
                return workflow_create(
                    workspace=data["workspace"],
                    key=data["key"],
                    name=data["name"],
                    description=data["description"],
                    definition=data["definition"],
                    is_active=data["is_active"],
                    actor=self.actor,
                )
            return workflow_update(workflow=self.instance, actor=self.actor, **self.changed_values(WORKFLOW_FIELDS))
        except ValidationError as exc:
            if hasattr(exc, "error_dict") and "definition" in exc.error_dict:
                problems = exc.message_dict
                problems["definition"] = locate_problems(data["definition"], problems["definition"])
                raise ValidationError(problems) from None
            raise


@admin.register(Workflow)
class WorkflowAdmin(WorkspaceScopedAdmin):
    form = WorkflowForm
    add_verb = change_verb = delete_verb = Verb.PUBLISH
    change_form_template = "admin/workflows/workflow/change_form.html"
    list_display = ["key", "name", "workspace", "version", "step_count", "is_active", "runs_link", "updated_at"]
    list_filter = ["workspace", "is_active"]
    list_select_related = ["workspace"]
    search_fields = ["key", "name", "description"]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).select_related("workspace")

    def get_readonly_fields(self, request: HttpRequest, obj: Workflow | None = None) -> list[str]:
        return ["workspace", "key", "version", "is_builtin"] if obj else []

    @admin.display(description=_("steps"))
    def step_count(self, obj: Workflow) -> int:
        steps = obj.definition.get("steps") if isinstance(obj.definition, dict) else None
        return len(steps) if isinstance(steps, list) else 0

    @admin.display(description=_("runs"))
    def runs_link(self, obj: Workflow) -> str:
        url = reverse("admin:workflows_workflowrun_changelist")
        return format_html('<a href="{}?workflow__id__exact={}">{}</a>', url, obj.pk, gettext("runs"))

    def deletion_refusal(self, request: HttpRequest, obj: Workflow) -> str | None:
        dependents = [] if obj.is_builtin else workflow_dependents(obj)
        return service_checks.deletion_refusal(obj, noun="workflow", dependents=dependents)

    def delete_model(self, request: HttpRequest, obj: Workflow) -> None:
        workflow_delete(workflow=obj, actor=self.actor(request))

    # views
    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/start/", wrap(self.start_view), name="workflows_workflow_start"),
            path("<path:object_id>/versions/", wrap(self.versions_view), name="workflows_workflow_versions"),
            *super().get_urls(),
        ]

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict,
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Workflow | None = None,
    ) -> HttpResponse:
        form = context["adminform"].form
        draft = getattr(form, "submitted_definition", None) if form.is_bound and form.errors else None
        if draft is not None:
            # The edit that did not save, drawn when its shape allows: fix it by looking.
            context["draft_graph"] = definition_graph(draft)
        if obj is not None:
            # After a failed save the form has written the draft onto `obj`: draw the stored one.
            saved = obj.definition if draft is None else Workflow.all_objects.get(pk=obj.pk).definition
            context["graph"] = definition_graph(saved, agent_urls=agent_urls(obj.workspace_id, saved))
            context["can_start"] = self.actor(request).can(Verb.RUN, obj.workspace) and obj.is_active
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _workflow(self, request: HttpRequest, object_id: str) -> Workflow:
        # The scoped queryset: another workspace's workflow, or a sandbox one, is a 404.
        workflow = self.get_object(request, unquote(object_id))
        if workflow is None:
            raise Http404
        return workflow

    def _context(self, request: HttpRequest, workflow: Workflow, title: str, **extra: object) -> dict:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            "workflow": workflow,
            **extra,
        }

    def start_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        actor = self.actor(request)
        workflow = self._workflow(request, object_id)
        actor.require(Verb.RUN, workflow.workspace)
        form = RunStartForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                run = workflow_run_start(
                    workflow=workflow,
                    actor=actor,
                    message=form.cleaned_data["message"],
                    inputs=form.cleaned_data["inputs"],
                )
            except SERVICE_ERRORS as exc:
                add_service_errors(form, exc)
            else:
                self.log_change(request, workflow, f"started run {run.pk}")
                started = gettext("Run %(run)s of %(workflow)s v%(version)s started.")
                messages.success(
                    request, started % {"run": run.pk, "workflow": workflow.key, "version": run.workflow_version}
                )
                return redirect("admin:workflows_workflowrun_change", run.pk)
        context = self._context(
            request,
            workflow,
            gettext("Start a run of %(workflow)s") % {"workflow": workflow.key},
            form=form,
            graph=definition_graph(
                workflow.definition, agent_urls=agent_urls(workflow.workspace_id, workflow.definition)
            ),
        )
        return TemplateResponse(request, "admin/workflows/workflow/start.html", context)

    def versions_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        workflow = self._workflow(request, object_id)
        records = list(workflow.history.select_related("history_user").order_by("history_date", "history_id"))
        urls = agent_urls(workflow.workspace_id, *(record.definition for record in records))
        versions: list = []
        for record in records:
            # One entry per definition version: its first record says who made it and when.
            if versions and versions[-1]["record"].version == record.version:
                continue
            previous = versions[-1]["record"] if versions else None
            versions.append(
                {
                    "record": record,
                    "number": record.version,
                    "previous": previous.version if previous else None,
                    "diff": definition_diff(previous.definition, record.definition) if previous else None,
                    "graph": definition_graph(record.definition, agent_urls=urls),
                    "definition_text": json.dumps(record.definition, indent=2, ensure_ascii=False),
                }
            )
        versions.reverse()
        title = gettext("Versions of %(workflow)s") % {"workflow": workflow.key}
        context = self._context(request, workflow, title, versions=versions)
        return TemplateResponse(request, "admin/workflows/workflow/versions.html", context)


# --- runs -----------------------------------------------------------------------------
class WorkflowFilter(admin.SimpleListFilter):
    """The workflows the actor's runs belong to, by key (their heavy definitions are
    not loaded to name them)."""

    title = _("workflow")
    parameter_name = "workflow__id__exact"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        ran = model_admin.get_queryset(request).values("workflow_id")
        return [(str(pk), key) for pk, key in Workflow.objects.filter(pk__in=ran).values_list("pk", "key")]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        if not self.value():
            return queryset
        return queryset.filter(workflow_id=self.value() if canonical_id(self.value()) else None)


class StartedByFilter(admin.SimpleListFilter):
    """Who started the run, through what (`admin:alice`, `api:ci`, `cli:ops`): people,
    API keys and scripts alike, among the runs the actor may read."""

    title = _("started by")
    parameter_name = "started_by"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        sources = model_admin.get_queryset(request).order_by("actor_source").values_list("actor_source", flat=True)
        return [(source, source) for source in sources.distinct()[:100]]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        return queryset.filter(actor_source=self.value()) if self.value() else queryset


class RanVersionFilter(admin.SimpleListFilter):
    """Runs with a step that ran one prompt version (the lineage link from a version's
    review page); offered only when followed from there. Another workspace's version
    selects nothing and is not named."""

    title = _("ran agent version")
    parameter_name = "ran_version"

    def __init__(self, request: HttpRequest, params: dict, model: type, model_admin: admin.ModelAdmin) -> None:
        self.model_admin = model_admin
        super().__init__(request, params, model, model_admin)

    def version(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> PromptVersion | None:
        if not hasattr(self, "_version"):
            value = self.value() or ""
            versions = model_admin.scope(request, PromptVersion.objects.select_related("agent"))
            self._version = versions.filter(pk=value).first() if canonical_id(value) else None
        return self._version

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        version = self.version(request, model_admin)
        return [(self.value(), f"{version.agent.key} v{version.number}")] if version else []

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        if not self.value():
            return queryset
        version = self.version(request, self.model_admin)
        if version is None:
            return queryset.none()
        ran = StepRun.objects.filter(agent_id=version.agent_id, agent_version=version.number).values("run_id")
        return queryset.filter(pk__in=ran)


@admin.register(WorkflowRun)
class WorkflowRunAdmin(WorkspaceScopedAdmin):
    list_display = [
        "run_link",
        "workflow_label",
        "status_badge",
        "started_by_label",
        "age",
        "duration",
        "tokens",
        "cost",
    ]
    list_display_links = None
    list_filter = [
        "status",
        WorkflowFilter,
        AgeFilter,
        StartedByFilter,
        ("workspace", RelatedOnlyFieldListFilter),
        RanVersionFilter,
    ]
    search_fields = ["workflow_key", "answer", "actor_source"]
    change_list_template = "admin/workflows/workflowrun/change_list.html"
    list_per_page = 50
    show_full_result_count = False  # the totals panel counts the selected runs already
    show_facets = admin.ShowFacets.NEVER  # a count query per filter choice, for little

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).defer("context", "definition", "inputs", "outputs", "answer")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkflowRun | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: WorkflowRun | None = None) -> bool:
        return False

    # columns
    @admin.display(description=_("run"), ordering="created_at")
    def run_link(self, obj: WorkflowRun) -> str:
        url = reverse("admin:workflows_workflowrun_change", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, str(obj.pk)[:8])

    @admin.display(description=_("workflow"), ordering="workflow_key")
    def workflow_label(self, obj: WorkflowRun) -> str:
        return f"{obj.workflow_key} v{obj.workflow_version}"

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: WorkflowRun) -> str:
        return status_badge(obj.status)

    # Not named `started_by`: the model's field of that name (the person, blank for a key
    # or a script) would win over this method, and the column would disagree with the filter.
    @admin.display(description=_("started by"), ordering="actor_source")
    def started_by_label(self, obj: WorkflowRun) -> str:
        return obj.actor_source

    @admin.display(description=_("age"), ordering="created_at")
    def age(self, obj: WorkflowRun) -> str:
        return timesince(obj.created_at)

    @admin.display(description=_("duration"))
    def duration(self, obj: WorkflowRun) -> str:
        if obj.started_at is None:
            return "—"
        if obj.finished_at is None:  # as the run page says it: still counting
            return gettext("%(duration)s so far") % {"duration": format_duration(timezone.now() - obj.started_at)}
        return format_duration(obj.finished_at - obj.started_at)

    @admin.display(description=_("cost"), ordering="cost_usd")
    def cost(self, obj: WorkflowRun) -> str:
        return money(obj.cost_usd)

    @admin.display(description=_("tokens"))
    def tokens(self, obj: WorkflowRun) -> int:
        return obj.input_tokens + obj.output_tokens

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        response = super().changelist_view(request, {"title": gettext("Workflow runs"), **(extra_context or {})})
        changelist = getattr(response, "context_data", {}).get("cl")
        if changelist is not None:
            totals = workflow_run_totals(changelist.queryset)
            totals["duration_text"] = format_duration(totals["duration"])
            response.context_data["totals"] = totals
        return response

    # the run page
    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/live/", wrap(self.live_view), name="workflows_workflowrun_live"),
            path("<path:object_id>/cancel/", wrap(require_POST(self.cancel_view)), name="workflows_workflowrun_cancel"),
            path("<path:object_id>/resume/", wrap(require_POST(self.resume_view)), name="workflows_workflowrun_resume"),
            *super().get_urls(),
        ]

    def _run(self, request: HttpRequest, object_id: str) -> WorkflowRun:
        # The scoped queryset with the heavy columns: a foreign or sandbox run is a 404.
        try:
            run = (
                self.scope(request, WorkflowRun.objects.select_related("workspace", "workflow"))
                .filter(pk=unquote(object_id))
                .first()
            )
        except (ValueError, ValidationError):
            run = None
        if run is None:
            raise Http404
        return run

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        run = self._run(request, object_id)
        if request.method != "GET":
            raise PermissionDenied(gettext("Runs are read-only; cancel and resume have their own buttons."))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Run of %(workflow)s v%(version)s")
            % {"workflow": run.workflow_key, "version": run.workflow_version},
            "run": run,
            "inputs_text": json.dumps(run.inputs, indent=2, ensure_ascii=False),
            "definition_text": json.dumps(run.definition, indent=2, ensure_ascii=False),
            **self._live_context(request, run),
        }
        return TemplateResponse(request, "admin/workflows/workflowrun/run.html", context)

    def live_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The part of the run page that changes while it runs, polled by the page."""
        run = self._run(request, object_id)
        return TemplateResponse(request, "admin/workflows/workflowrun/_live.html", self._live_context(request, run))

    def _live_context(self, request: HttpRequest, run: WorkflowRun) -> dict:
        actor = self.actor(request)
        steps = list(step_runs_for_page(run))
        children = step_child_turns(run)
        for step in steps:
            step.child_turns = children.get(step.turn_id, [])
        may_run = actor.can(Verb.RUN, run.workspace)
        now = timezone.now()
        return {
            "run": run,
            "run_badge": status_badge(run.status),
            "steps": steps,
            "graph": definition_graph(
                run.definition,
                {step.name: step.status for step in steps},
                # The agents the steps ran (their ids are on the rows: no query).
                {
                    step.agent_key: reverse("admin:agents_agent_change", args=[step.agent_id])
                    for step in steps
                    if step.agent_id
                },
            ),
            "timeline": run_timeline(steps, now=now),
            "now": now,
            "duration": format_duration((run.finished_at or now) - run.started_at if run.started_at else None),
            "outputs_text": json.dumps(run.outputs, indent=2, ensure_ascii=False) if run.outputs else "",
            "can_cancel": may_run and not run.is_finished,
            "can_resume": may_run and run.status == RunStatus.FAILED,
            "poll_ms": POLL_MS,
        }

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._act(request, object_id, workflow_run_cancel, "cancelled", gettext("Run %(run)s cancelled."))

    def resume_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._act(request, object_id, workflow_run_resume, "resumed", gettext("Run %(run)s resumed."))

    def _act(self, request: HttpRequest, object_id: str, service: object, done: str, said: str) -> HttpResponse:
        run = self._run(request, object_id)
        actor = self.actor(request)
        # Re-checked here so a viewer gets a 403, not a message: the buttons were never shown.
        actor.require(Verb.RUN, run.workspace)
        try:
            run = service(run=run, actor=actor)
        except SERVICE_ERRORS as exc:
            messages.error(request, service_error_message(exc))
        else:
            self.log_change(request, run, done)
            messages.success(request, said % {"run": run.pk})

        return redirect("admin:workflows_workflowrun_change", run.pk)
