"""Shared skills: agents carry them by value, so editing one proposes the new text to
every agent that carries it.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import KEY_REGEX, MAX_TEXT, KeyField
from agents.api.versions import VersionSerializer
from agents.models import Skill
from agents.selectors import workspace_row_get, workspace_rows
from agents.services import skill_create, skill_update
from aihummer.api import AdminViewSet, InputSerializer


class SkillSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    body = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SkillCreateSerializer(InputSerializer):
    key = KeyField()
    title = serializers.CharField(max_length=200)
    body = serializers.CharField(max_length=MAX_TEXT, trim_whitespace=False)


class SkillUpdateSerializer(InputSerializer):
    title = serializers.CharField(max_length=200, required=False)
    body = serializers.CharField(max_length=MAX_TEXT, required=False, trim_whitespace=False)
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class SkillUpdatedSerializer(serializers.Serializer):
    skill = SkillSerializer()
    proposals = VersionSerializer(many=True, help_text="One proposal per agent that carries the skill.")


class SkillViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/skills`: shared skills. Agents carry them by value: editing one
    proposes the new text to every agent that carries it."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "created_at")
    serializer_class = SkillSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Skill, actor=self.actor, workspace=self.workspace)

    def get_skill(self) -> Skill:
        return workspace_row_get(
            Skill, actor=self.actor, workspace=self.workspace, noun="skill", key=self.kwargs["key"]
        )

    @extend_schema(request=SkillCreateSerializer, responses={201: SkillSerializer})
    def create(self, request: Request) -> Response:
        serializer = SkillCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        skill = skill_create(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        headers = {"Location": reverse("v1:skill-detail", args=[skill.key])}
        return Response(SkillSerializer(skill).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(SkillSerializer(self.get_skill()).data)

    @extend_schema(request=SkillUpdateSerializer, responses=SkillUpdatedSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Edit the shared skill; each agent carrying it gets a proposal."""
        serializer = SkillUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        proposals = skill_update(skill=self.get_skill(), actor=self.actor, **serializer.validated_data)
        data = {
            "skill": SkillSerializer(self.get_skill()).data,
            "proposals": VersionSerializer(proposals, many=True).data,
        }
        return Response(data)
