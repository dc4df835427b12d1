"""The agent's desk, added to the agent admin: propose a change, its versions, restore
an old one, clone it into a new agent.

Every view re-checks rights through the actor and calls the same services as every
other surface; these views only parse forms and show results.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext

from agents.admin.forms import (
    CloneForm,
    ProposeForm,
    RestoreForm,
    SectionFormSet,
    SkillFormSet,
    formset_initial,
)
from agents.admin.review import status_badge
from agents.models import PromptVersion
from agents.selectors import agent_get, agent_versions
from agents.services import (
    agent_clone,
    prompt_version_propose,
    prompt_version_restore,
)
from aihummer.actors import Verb
from aihummer.admin_site import SERVICE_ERRORS, add_service_errors, service_error_message

# Versions per page of an agent's history (an agent edited daily has thousands).
VERSIONS_PER_PAGE = 50


# --- on each agent: propose, versions, restore, clone ---------------------------------
class AgentDeskMixin:
    """Views added to the agent admin; `self` is an AgentAdmin."""

    change_form_template = "admin/agents/agent/change_form.html"

    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/propose/", wrap(self.propose_view), name="agents_agent_propose"),
            path("<path:object_id>/versions/", wrap(self.versions_view), name="agents_agent_versions"),
            path(
                "<path:object_id>/versions/<int:number>/restore/", wrap(self.restore_view), name="agents_agent_restore"
            ),
            path("<path:object_id>/versions/<int:number>/clone/", wrap(self.clone_view), name="agents_agent_clone"),
            *super().get_urls(),
        ]

    def _agent(self, request: HttpRequest, object_id: str):
        return self.found_or_404(request, object_id, agent_get)

    def _context(self, request: HttpRequest, agent: object, title: str, **extra: object) -> dict:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            "agent": agent,
            **extra,
        }

    def propose_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        actor = self.actor(request)
        agent = self._agent(request, object_id)
        actor.require(Verb.PROPOSE, agent.workspace)
        if agent.live_version is None:
            messages.error(
                request,
                gettext("Agent '%(agent)s' has no approved version yet: review its version 1 first.")
                % {"agent": agent.key},
            )
            return redirect("admin:agents_agent_versions", agent.pk)
        snapshot = agent.live_version.snapshot
        can_publish = actor.may_publish(agent.workspace)
        form_kwargs = {"current_tools": snapshot["allowed_tool_names"], "can_publish": can_publish}
        if request.method == "POST":
            form = ProposeForm(request.POST, **form_kwargs)
            sections = SectionFormSet(request.POST, prefix="sections")
            skills = SkillFormSet(request.POST, prefix="skills")
            if form.is_valid() and sections.is_valid() and skills.is_valid():
                response = self._propose(request, actor, agent, form, sections, skills)
                if response is not None:
                    return response
        else:
            form = ProposeForm(initial=ProposeForm.initial_from(snapshot, agent.live_version.number), **form_kwargs)
            sections = SectionFormSet(initial=formset_initial(snapshot["sections"], ordered=True), prefix="sections")
            skills = SkillFormSet(initial=formset_initial(snapshot["skills"], ordered=False), prefix="skills")
        context = self._context(
            request,
            agent,
            gettext("Propose a change to %(agent)s") % {"agent": agent.key},
            form=form,
            sections=sections,
            skills=skills,
        )
        return TemplateResponse(request, "admin/agents/agent/propose.html", context)

    def _propose(self, request, actor, agent, form, sections, skills) -> HttpResponse | None:
        mode = "live" if form.cleaned_data.get("apply_now") else "pending"
        try:
            version = prompt_version_propose(
                agent=agent,
                changes=form.changes(sections, skills),
                actor=actor,
                reason=form.cleaned_data["reason"],
                mode=mode,
                expected_live=form.cleaned_data["expected_live"],
            )
        except SERVICE_ERRORS as exc:
            add_service_errors(form, exc)
            return None
        self.log_change(request, agent, f"proposed v{version.number} ({version.status})")
        if version.status == PromptVersion.Status.APPROVED:
            messages.success(
                request,
                gettext("Applied: %(agent)s v%(number)s is live.") % {"agent": agent.key, "number": version.number},
            )
            return redirect("admin:agents_agent_change", agent.pk)
        messages.success(
            request,
            gettext("Proposed as %(agent)s v%(number)s; it waits for a reviewer.")
            % {"agent": agent.key, "number": version.number},
        )
        return redirect("admin:agents_promptversion_review", version.pk)

    def versions_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        actor = self.actor(request)
        agent = self._agent(request, object_id)
        page = Paginator(agent_versions(agent=agent), VERSIONS_PER_PAGE).get_page(request.GET.get("page"))
        for version in page.object_list:
            version.badge = status_badge(version.status)
        context = self._context(
            request,
            agent,
            gettext("Versions of %(workflow)s") % {"workflow": agent.key},
            page=page,
            can_propose=actor.can(Verb.PROPOSE, agent.workspace),
            can_publish=actor.may_publish(agent.workspace),
            can_clone=actor.can(Verb.PUBLISH, agent.workspace),
        )
        return TemplateResponse(request, "admin/agents/agent/versions.html", context)

    def _version(self, agent: object, number: int) -> PromptVersion:
        version = PromptVersion.objects.filter(agent=agent, number=number).first()
        if version is None:
            raise Http404
        return version

    def restore_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        agent = self._agent(request, object_id)
        if request.method != "POST":
            return redirect("admin:agents_agent_versions", agent.pk)
        version = self._version(agent, number)
        form = RestoreForm(request.POST)
        if not form.is_valid():
            messages.error(request, gettext("The restore form was tampered with; open the versions page again."))
            return redirect("admin:agents_agent_versions", agent.pk)
        try:
            restored = prompt_version_restore(
                version=version,
                actor=self.actor(request),
                reason=form.cleaned_data["reason"],
                mode="live" if form.cleaned_data["apply_now"] else "pending",
                expected_live=form.cleaned_data["expected_live"],
            )
        except SERVICE_ERRORS as exc:
            messages.error(request, service_error_message(exc))
            return redirect("admin:agents_agent_versions", agent.pk)
        self.log_change(request, agent, f"restore of v{number} as v{restored.number} ({restored.status})")
        messages.success(
            request,
            gettext("v%(number)s restored as v%(new)s (%(status)s).")
            % {"number": number, "new": restored.number, "status": restored.get_status_display().lower()},
        )
        return redirect("admin:agents_agent_versions", agent.pk)

    def clone_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        agent = self._agent(request, object_id)
        version = self._version(agent, number)
        form = CloneForm(request.POST or None, initial={"key": f"{agent.key}-copy", "name": f"{agent.name} (copy)"})
        if request.method == "POST" and form.is_valid():
            try:
                clone = agent_clone(version=version, actor=self.actor(request), **form.cleaned_data)
            except SERVICE_ERRORS as exc:
                add_service_errors(form, exc)
            else:
                self.log_addition(request, clone, f"clone of {agent.key} v{number}")
                messages.success(
                    request,
                    gettext("Cloned %(agent)s v%(number)s as %(clone)s.")
                    % {"agent": agent.key, "number": number, "clone": clone.key},
                )
                return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[clone.pk]))
        title = gettext("Clone %(agent)s v%(number)s") % {"agent": agent.key, "number": number}
        context = self._context(request, agent, title, form=form, version=version)

        return TemplateResponse(request, "admin/agents/agent/clone.html", context)
