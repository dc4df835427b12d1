"""Admin forms: the review desk's (decide, try, propose, clone, bulk decisions) and the
model forms of the credential, preset, skill and agent admins (each saves through its service)."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError
from django.utils.decorators import method_decorator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables

from agents.evidence import ASSERTION_FIELDS
from agents.models import (
    Agent,
    AgentTestCase,
    AgentToolSettings,
    Credential,
    Preset,
    PromptVersion,
    Skill,
    WorkspaceToolPolicy,
)
from agents.policy import validate_runtime_policy
from agents.services import (
    PRESET_FIELDS,
    agent_change,
    agent_create,
    agent_test_case_create,
    agent_test_case_update,
    credential_create,
    credential_update,
    preset_create,
    preset_update,
    skill_create,
    skill_update,
)
from agents.services.tool_settings import (
    AGENT_TOOL_FIELDS,
    POLICY_FIELDS,
    agent_tool_settings_change,
    workspace_tool_policy_update,
)
from aihummer.admin_site import ServiceModelForm
from aihummer.jsonsafe import json_loads


class DecisionForm(forms.Form):
    note = forms.CharField(
        label=_("Note"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Optional when approving, required to reject."),
    )
    confirm_stale = forms.BooleanField(
        required=False, label=_("I understand that approving reverts the versions listed above.")
    )
    # The live version number the page showed: a confirmation holds for it only.
    live_number = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    live_at = forms.DateTimeField(
        required=False,
        label=_("Go live at (UTC)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text=_("Empty: as soon as every approval is in (and the tier's wait time passed)."),
    )


def expected_live_field() -> forms.IntegerField:
    """The live version number the page showed, posted back with the change: if another
    version went live since, the service refuses instead of silently reverting it."""
    return forms.IntegerField(
        label=_("Expected live"), required=False, min_value=1, max_value=10**9, widget=forms.HiddenInput
    )


class RestoreForm(forms.Form):
    reason = forms.CharField(label=_("Reason"), required=False, max_length=2000)
    apply_now = forms.BooleanField(label=_("Apply now"), required=False)
    expected_live = expected_live_field()


class DeleteForm(forms.Form):
    expected_live = expected_live_field()


class TryItForm(forms.Form):
    message = forms.CharField(label=_("Message"), widget=forms.Textarea(attrs={"rows": 3}), max_length=20_000)


class BulkDecisionForm(forms.Form):
    note = forms.CharField(label=_("Note"), required=False, widget=forms.Textarea(attrs={"rows": 3}))
    confirm_stale = forms.BooleanField(
        required=False, label=_("Also approve stale proposals (reverting later versions).")
    )


class CloneForm(forms.Form):
    key = forms.RegexField(
        label=_("Key"),
        regex=r"^[a-z0-9_-]{1,50}$",
        max_length=50,
        help_text=_("Lowercase letters, digits, _ and -."),
    )
    name = forms.CharField(label=_("Name"), max_length=200)


class SectionForm(forms.Form):
    key = forms.RegexField(label=_("Key"), regex=r"^[a-z0-9_-]{1,50}$", max_length=50)
    title = forms.CharField(label=_("Title"), max_length=200, required=False)
    body = forms.CharField(
        label=_("Body"), widget=forms.Textarea(attrs={"rows": 4, "cols": 80}), required=False, strip=False
    )
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)


class SkillForm(forms.Form):
    key = forms.RegexField(label=_("Key"), regex=r"^[a-z0-9_-]{1,50}$", max_length=50)
    title = forms.CharField(label=_("Title"), max_length=200, required=False)
    body = forms.CharField(
        label=_("Body"), widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), required=False, strip=False
    )
    shared = forms.BooleanField(label=_("Shared"), required=False, help_text=_("Copied from a shared skill."))


SectionFormSet = forms.formset_factory(SectionForm, extra=1, can_order=True, can_delete=True)
SkillFormSet = forms.formset_factory(SkillForm, extra=1, can_delete=True)


class ProposeForm(forms.Form):
    """Everything an agent is told, in one form; becomes the `changes` of a proposal."""

    identity_name = forms.CharField(label=_("name (identity)"), max_length=200, required=False)
    role = forms.CharField(label=_("Role"), max_length=500, required=False)
    language = forms.CharField(label=_("Language"), max_length=35, required=False)
    goals = forms.CharField(
        label=_("Goals"), widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text=_("One goal per line.")
    )
    persona = forms.CharField(label=_("Persona"), widget=forms.Textarea(attrs={"rows": 4}), required=False, strip=False)
    system_prompt = forms.CharField(
        label=_("System prompt"),
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        strip=False,
        help_text=_("A plain prompt that replaces identity, sections and onboarding (skills are kept). Empty: none."),
    )
    onboarding = forms.CharField(
        label=_("Onboarding"), widget=forms.Textarea(attrs={"rows": 3}), required=False, strip=False
    )
    allowed_tool_names = forms.MultipleChoiceField(
        label=_("tools"), required=False, widget=forms.CheckboxSelectMultiple
    )
    runtime_policy = forms.CharField(
        label=_("Runtime policy"),
        widget=forms.Textarea(attrs={"rows": 10, "style": "font-family:monospace"}),
        help_text=_(
            "JSON; {} resets to the defaults. session acts on conversations (scope, idle reset, the "
            "default list); memory_flush and interaction are stored and validated only, for now."
        ),
    )
    reason = forms.CharField(
        label=_("Reason"),
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=2000,
        help_text=_("Why this change?"),
    )
    apply_now = forms.BooleanField(
        required=False,
        label=_("Apply at once (publish right): no review."),
        help_text=_("Leave unticked to propose it."),
    )
    expected_live = expected_live_field()

    def __init__(self, *args: object, current_tools: list[str] = (), can_publish: bool = False, **kwargs: object):
        # Here, not at the top: every process loads the admin, few need the agent runtime.
        from agents.runtime.tools import REGISTRY

        super().__init__(*args, **kwargs)
        names = sorted(set(REGISTRY) | set(current_tools))
        self.fields["allowed_tool_names"].choices = [(name, name) for name in names]
        if not can_publish:
            del self.fields["apply_now"]

    def clean_runtime_policy(self) -> dict:
        try:
            data = json_loads(self.cleaned_data["runtime_policy"] or "{}", field="runtime_policy")
            return validate_runtime_policy(data)
        except ValidationError as exc:
            raise ValidationError(exc.messages) from exc

    @staticmethod
    def initial_from(snapshot: dict, live_number: int) -> dict:
        identity = snapshot["identity"]
        return {
            "expected_live": live_number,
            "identity_name": identity["name"],
            "role": identity["role"],
            "language": identity["language"],
            "goals": "\n".join(identity["goals"]),
            "persona": identity["persona"],
            "system_prompt": snapshot["system_prompt"] or "",
            "onboarding": snapshot["onboarding"],
            "allowed_tool_names": snapshot["allowed_tool_names"],
            "runtime_policy": json.dumps(snapshot["runtime_policy"], indent=2),
        }

    def changes(self, sections: forms.BaseFormSet, skills: forms.BaseFormSet) -> dict:
        data = self.cleaned_data
        return {
            "identity": {
                "name": data["identity_name"],
                "role": data["role"],
                "language": data["language"],
                "persona": data["persona"],
                "goals": [line.strip() for line in data["goals"].splitlines() if line.strip()],
            },
            "system_prompt": data["system_prompt"] or None,
            "onboarding": data["onboarding"],
            "allowed_tool_names": data["allowed_tool_names"],
            "runtime_policy": data["runtime_policy"],
            "sections": [
                {"key": f["key"], "title": f["title"], "body": f["body"], "enabled": f["enabled"]}
                for f in _kept_in_order(sections)
            ],
            "skills": [
                {"key": f["key"], "title": f["title"], "body": f["body"], "shared": f["shared"]}
                for f in _kept_in_order(skills)
            ],
        }


def _kept_in_order(formset: forms.BaseFormSet) -> list[dict]:
    """The formset's rows as the person left them: ordered, without deleted or blank ones."""
    if formset.can_order:
        kept = formset.ordered_forms  # excludes deleted and untouched extra forms
    else:
        kept = [f for i, f in enumerate(formset.forms) if i < formset.initial_form_count() or f.has_changed()]
    return [f.cleaned_data for f in kept if f.cleaned_data and not f.cleaned_data.get("DELETE")]


def formset_initial(items: list[dict], *, ordered: bool) -> list[dict]:
    return [{**item, "ORDER": index + 1} if ordered else dict(item) for index, item in enumerate(items)]


# --- model forms of the admin: each saves through its service ----------------------
class HostListField(forms.CharField):
    """Host names one per line (or comma-separated), as the list the model stores."""

    widget = forms.Textarea(attrs={"rows": 2, "cols": 60})

    def prepare_value(self, value: object) -> object:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: object) -> list[str]:
        text = super().to_python(value)
        return [host.strip() for host in text.replace(",", "\n").splitlines() if host.strip()]


class CredentialForm(ServiceModelForm):
    secret = forms.CharField(
        label=_("Secret"),
        widget=forms.PasswordInput(render_value=False),
        required=False,
        strip=False,
        help_text=_("Write-only: stored encrypted, never shown again. Leave empty to keep the current secret."),
    )
    allowed_hosts = HostListField(
        required=False,
        label=_("Allowed hosts"),
        help_text=_(
            "Hosts this secret may be sent to, one per line (api.openai.com, *.openai.azure.com); empty: any host."
        ),
    )

    class Meta:
        model = Credential
        fields = ["workspace", "key", "name", "allowed_hosts"]

    @method_decorator(sensitive_variables("data"))
    def call_service(self) -> Credential:
        data = self.cleaned_data
        fields = {"name": data["name"], "allowed_hosts": data["allowed_hosts"]}  # the secret stays in `data`
        if self.instance.pk is None:
            return credential_create(
                workspace=data["workspace"], key=data["key"], secret=data["secret"], actor=self.actor, **fields
            )
        return credential_update(credential=self.instance, secret=data["secret"], actor=self.actor, **fields)


class PresetForm(ServiceModelForm):
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label=Preset._meta.get_field("base_url").verbose_name,
        help_text=Preset._meta.get_field("base_url").help_text,
    )

    class Meta:
        model = Preset
        fields = ["workspace", "key", *PRESET_FIELDS]

    def call_service(self) -> Preset:
        data = self.cleaned_data
        if self.instance.pk is None:
            fields = {field: data[field] for field in PRESET_FIELDS if field in data}
            return preset_create(workspace=data["workspace"], key=data["key"], actor=self.actor, **fields)
        return preset_update(preset=self.instance, actor=self.actor, **self.changed_values(PRESET_FIELDS))


class SkillForm(ServiceModelForm):
    class Meta:
        model = Skill
        fields = ["workspace", "key", "title", "body"]

    def call_service(self) -> Skill:
        data = self.cleaned_data
        if self.instance.pk is None:
            return skill_create(
                workspace=data["workspace"], key=data["key"], title=data["title"], body=data["body"], actor=self.actor
            )
        # Agents carry skills by value: the edit reaches them as one proposal each.
        self.proposals = skill_update(skill=self.instance, title=data["title"], body=data["body"], actor=self.actor)
        return Skill.objects.get(pk=self.instance.pk)


# The agent page's fields: AGENT_FIELDS written at once, the preset proposed.
AGENT_FORM_FIELDS = ("name", "description", "preset", "is_active")


class AgentForm(ServiceModelForm):
    expected_live = expected_live_field()
    proposal: PromptVersion | None = None  # a preset change's version, for the page's message

    class Meta:
        model = Agent
        fields = ["workspace", "key", *AGENT_FORM_FIELDS]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["expected_live"].initial = self.instance.live_number

    def call_service(self) -> Agent:
        data = self.cleaned_data
        if self.instance.pk is None:
            return agent_create(
                workspace=data["workspace"],
                key=data["key"],
                name=data["name"],
                description=data["description"],
                preset=data["preset"],
                actor=self.actor,
            )
        fields = self.changed_values(AGENT_FORM_FIELDS)
        changes = {}
        if "preset" in fields:  # which model answers is part of a version: proposed
            preset = fields.pop("preset")
            changes["preset"] = preset.key if preset is not None else None
        if not fields and not changes:
            return self.instance
        change = agent_change(
            agent=self.instance,
            actor=self.actor,
            fields=fields,
            changes=changes,
            reason="preset chosen on the agent's page",
            expected_live=self.cleaned_data.get("expected_live"),
        )
        self.proposal = change.version
        return change.agent


# --- test cases (inline on the agent page) ---------------------------------------------------
class LinesField(forms.CharField):
    """A list of strings edited as lines of text (blank lines ignored)."""

    widget = forms.Textarea(attrs={"rows": 2, "cols": 40})

    def prepare_value(self, value: object) -> object:
        return "\n".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value: object) -> list[str]:
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class AgentTestCaseForm(ServiceModelForm):
    contains = LinesField(
        label=_("Contains"), required=False, help_text=_("One per line: the answer must contain each.")
    )
    not_contains = LinesField(
        label=_("Not contains"), required=False, help_text=_("One per line: the answer must contain none.")
    )

    class Meta:
        model = AgentTestCase
        fields = ["name", "is_active", "message", "input", *ASSERTION_FIELDS]
        widgets = {"message": forms.Textarea(attrs={"rows": 2, "cols": 60})}

    def call_service(self) -> AgentTestCase:
        data = self.cleaned_data
        if data.get("DELETE") or (self.instance.pk and not self.has_changed()):
            return self.instance  # deleted by the formset, or nothing to write
        fields = {
            "name": data["name"],
            "message": data["message"],
            "input": data["input"],
            "is_active": data["is_active"],
        }
        assertions = {field: data[field] for field in ASSERTION_FIELDS}
        if self.instance.pk is None:
            return agent_test_case_create(agent=self.instance.agent, actor=self.actor, assertions=assertions, **fields)
        return agent_test_case_update(case=self.instance, actor=self.actor, assertions=assertions, **fields)


# --- tool settings (issue 30) ---------------------------------------------------------------
class NameListField(HostListField):
    """Tool names one per line (or comma-separated)."""


class AgentToolSettingsForm(ServiceModelForm):
    """An agent's side-effect tools. The SMTP password is a credential of the agent's
    workspace (the picker offers no other), or typed here: write-only, it goes to the
    vault and is never shown again."""

    extra_approval_tools = NameListField(
        required=False,
        label=_("Extra approval tools"),
        help_text=_("Tools this agent adds to the workspace's approval list, one per line."),
    )
    http_allowed_hosts = HostListField(
        required=False,
        label=_("HTTP allowed hosts"),
        help_text=_("Hosts http_request may call, one per line (api.example.com, *.example.com); empty: none."),
    )
    smtp_password_secret = forms.CharField(
        label=_("SMTP password"),
        widget=forms.PasswordInput(render_value=False),
        required=False,
        strip=False,
        help_text=_(
            "Write-only: stored in the vault (the credential chosen above, else a new one named smtp-<agent>), "
            "never shown again. Leave empty to keep the current one."
        ),
    )

    class Meta:
        model = AgentToolSettings
        fields = ["agent", *AGENT_TOOL_FIELDS]
        labels = {"smtp_password": _("SMTP password credential")}

    def clean(self) -> dict:
        data = super().clean()
        agent = data.get("agent") or (self.instance.agent if self.instance.agent_id else None)
        credential = data.get("smtp_password")
        if agent is not None and credential is not None and credential.workspace_id != agent.workspace_id:
            self.add_error("smtp_password", _("Choose a credential of the agent's workspace."))
        return data

    @method_decorator(sensitive_variables("data", "secret"))
    def call_service(self) -> AgentToolSettings:
        data = self.cleaned_data
        agent = data.get("agent") or self.instance.agent
        fields = {field: data[field] for field in AGENT_TOOL_FIELDS if field in data}
        secret = data.get("smtp_password_secret") or None  # to the credential chosen, else smtp-<agent>
        return agent_tool_settings_change(agent=agent, actor=self.actor, smtp_password_secret=secret, **fields)


class WorkspaceToolPolicyForm(ServiceModelForm):
    approval_tools = NameListField(
        required=False,
        label=_("Approval tools"),
        help_text=_("Tools whose every call waits for a person's approval, one per line."),
    )

    class Meta:
        model = WorkspaceToolPolicy
        fields = ["workspace", *POLICY_FIELDS]

    def call_service(self) -> WorkspaceToolPolicy:
        data = self.cleaned_data
        workspace = data.get("workspace") or self.instance.workspace
        fields = {field: data[field] for field in POLICY_FIELDS if field in data}
        return workspace_tool_policy_update(workspace=workspace, actor=self.actor, **fields)
