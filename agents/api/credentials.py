"""The credential vault: secrets go in and never come out."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import KEY_REGEX, KeyField
from agents.destinations import MAX_HOST_PATTERNS
from agents.models import Credential
from agents.selectors import workspace_row_get, workspace_rows
from agents.services import credential_create, credential_delete, credential_update
from aihummer.api import AdminViewSet, InputSerializer

HOSTS_HELP = "Hosts the secret may be sent to (api.openai.com, *.openai.azure.com); empty: any host."


def hosts_field(**kwargs: object) -> serializers.ListField:
    # Each host is checked by the model's validator; the bounds here shape the schema.
    return serializers.ListField(
        child=serializers.CharField(max_length=253), max_length=MAX_HOST_PATTERNS, help_text=HOSTS_HELP, **kwargs
    )


class CredentialSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    secret = serializers.SerializerMethodField(help_text='Always "set": secrets are write-only.')
    fingerprint = serializers.CharField(help_text="A short hash of the secret, to tell two apart.")
    allowed_hosts = serializers.ListField(child=serializers.CharField(), help_text=HOSTS_HELP)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field({"type": "string", "enum": ["set"]})
    def get_secret(self, credential: Credential) -> str:
        return "set"


class CredentialCreateSerializer(InputSerializer):
    key = KeyField()
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    secret = serializers.CharField(max_length=10_000, write_only=True, style={"input_type": "password"})
    allowed_hosts = hosts_field(required=False, default=list)


class CredentialUpdateSerializer(InputSerializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    secret = serializers.CharField(max_length=10_000, required=False, write_only=True)
    allowed_hosts = hosts_field(required=False)


class CredentialViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/credentials`: the vault. Secrets go in and never come out (admins only)."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "created_at")
    serializer_class = CredentialSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Credential, actor=self.actor, workspace=self.workspace)

    def get_credential(self) -> Credential:
        return workspace_row_get(
            Credential, actor=self.actor, workspace=self.workspace, noun="credential", key=self.kwargs["key"]
        )

    @extend_schema(request=CredentialCreateSerializer, responses={201: CredentialSerializer})
    def create(self, request: Request) -> Response:
        serializer = CredentialCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        credential = credential_create(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        headers = {"Location": reverse("v1:credential-detail", args=[credential.key])}
        return Response(CredentialSerializer(credential).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(CredentialSerializer(self.get_credential()).data)

    @extend_schema(request=CredentialUpdateSerializer, responses=CredentialSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Rename, replace the secret (the old one is gone for good), or change the hosts
        it may be sent to."""
        serializer = CredentialUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        credential = credential_update(
            credential=self.get_credential(),
            actor=self.actor,
            name=data.get("name"),
            secret=data.get("secret", ""),
            allowed_hosts=data.get("allowed_hosts"),
        )
        return Response(CredentialSerializer(credential).data)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, key: str) -> Response:
        """Delete an unused credential (refused while presets use it)."""
        credential_delete(credential=self.get_credential(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
