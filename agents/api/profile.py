"""What an agent is told, part by part: its G3 profile, its sections and its skills. Each
write proposes an edit of the live snapshot.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import KEY_REGEX, MAX_TEXT, AgentChildViewSet, KeyField, with_etag
from agents.api.versions import (
    PROPOSAL_QUERY,
    PROPOSAL_RESPONSES,
    ProposalInSerializer,
    ProposalQuerySerializer,
    proposal_args,
    proposal_response,
)
from agents.models import Skill
from agents.selectors import workspace_rows
from agents.services import edits, prompt_version_propose
from aihummer.api import InputSerializer
from aihummer.service_checks import require_live


class ProfileSerializer(InputSerializer):
    """The G3 identity fields and the first-run guidance."""

    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    role = serializers.CharField(max_length=500, required=False, allow_blank=True)
    persona = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)
    language = serializers.CharField(max_length=35, required=False, allow_blank=True)
    goals = serializers.ListField(child=serializers.CharField(max_length=500), max_length=20, required=False)
    system_prompt = serializers.CharField(
        max_length=MAX_TEXT,
        required=False,
        allow_null=True,
        trim_whitespace=False,
        help_text="A plain prompt replacing identity, sections and onboarding; null for none.",
    )
    onboarding = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)


def profile_of(snapshot: dict) -> dict:
    return {**snapshot["identity"], "system_prompt": snapshot["system_prompt"], "onboarding": snapshot["onboarding"]}


def profile_changes(profile: dict) -> dict:
    changes: dict = {}
    identity = {k: v for k, v in profile.items() if k in ("name", "role", "persona", "language", "goals")}
    if identity:
        changes["identity"] = identity
    for key in ("system_prompt", "onboarding"):
        if key in profile:
            changes[key] = profile[key]
    return changes


class SectionSerializer(InputSerializer):
    key = KeyField()
    title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    body = serializers.CharField(
        max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    enabled = serializers.BooleanField(required=False, default=True)
    position = serializers.IntegerField(read_only=True)


class AgentSkillSerializer(InputSerializer):
    key = KeyField()
    title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    body = serializers.CharField(
        max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    shared = serializers.BooleanField(read_only=True, help_text="Copied from a shared skill.")


class ProfileUpdateSerializer(ProposalInSerializer, ProfileSerializer):
    any_of_required = ("name", "role", "persona", "language", "goals", "system_prompt", "onboarding")


class AgentPartViewSet(AgentChildViewSet):
    """Base of the sections and skills: each write proposes one edit of the live snapshot."""

    def _propose(self, edit: edits.Edit, serializer: serializers.Serializer) -> Response:
        version = prompt_version_propose(
            agent=self.get_agent(), actor=self.actor, changes=edit, **proposal_args(serializer, self.request)
        )
        return proposal_response(version)


class AgentSectionViewSet(AgentPartViewSet):
    """`/v1/admin/agents/{agent_key}/sections`: named, ordered blocks of the prompt."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    pagination_class = None

    class CreateSerializer(ProposalInSerializer, SectionSerializer):
        class Meta:
            ref_name = "SectionCreate"

        position = serializers.IntegerField(
            min_value=0, max_value=10_000, required=False, help_text="Where to insert it; default: last."
        )

    class UpdateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "SectionUpdate"

        any_of_required = ("title", "body", "enabled")

        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        body = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)
        enabled = serializers.BooleanField(required=False)

    class ReorderSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "SectionReorder"

        keys = serializers.ListField(child=KeyField(), max_length=500, help_text="Every section key, in the new order.")

    @extend_schema(responses=SectionSerializer(many=True))
    def list(self, request: Request, agent_key: str) -> Response:
        """The live sections, in order."""
        agent = self.get_agent()
        return with_etag(Response(require_live(agent).snapshot["sections"]), agent)

    @extend_schema(request=CreateSerializer, responses=PROPOSAL_RESPONSES)
    def create(self, request: Request, agent_key: str) -> Response:
        """Propose a new section (at `position`, or last)."""
        serializer = self.CreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        edit = edits.section_add(
            key=data["key"],
            title=data["title"],
            body=data["body"],
            enabled=data["enabled"],
            position=data.get("position"),
        )
        return self._propose(edit, serializer)

    @extend_schema(request=UpdateSerializer, responses=PROPOSAL_RESPONSES)
    def partial_update(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose a change to one section's title, body or enabled flag."""
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = {
            f: serializer.validated_data[f] for f in ("title", "body", "enabled") if f in serializer.validated_data
        }
        return self._propose(edits.section_update(key=key, **fields), serializer)

    @extend_schema(parameters=PROPOSAL_QUERY, responses=PROPOSAL_RESPONSES)
    def destroy(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose the agent without this section."""
        serializer = ProposalQuerySerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.section_remove(key=key), serializer)

    @extend_schema(request=ReorderSerializer, responses=PROPOSAL_RESPONSES)
    @action(detail=False, methods=["post"])
    def reorder(self, request: Request, agent_key: str) -> Response:
        """Propose a new order: every section key, once."""
        serializer = self.ReorderSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.sections_reorder(keys=serializer.validated_data["keys"]), serializer)


class AgentSkillViewSet(AgentPartViewSet):
    """`/v1/admin/agents/{agent_key}/skills`: shared skills attached by value, and the
    agent's own."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    pagination_class = None

    class CreateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "AgentSkillCreate"

        one_of_required = ("shared_skill", "key")

        shared_skill = KeyField(required=False, help_text="Attach this shared skill (copied by value).")
        key = KeyField(required=False, help_text="Or add an own skill with this key, title and body.")
        title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        body = serializers.CharField(
            max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
        )

    class UpdateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "AgentSkillUpdate"

        any_of_required = ("title", "body")

        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        body = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)

    @extend_schema(responses=AgentSkillSerializer(many=True))
    def list(self, request: Request, agent_key: str) -> Response:
        """The live skills, in order."""
        agent = self.get_agent()
        return with_etag(Response(require_live(agent).snapshot["skills"]), agent)

    @extend_schema(request=CreateSerializer, responses=PROPOSAL_RESPONSES)
    def create(self, request: Request, agent_key: str) -> Response:
        """Propose attaching a shared skill, or adding an own skill."""
        serializer = self.CreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "shared_skill" in data:
            skill = workspace_rows(Skill, actor=self.actor, workspace=self.workspace).filter(key=data["shared_skill"])
            if not skill.exists():
                raise ValidationError({"shared_skill": [f"Unknown shared skill '{data['shared_skill']}'."]})
            edit = edits.skill_attach(skill=skill.get())
        else:
            edit = edits.own_skill_add(key=data["key"], title=data["title"], body=data["body"])
        return self._propose(edit, serializer)

    @extend_schema(request=UpdateSerializer, responses=PROPOSAL_RESPONSES)
    def partial_update(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose new text for one of the agent's own skills."""
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = {f: serializer.validated_data[f] for f in ("title", "body") if f in serializer.validated_data}
        return self._propose(edits.own_skill_update(key=key, **fields), serializer)

    @extend_schema(parameters=PROPOSAL_QUERY, responses=PROPOSAL_RESPONSES)
    def destroy(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose the agent without this skill (detach)."""
        serializer = ProposalQuerySerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.skill_detach(key=key), serializer)
