"""What the agents' resources share: path patterns, text bounds, fields, the `ETag` of
an agent's live version, and the base of the resources under one agent.
"""

from __future__ import annotations

import math

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from agents.policy import runtime_policy_json_schema, runtime_policy_schema_errors
from agents.selectors import agent_get_by_key
from agents.snapshot import KEY_PATTERN
from aihummer.api import AdminViewSet, JsonObjectField
from aihummer.openapi import openapi_schema_of

KEY_REGEX = "[a-z0-9_-]{1,50}"
# ASCII digits only: `\d` also matches "١٢" (Arabic-Indic), which int() reads as 12.
NUMBER_REGEX = "[0-9]{1,9}"
ID_REGEX = "[0-9]{1,18}"
MAX_TEXT = 20_000


class KeyField(serializers.RegexField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(KEY_PATTERN, max_length=50, **kwargs)


class FiniteFloatField(serializers.FloatField):
    def to_internal_value(self, data: object) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Give a finite number.")
        return value


RUNTIME_POLICY_SCHEMA = openapi_schema_of(runtime_policy_json_schema())


@extend_schema_field(RUNTIME_POLICY_SCHEMA)
class RuntimePolicyField(JsonObjectField):
    """A runtime policy, held to its published JSON Schema here (a 400 naming each JSON
    path); the rules across its fields are the service's (a 422)."""

    def to_internal_value(self, data: object) -> dict:
        policy = super().to_internal_value(data)
        if problems := runtime_policy_schema_errors(policy):
            # Paths from the body's root, as the service's are (`$.runtime_policy.children…`).
            root = f"$.{self.field_name}" if self.field_name else "$"
            raise serializers.ValidationError([problem.replace("$", root, 1) for problem in problems])
        return policy


def username(user: object) -> str | None:
    return user.get_username() if user is not None else None


def with_etag(response: Response, agent: object) -> Response:
    if agent.live_number is not None:  # none while version 1 waits for review
        response["ETag"] = f'"{agent.live_number}"'
    return response


class ForceSerializer(serializers.Serializer):
    force = serializers.BooleanField(required=False, default=False)


class AgentChildViewSet(AdminViewSet):
    """Base of the resources under one agent: `/v1/admin/agents/{agent_key}/...`."""

    if_match_actions = frozenset({"create", "partial_update", "destroy", "reorder", "restore"})

    def get_agent(self) -> object:
        return agent_get_by_key(actor=self.actor, workspace=self.workspace, key=self.kwargs["agent_key"])
